"""Small programs composed from the API's tools, with the question's phrases as arguments.

Local search (`policies.mutation`) edits what the policy sampled, so it reaches only
programs a few edits from one the policy already writes. A question that needs two tools
joined ("Are there more red circles than blue squares?" needs two counts compared) is out
of its reach when the policy writes one-tool programs. This module enumerates, bottom up
and by type (as typed enumerative synthesis does), every program of at most `calls` tool
calls whose string arguments are phrases of the question:

- the *tools* and their types come from the API listing the prompt documents
  (`def exists(self, object_name: str) -> bool`), so another API gets its own programs;
- builtins join them without a call: `len` of a list, `>`/`<`/`==` of two counts or of a
  count and a number the question names ("There is exactly one X." needs `len(find(x)) == 1`),
  `and`/`or` of two truths, and a documented `(bool) -> str` function or `str()` turns the
  value into the answer;
- with `attributes`, a list of patches (`find(..) -> list["ImagePatch"]`) gives its first
  patch, whose documented attributes (`documented_attributes`: the names the class's
  comments list, such as `horizontal_center`) compare between two phrases' patches with `<` and `>`:
  "Is the red circle to the left of the blue square?" needs
  `find(a)[0].horizontal_center < find(b)[0].horizontal_center`;
- with `attributes` and three calls, the patches of one phrase's list that stand in such a
  relation to another phrase's first patch give their first one, which a `(str) -> str`
  method asks about: "What color is the small object to the left of the red circle?" needs
  `[p for p in find(a) if p.horizontal_center < find(b)[0].horizontal_center][0].simple_query(q)`;
- the *phrases* are the question's runs of content words (`phrases`): the words between
  English function words and numbers, which in a visual question are the object descriptions.

Nothing here reads an answer: a composed program earns its place by the run's reward
(train/search.py). Leaf module: it imports nothing from the project.
"""

from __future__ import annotations

import ast
import functools
import io
import itertools
import json
import keyword
import re
import tokenize

# Closed-class English words (articles, auxiliaries, prepositions, relations of place, quantifiers,
# question words, conjunctions) and the words questions use to ask about images: what is
# left between them names things or their attributes.
FUNCTION_WORDS = frozenset("""
a an the this that these those there here it its is are was were be been do does did
has have had of in on at to from by with for into onto than as both either neither nor
left right above below under over behind front near next beside top bottom between
and or not no any all some each every more most fewer less least same number numbers
what which who whom whose how many much where when why whether if
image picture photo photograph scene
""".split())

_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)
# Cardinal numbers are closed-class as well: "There is exactly one red circle." has the phrase
# "red circle", and the number stays in the template, so a form comparing a count with it
# applies to the questions that name the same number.
COUNT_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


def number(word: str) -> int | None:
    """The count a word names ("two", "12"), or None."""
    if word.isascii() and word.isdigit() and len(word) <= 3:
        return int(word)
    return COUNT_WORDS.get(word.lower())


def numbers(question: str) -> list[int]:
    """The counts the question names, in order, without repeats."""
    return list(dict.fromkeys(n for m in _WORD.finditer(question) if (n := number(m.group())) is not None))


def _closed(word: str) -> bool:
    return word.lower() in FUNCTION_WORDS or number(word) is not None


def phrases(question: str, limit: int = 4) -> list[str]:
    """The question's maximal runs of content words, as they are written in it, in
    order, without repeats: "Are there more red circles than blue squares?" gives
    ["red circles", "blue squares"]. At most `limit` (the first ones)."""
    return template(question)[1][:limit]


def template(question: str) -> tuple[str, list[str]]:
    """The question with each of its phrases (all of them, `phrases` without a limit)
    replaced by `marker(k)`, k its index in the phrase list; and that list. Two questions
    with the same template ask the same thing of different objects."""
    words, spans = [], []
    start = end = None
    for m in _WORD.finditer(question):
        # A function word, or anything but spaces between two words (a comma, a quote), ends a run.
        if start is not None and (_closed(m.group()) or question[end:m.start()].strip(" ")):
            spans.append((start, end))
            start = None
        if not _closed(m.group()):
            start = m.start() if start is None else start
            end = m.end()
    if start is not None:
        spans.append((start, end))
    out, last = [], 0
    for a, b in spans:
        word = question[a:b]
        if word not in words:
            words.append(word)
        out += [question[last:a], marker(words.index(word))]
        last = b
    return "".join(out + [question[last:]]), words


