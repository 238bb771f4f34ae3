"""The SS-parser's checks for Python programs, over the syntax tree (nothing runs).

Rules, by id (shared with the script rules where they mean the same):
- ``syntax``: the program does not parse.
- ``unknown_method``: a call of a method the ImagePatch/ImageObject API does not have on
  a variable that holds a patch (``patch.find_all(...)``), or of a patch method on the
  list ``find`` returns (``image_patch.find("x").simple_query(...)``).
- ``unknown_argument``: a call of an API method or tool function whose arguments do not
  fit its signature (an unknown keyword, too many positional arguments).
- ``undefined_variable``: a name read that the program never binds and the tools
  namespace and builtins do not have.
- ``missing_result``: ``execute_command`` never returns a value.
- ``multi_instance``: the question is about several instances of one class ("both",
  "each", "all the ...") but the program answers from ``find(...)[0]`` alone.

Which variables hold patches is inferred from assignments: ``ImagePatch(...)``, a crop,
``find(...)[i]``, loops and comprehensions over ``find(...)``, ``best_image_match(...)``.
Repair renames unknown methods, keywords and names to a close known one (difflib) and
rewrites the program with ``ast.unparse``; the other rules have no safe rewrite.
"""
from __future__ import annotations

import ast
import builtins
import difflib
import inspect
from functools import lru_cache

from policies.programs import parse_program
from rewards.vlagent import questions as Q
from rewards.vlagent.repair import Repair
from rewards.vlagent.ssparser import Violation

PATCH, PATCHES, OBJECT = "patch", "patches", "object"
_CROPS = ("crop", "crop_left_of_bbox", "crop_right_of_bbox", "crop_above_bbox", "crop_below_bbox")


@lru_cache(maxsize=1)
def api() -> dict:
    """Signatures of the API: {"patch": {method: sig}, "object": {...}, "functions": {...},
    "names": every namespace name}."""
    from envs.execution.rules import DENIED_NAMES
    from envs.tools.api import make_api
    from envs.tools.backend import Backend
    from envs.visprog.modules import make_modules

    ns = make_api(Backend())
    ns.update(make_modules(ns))

    def methods(cls):
        return {m: inspect.signature(getattr(cls, m)) for m in dir(cls)
                if not m.startswith("_") and callable(getattr(cls, m))}

    functions = {k: inspect.signature(v) for k, v in ns.items()
                 if inspect.isfunction(v) or k in ("ImagePatch", "ImageObject")}
    attributes = {"left", "lower", "right", "upper", "width", "height", "horizontal_center",
                  "vertical_center", "category", "cropped_image", "area"}
    names = (set(ns) | set(vars(builtins))) - set(DENIED_NAMES)
    return {PATCH: methods(ns["ImagePatch"]), OBJECT: methods(ns["ImageObject"]),
            "functions": functions, "attributes": attributes, "names": names}


def _call_name(node) -> str | None:
    return node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        else None


class _Types(ast.NodeVisitor):
    """Which names hold a patch, a list of patches or an ImageObject."""

    def __init__(self):
        self.kinds: dict[str, str] = {}

    def kind(self, node) -> str | None:
        if isinstance(node, ast.Name):
            return self.kinds.get(node.id)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                return {"ImagePatch": PATCH, "ImageObject": OBJECT,
                        "best_image_match": PATCH, "sorted": self.kind(node.args[0]) if node.args
                        else None}.get(node.func.id)
            if not isinstance(node.func, ast.Attribute):  # (lambda: p)(), f()(): no known kind
                return None
            name = _call_name(node)
            owner = self.kind(node.func.value)
            if owner == PATCH and name == "find":
                return PATCHES
            if owner == PATCH and name in _CROPS:
                return PATCH
        if isinstance(node, ast.Subscript) and self.kind(node.value) == PATCHES:
            return PATCH if not isinstance(node.slice, ast.Slice) else PATCHES
        if isinstance(node, ast.ListComp) and self.kind(node.elt) == PATCH:
            return PATCHES
        return None

    def bind(self, target, kind):
        if isinstance(target, ast.Name) and kind:
            self.kinds[target.id] = kind

    def visit_Assign(self, node):
        self.generic_visit(node)
        for t in node.targets:
            self.bind(t, self.kind(node.value))

    def visit_For(self, node):
        if self.kind(node.iter) == PATCHES:
            self.bind(node.target, PATCH)
        self.generic_visit(node)

    def visit_comprehension(self, node):
        if self.kind(node.iter) == PATCHES:
            self.bind(node.target, PATCH)
        self.generic_visit(node)


def _bound(tree) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _fits(sig: inspect.Signature, node: ast.Call, method: bool) -> str | None:
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return None
    args = [None] * (len(node.args) + int(method))
    try:
        sig.bind(*args, **{k.arg: None for k in node.keywords})
    except TypeError as exc:
        return str(exc)
    return None


