"""Local search around sampled programs: small AST edits, genetic-programming style.

RL reweights what the policy samples, so a program form it never writes is never
reinforced (bench/README, "Why RL does not find the one-line program"). Search widens the
support where sampling found nothing, as expert iteration does (Anthony et al., 2017:
search improves on the policy's samples, and the policy is trained on what search
found). The programs sampled for a question are the seeds; each mutant is a few of these
edits away from one, the classic genetic-programming and program-repair operators:

- ``drop``: delete one statement;
- ``unwrap``: replace an ``if``/``for``/``while`` by its body (its guard or loop removed);
- ``return_early``: return the value an assignment computes, ending the program there;
- ``rename``: read another variable bound before that point;
- ``hoist``: replace a call of a plain function (``str(len(x))``) by one of its arguments;
- ``point``: call another method of the *function set* with the same number of
  arguments (GP's point mutation; the caller passes the API the prompt documents);
- ``constant``: replace a string by another *terminal* (the seeds' strings and what the
  caller adds, e.g. the task's question).

The body's first statement is never edited: it is the line the prompt writes for the
policy (`PromptFamily.body_start`), so a mutant still continues the prompt. After every
edit, assignments nobody reads are removed (the tools are pure, so this keeps the
meaning); a mutant that does not parse, returns nothing, reads a name before binding
it, or repeats a program already seen is dropped. The search keeps the shortest programs
at each depth (parsimony pressure, GP's usual guard against bloat). Edits know nothing
of the answers: a mutant earns its place only by its reward. Leaf module: it imports
nothing from the project.
"""

from __future__ import annotations

import ast
import copy
import json
import random

OPERATORS = ("drop", "unwrap", "return_early", "rename", "hoist", "point", "constant")


def _function(tree: ast.Module) -> ast.FunctionDef | None:
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    return fns[0] if fns else None