def marker(k: int) -> str:
    return f"__vprl_phrase_{k}__"


def _kind(annotation) -> str | None:
    """'str', 'bool', 'int', 'list' or None for a parameter or return annotation."""
    if annotation is None:
        return None
    text = ast.unparse(annotation).strip("'\"")
    base = text.split("[")[0].strip()
    if base in ("list", "List"):
        return "list"
    return base if base in ("str", "bool", "int") else None


# Cached: search composes for every searched question with the same listing, and the
# results are only read.
@functools.lru_cache(maxsize=16)
def tools(api: str) -> tuple[dict[str, tuple], dict[str, tuple]]:
    """The API's typed callables: (methods, functions), each name -> (parameter kinds,
    return kind); only those whose every parameter and return are typed. Methods are
    the classes' public methods (called on the image's patch); functions the top-level ones."""
    try:
        tree = ast.parse(api)
    except SyntaxError:
        return {}, {}

    def signature(fn: ast.FunctionDef, skip: int):
        params = [_kind(a.annotation) for a in fn.args.args[skip:]]
        ret = _kind(fn.returns)
        return (tuple(params), ret) if ret and all(params) else None

    methods, functions = {}, {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("_") and fn.args.args:
                    if (sig := signature(fn, 1)) is not None:
                        methods[fn.name] = sig
        elif isinstance(node, ast.FunctionDef) and (sig := signature(node, 0)) is not None:
            functions[node.name] = sig
    return methods, functions


def _element(annotation) -> str | None:
    """The class a `list["C"]` / `List[C]` annotation holds, or None."""
    if isinstance(annotation, ast.Subscript):
        inner = annotation.slice
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            return inner.value
        if isinstance(inner, ast.Name):
            return inner.id
    return None


def documented_attributes(api: str) -> dict[str, list[str]]:
    """Each class's documented attributes, in the order written: the names its comments
    list, a comment's pieces between `,`, `;`, `:` and comparison signs that are one
    identifier each (`# left < right, lower < upper; horizontal_center, area.` names six),
    and its annotated fields (`area: float`). Prose in a comment names nothing. An
    attribute the runtime lacks costs a failed run: nothing composed from it is proven."""
    try:
        tree = ast.parse(api)
        comments = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(api).readline)
                    if tok.type == tokenize.COMMENT]
    except (SyntaxError, tokenize.TokenError):
        return {}
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        names = [stmt.target.id for stmt in node.body
                 if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)]
        for line, text in comments:
            if node.lineno <= line <= node.end_lineno:
                for piece in re.split(r"[,;:<>=]", text.lstrip("#")):
                    piece = piece.strip().rstrip(".")
                    if piece.isidentifier() and not keyword.iskeyword(piece):
                        names.append(piece)
        if names := list(dict.fromkeys(names)):
            out[node.name] = names
    return out


@functools.lru_cache(maxsize=16)
def _patch_lists(api: str) -> dict[str, list[str]]:
    """Method name -> the documented attributes of the patches in the list it returns."""
    try:
        tree = ast.parse(api)
    except SyntaxError:
        return {}
    fields, out = documented_attributes(api), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and (cls := _element(fn.returns)) in fields:
                    out[fn.name] = fields[cls]
    return out