def _problems(tree, question: str | None) -> list[tuple[Violation, ast.AST | None, str | None]]:
    """(violation, node to rewrite, replacement name) triples."""
    info, types = api(), _Types()
    types.visit(tree)
    out = []

    def say(rule, node, message, fix=None):
        out.append((Violation(rule, getattr(node, "lineno", None), message), node, fix))

    bound = _bound(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner, name = types.kind(node.func.value), node.func.attr
            table = info[PATCH] if owner == PATCH else info[OBJECT] if owner == OBJECT else None
            if owner == PATCHES and name in info[PATCH]:
                say("unknown_method", node, f"{name}() is called on the list find() returns; "
                    "index it (patches[0]) or loop over it")
            elif table is not None and name not in table:
                close = difflib.get_close_matches(name, list(table), n=1, cutoff=0.6)
                say("unknown_method", node, f"{'ImagePatch' if owner == PATCH else 'ImageObject'}"
                    f" has no method {name}()" + (f"; did you mean {close[0]}()?" if close else ""),
                    close[0] if close else None)
            elif table is not None:
                problem = _fits(table[name], node, method=True)
                if problem:
                    say("unknown_argument", node, f"{name}(): {problem}", _keyword_fix(node, table[name]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in info["functions"] and node.func.id not in bound:
            problem = _fits(info["functions"][node.func.id], node, method=False)
            if problem:
                say("unknown_argument", node, f"{node.func.id}(): {problem}",
                    _keyword_fix(node, info["functions"][node.func.id]))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and node.id not in bound and node.id not in info["names"]:
            close = difflib.get_close_matches(node.id, sorted(bound | info["names"]), n=1, cutoff=0.8)
            say("undefined_variable", node, f"{node.id} is never defined"
                + (f"; did you mean {close[0]}?" if close else ""), close[0] if close else None)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef)
               and n.name == "execute_command"), None)
    if fn is not None and not any(isinstance(n, ast.Return) and n.value is not None
                                  for n in ast.walk(fn)):
        say("missing_result", fn, "execute_command never returns an answer")
    out += [(v, None, None) for v in _multi_instance(tree, types, question)]
    return out


def _keyword_fix(node: ast.Call, sig: inspect.Signature) -> dict | None:
    params = [p for p in sig.parameters if p != "self"]
    fixes = {}
    for kw in node.keywords:
        if kw.arg is not None and kw.arg not in params:
            close = difflib.get_close_matches(kw.arg, params, n=1, cutoff=0.6)
            if not close:
                return None
            fixes[kw.arg] = close[0]
    return fixes or None


def _multi_instance(tree, types: _Types, question: str | None) -> list[Violation]:
    found = Q.multi_instance(question) if question else None
    if found is None:
        return []
    asked = Q.content(found[0])
    iterated = {n.iter.id for n in ast.walk(tree) if isinstance(n, (ast.For, ast.comprehension))
                and isinstance(n.iter, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and node.slice.value == 0):
            continue
        target = node.value
        call = target if _call_name(target) == "find" else None
        if isinstance(target, ast.Name) and target.id not in iterated:
            call = next((a.value for a in ast.walk(tree) if isinstance(a, ast.Assign)
                         and any(isinstance(t, ast.Name) and t.id == target.id for t in a.targets)
                         and _call_name(a.value) == "find"), None)
        phrase = call.args[0].value if call is not None and call.args and isinstance(
            call.args[0], ast.Constant) and isinstance(call.args[0].value, str) else None
        if phrase and Q.words(phrase) and Q.singular(Q.words(phrase)[-1]) in asked:
            out.append(Violation("multi_instance", node.lineno, f"the question is about several "
                                 f"{found[0]}s but the program answers from find({phrase!r})[0] "
                                 "alone; look at each of them"))
    return out


def program_violations(program: str, question: str | None = None) -> list[Violation]:
    tree, problem = parse_program(program)
    if tree is None:
        return [Violation("syntax", problem[1], problem[0])]
    found = [v for v, _, _ in _problems(tree, question)]
    return sorted(found, key=lambda v: (v.line is None, v.line or 0))


class _Rename(ast.NodeTransformer):
    def __init__(self, fixes: dict):
        self.fixes = fixes  # id(node) -> replacement

    def visit_Call(self, node):
        self.generic_visit(node)
        fix = self.fixes.get(id(node))
        if isinstance(fix, str) and isinstance(node.func, ast.Attribute):
            node.func.attr = fix
        elif isinstance(fix, dict):
            for kw in node.keywords:
                kw.arg = fix.get(kw.arg, kw.arg)
        return node

    def visit_Name(self, node):
        fix = self.fixes.get(id(node))
        if isinstance(fix, str):
            node.id = fix
        return node


def repair_program(program: str, question: str | None = None) -> Repair:
    """Rename unknown methods, keywords and names to close known ones; idempotent."""
    before = program_violations(program, question)
    if not before or before[0].rule == "syntax":
        return Repair(program, before, before)
    tree = ast.parse(program)
    fixes = {id(node): fix for _, node, fix in _problems(tree, question) if fix is not None}
    if not fixes:
        return Repair(program, before, before)
    text = ast.unparse(_Rename(fixes).visit(tree)) + "\n"
    after = program_violations(text, question)
    if len(after) >= len(before):
        return Repair(program, before, before)
    return Repair(text, before, after, changed=True)