def _bodies(fn: ast.FunctionDef) -> list[list[ast.stmt]]:
    """Every statement list in the function (its body and the bodies nested in it)."""
    out, stack = [], [fn]
    while stack:
        node = stack.pop()
        for name in ("body", "orelse"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                out.append(block)
                stack.extend(block)
    return out


def _numbered_names(fn: ast.FunctionDef) -> list[tuple[int, ast.Name]]:
    """Every Name in the function with the number of its statement, in document order
    (a compound statement's own expressions take its number; its body comes after)."""
    out, counter = [], [0]

    def visit(node, number):
        if isinstance(node, ast.stmt):
            counter[0] += 1
            number = counter[0]
        if isinstance(node, ast.Name):
            out.append((number, node))
        for child in ast.iter_child_nodes(node):
            visit(child, number)

    for stmt in fn.body:
        visit(stmt, 0)
    return out


def _renames(fn: ast.FunctionDef) -> list[tuple[int, str]]:
    """(index of a read among the function's reads, another name bound before it)."""
    args = [a.arg for a in fn.args.args]
    first_store: dict[str, int] = {}
    named = _numbered_names(fn)
    for number, node in named:
        if isinstance(node.ctx, ast.Store):
            first_store.setdefault(node.id, number)
    out, reads = [], [(n, node) for n, node in named if isinstance(node.ctx, ast.Load)]
    for j, (number, node) in enumerate(reads):
        if number <= 1 or (node.id not in first_store and node.id not in args):
            continue  # the prompt's first line, and calls of builtins and tools, stay
        # The argument is the raw input, read by the prompt's line: renaming to it only breaks calls.
        out.extend((j, name) for name in first_store if name != node.id and first_store[name] < number)
    return out


def _free_names(fn: ast.FunctionDef) -> set[str]:
    """Names read but never bound in the function: tools and builtins."""
    named = _numbered_names(fn)
    stored = {node.id for _, node in named if isinstance(node.ctx, ast.Store)}
    return {node.id for _, node in named if isinstance(node.ctx, ast.Load)} - stored - {a.arg for a in fn.args.args}


def _reads_before_binding(fn: ast.FunctionDef, free: set[str]) -> bool:
    """A read of a local name before any statement binds it (a NameError to come)."""
    args, first_store = {a.arg for a in fn.args.args}, {}
    named = _numbered_names(fn)
    for number, node in named:
        if isinstance(node.ctx, ast.Store):
            first_store.setdefault(node.id, number)
    return any(isinstance(node.ctx, ast.Load) and node.id not in args and node.id not in free
               and first_store.get(node.id, number) >= number for number, node in named)


def _calls(fn: ast.FunctionDef) -> list[ast.Call]:
    """The function's calls in document order, the prompt's first line excluded."""
    return [node for stmt in fn.body[1:] for node in ast.walk(stmt) if isinstance(node, ast.Call)]


def _strings(fn: ast.FunctionDef) -> list[ast.Constant]:
    return [node for stmt in fn.body[1:] for node in ast.walk(stmt)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def _edits(fn: ast.FunctionDef, methods: dict[str, int], terminals: list[str]) -> list[tuple]:
    """Every single edit this function admits, as (operator, location...) tuples."""
    edits = []
    for j, call in enumerate(_calls(fn)):
        if isinstance(call.func, ast.Name) and call.args:
            edits.extend(("hoist", j, k) for k in range(len(call.args)))
        if isinstance(call.func, ast.Attribute) and call.func.attr in methods:
            edits.extend(("point", j, name) for name, arity in methods.items()
                         if name != call.func.attr and arity == len(call.args) + len(call.keywords))
    for j, const in enumerate(_strings(fn)):
        edits.extend(("constant", j, text) for text in terminals if text != const.value)
    for b, block in enumerate(_bodies(fn)):
        for i, stmt in enumerate(block):
            if block is fn.body and i == 0:
                continue  # the prompt's line (every family writes the body's first line itself)
            if len(block) > 1:
                edits.append(("drop", b, i))
            if isinstance(stmt, (ast.If, ast.For, ast.While)):
                edits.append(("unwrap", b, i))
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                edits.append(("return_early", b, i))
    edits.extend(("rename", j, name) for j, name in _renames(fn))
    return edits


def _apply(fn: ast.FunctionDef, edit: tuple) -> None:
    op = edit[0]
    if op == "rename":
        reads = [node for _, node in _numbered_names(fn) if isinstance(node.ctx, ast.Load)]
        reads[edit[1]].id = edit[2]
        return
    if op in ("hoist", "point"):
        call = _calls(fn)[edit[1]]
        if op == "point":
            call.func.attr = edit[2]
            return
        for parent in ast.walk(fn):  # the call's place in its parent takes its argument
            for field, value in ast.iter_fields(parent):
                if value is call:
                    setattr(parent, field, call.args[edit[2]])
                    return
                if isinstance(value, list) and any(v is call for v in value):
                    value[[id(v) for v in value].index(id(call))] = call.args[edit[2]]
                    return
        return
    if op == "constant":
        _strings(fn)[edit[1]].value = edit[2]
        return
    block, i = _bodies(fn)[edit[1]], edit[2]
    stmt = block[i]
    if op == "drop":
        del block[i]
    elif op == "unwrap":
        inner = list(stmt.body)
        if isinstance(stmt, ast.For):  # the loop variable still needs a value: its first item
            first = ast.Subscript(value=stmt.iter, slice=ast.Constant(0), ctx=ast.Load())
            inner = [ast.Assign(targets=[stmt.target], value=first)] + inner
        block[i : i + 1] = inner
    elif op == "return_early":
        block[i:] = [ast.Return(value=stmt.value)]


def _reads(fn: ast.FunctionDef) -> set[str]:
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _prune(fn: ast.FunctionDef) -> None:
    """Remove assignments to names nobody reads, then statements after a top-level return."""
    changed = True
    while changed:
        changed = False
        read = _reads(fn)
        for block in _bodies(fn):
            for i, stmt in enumerate(block):
                if block is fn.body and i == 0:
                    continue
                if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) and t.id not in read
                                                        for t in stmt.targets) and len(block) > 1:
                    del block[i]
                    changed = True
                    break
            if changed:
                break
    for i, stmt in enumerate(fn.body):
        if isinstance(stmt, ast.Return):
            del fn.body[i + 1 :]
            break