def patch_name(body_start: str) -> str | None:
    """The variable the prompt's first body line binds (`image_patch = ImagePatch(image)`)."""
    try:
        stmt = ast.parse(body_start.strip()).body[0]
    except (SyntaxError, IndexError):
        return None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def expressions(api: str, patch: str, question: str, quote, calls: int = 2, attributes: bool = False) -> list[str]:
    """Every answer expression (type str) of at most `calls` tool calls (1 to 3) over the
    question's phrases and the question itself, shortest first. `quote` writes a string
    literal (the caller's style); `attributes` adds the comparisons of found patches'
    documented attributes, and with three calls the questions asked of the first patch a
    comparison selects."""
    methods, functions = tools(api)
    patch_lists = _patch_lists(api) if attributes else {}
    words = phrases(question)
    parts = [quote(w) for w in words]
    whole = parts + ([quote(question)] if question not in words else [])
    one = {"str": [], "bool": [], "int": [], "list": []}  # values of one tool call, by kind
    single = []  # truths of one-argument calls: what `and`/`or` join
    firsts: dict[str, list[str]] = {}  # attribute -> the first patch of each one-phrase list call
    lists: dict[str, list[str]] = {}  # attribute -> each one-phrase list call whose patches document it
    for name, (params, ret) in sorted(methods.items()):
        if not params or any(p != "str" for p in params):
            continue
        # The whole question is an argument only alone: it is a question, not a part of one.
        for args in itertools.permutations(whole if len(params) == 1 else parts, len(params)):
            one[ret].append(f"{patch}.{name}({', '.join(args)})")
            if ret == "bool" and len(params) == 1:
                single.append(one[ret][-1])
            if len(params) == 1 and args[0] in parts:
                for field in patch_lists.get(name, ()):
                    firsts.setdefault(field, []).append(f"{one[ret][-1]}[0].{field}")
                    lists.setdefault(field, []).append(one[ret][-1])
    counts = one["int"] + [f"len({x})" for x in one["list"]]
    truths = list(one["bool"])
    # A count against a number the question names ("exactly one", "more than 2"): one call.
    truths += [f"{c} {op} {n}" for c in counts for n in numbers(question) for op in ("==", ">", "<")]
    if calls >= 2:
        truths += [f"{a} {op} {b}" for a, b in itertools.permutations(counts, 2) for op in (">", "<")]
        truths += [f"{a} == {b}" for a, b in itertools.combinations(counts, 2)]
        truths += [f"{a} {op} {b}" for a, b in itertools.combinations(single, 2) for op in ("and", "or")]
        # Both signs, as counts: the form then keeps the question's order of its phrases and the
        # relation picks the sign. With one sign over both orders, seed 0 wrote `a.left < b.left`
        # for "a to the right of b" too (bench/README, section "Spatial relations").
        truths += [f"{a} {op} {b}" for values in firsts.values() for a, b in itertools.permutations(values, 2)
                   for op in ("<", ">")]
    asked = [name for name, (params, ret) in sorted(methods.items()) if params == ("str",) and ret == "str"]
    selected = []  # a list call filtered by a relation to another list's first patch: the third call
    if calls >= 3:
        var = "p" if patch != "p" else "q"
        selected = [f"[{var} for {var} in {a} if {var}.{field} {op} {b}[0].{field}][0]"
                    for field, values in lists.items() for a, b in itertools.permutations(values, 2)
                    for op in ("<", ">")]
    as_answer = [name for name, (params, ret) in sorted(functions.items()) if params == ("bool",) and ret == "str"]
    answers = list(one["str"]) + [f"str({c})" for c in counts]
    answers += [f"{fn}({t})" for fn in as_answer[:1] for t in truths]
    answers += [f"{s}.{name}({arg})" for s in selected for name in asked for arg in whole]
    return sorted(dict.fromkeys(answers), key=len)


def composed(prefix: str, body_start: str, api: str, question: str, calls: int = 2, quote=json.dumps,
             attributes: bool = False) -> list[str]:
    """Whole programs (`prefix` + one return line) for `expressions`; none when the
    prompt's first line binds no patch variable."""
    patch = patch_name(body_start)
    if patch is None or calls < 1:
        return []
    indent = body_start[: len(body_start) - len(body_start.lstrip())] or "    "
    return [f"{prefix}\n{indent}return {expr}\n"
            for expr in expressions(api, patch, question, quote, calls, attributes)]