def literal(text: str) -> str:
    """`text` as a Python string literal the policy can copy character for character.

    Double quotes, as policies write them (ast.unparse would single-quote every string, a
    style the policy would then be taught). A text holding double quotes and no single
    ones is single-quoted instead: escaping is a skill the policy may not have (the
    embedded model ends the literal at the text's first quote), and copying is not."""
    if '"' in text and "'" not in text and "\\" not in text and text.isprintable():
        return "'" + text + "'"
    return json.dumps(text, ensure_ascii=False)


def _source(tree: ast.Module) -> str | None:
    """The tree as text, its strings written by `literal`."""
    tree = copy.deepcopy(tree)
    strings = []
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            for k, item in enumerate(items):
                if isinstance(item, ast.Constant) and isinstance(item.value, str) and not isinstance(node, ast.JoinedStr):
                    strings.append(item.value)
                    hole = ast.Name(id=f"__vprl_string_{len(strings) - 1}__", ctx=ast.Load())
                    if isinstance(value, list):
                        value[k] = hole
                    else:
                        setattr(node, field, hole)
    try:
        text = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
        for k in reversed(range(len(strings))):  # reversed: string_1 is not a prefix of string_10's hole
            text = text.replace(f"__vprl_string_{k}__", literal(strings[k]))
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return text


def _normal(program: str) -> str | None:
    try:
        return ast.unparse(ast.parse(program))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def api_methods(api: str) -> dict[str, int]:
    """The function set of an API listing (a prompt's ``class ...: def name(self, a, b)``):
    each method's name and how many arguments a call passes (``self`` not counted)."""
    try:
        tree = ast.parse(api)
    except SyntaxError:
        return {}
    return {node.name: len(node.args.args) - 1 for cls in tree.body if isinstance(cls, ast.ClassDef)
            for node in cls.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
            and node.args.args}


def mutants(programs: list[str], limit: int, rng: random.Random, *, depth: int = 4,
            methods: dict[str, int] | None = None, terminals: tuple[str, ...] = (), beam: int = 64) -> list[str]:
    """Up to `limit` distinct programs, at most `depth` edits from one of `programs`.

    Each depth edits the `beam` shortest programs of the one before (the seeds first);
    the shortest `limit` mutants of all depths are returned (parsimony), ties in a
    random order. `methods` is the function set of ``point`` (`api_methods`), `terminals`
    strings ``constant`` may write besides the seeds' own. A seed that does not parse has
    no mutants. Deterministic for a given `rng` state.
    """
    seen = {n for n in map(_normal, programs) if n is not None}
    frontier, free, strings = [], set(), list(terminals)
    for program in programs:
        try:
            tree = ast.parse(program)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        fn = _function(tree)
        if fn is not None and fn.body:
            frontier.append(tree)
            free.update(_free_names(fn))
            strings += [c.value for c in _strings(fn) if c.value not in strings]
    found: list[tuple[str, ast.Module]] = []
    for _level in range(depth):
        candidates = [(tree, edit) for tree in frontier for edit in _edits(_function(tree), methods or {}, strings)]
        rng.shuffle(candidates)
        level = []
        for tree, edit in candidates:
            child = copy.deepcopy(tree)
            fn = _function(child)
            try:
                _apply(fn, edit)
                if not fn.body:
                    continue
                _prune(fn)
            except (IndexError, AttributeError, TypeError):
                continue
            if not any(isinstance(n, ast.Return) for n in ast.walk(fn)) or _reads_before_binding(fn, free):
                continue
            text = _source(child)
            key = _normal(text) if text else None
            if key is None or key in seen:
                continue
            seen.add(key)
            level.append((text, child))
        level.sort(key=lambda item: len(item[0]))  # stable: equal lengths keep the random order
        found += level
        frontier = [tree for _, tree in level[:beam]]
    found.sort(key=lambda item: len(item[0]))
    return [text for text, _ in found[:limit]]
