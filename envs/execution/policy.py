"""Static policy: what a program may say, checked on its syntax tree before it runs.

This is the first of several layers (see ``runtime.py`` for the restricted
builtins and module views, ``lockdown.py`` for the kernel limits). It refuses the
well-known Python sandbox escapes at the source level so that most hostile
programs never reach a worker, and gives the model a precise reason it can learn
from. It is not the last line of defence: anything it misses still runs without
file-system writes, network, new processes or the real ``builtins``.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

# Modules a program may import. Submodules must be listed themselves: allowing
# "numpy" does not allow "numpy.f2py" (which shells out to compilers).
ALLOWED_MODULES = frozenset({
    "math", "cmath", "re", "string", "random", "statistics", "fractions", "decimal",
    "numbers", "collections", "collections.abc", "itertools", "functools", "operator",
    "heapq", "bisect", "typing", "dataclasses", "enum", "abc", "copy", "json",
    "numpy", "numpy.linalg", "numpy.random", "numpy.fft", "numpy.polynomial", "numpy.ma",
})

# Builtins that evaluate code, reach namespaces or touch the outside world.
DENIED_NAMES = frozenset({
    "exec", "eval", "compile", "open", "globals", "locals", "vars", "__import__",
    "breakpoint", "input", "help", "exit", "quit", "memoryview",
})

# Attribute names refused everywhere (statically, and at run time by the
# guarded getattr and module views). Names starting with "_" are refused too.
DENIED_ATTRIBUTES = frozenset({
    # frames, code objects and tracebacks lead back to real globals and builtins
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await",
    "ag_frame", "ag_code", "ag_await", "f_globals", "f_locals", "f_builtins",
    "f_back", "f_code", "f_trace", "tb_frame", "tb_next", "co_code",
    # modules that allowed modules happen to import (dataclasses.sys, typing.sys, ...)
    "os", "sys", "subprocess", "ctypes", "ctypeslib", "f2py", "distutils", "testing",
    "importlib", "builtins", "modules", "inspect", "lib", "signal", "socket", "io",
    # file I/O exposed by numpy and json
    "load", "loadtxt", "fromfile", "tofile", "genfromtxt", "memmap", "save", "savez",
    "savez_compressed", "savetxt", "dump", "fromregex", "DataSource", "open_memmap",
    # reflection helpers that take attribute names as strings or evaluate strings
    "attrgetter", "methodcaller", "get_type_hints", "ForwardRef", "Formatter",
    "get_field", "settrace", "setprofile", "system", "popen",
})

_REFLECTION_CALLS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# "{0.__class__}".format(x) walks attributes inside a string literal.
_FORMAT_TRAVERSAL = re.compile(r"\{[^{}]*[.\[]\s*_")


def attribute_refusal(name: str) -> str | None:
    """Why the attribute ``name`` may not be used, or None when it may."""
    if name.startswith("_"):
        return f"access to the private or special attribute '{name}' is not allowed"
    if name in DENIED_ATTRIBUTES:
        return f"the attribute '{name}' is not allowed in programs"
    return None


def module_refusal(name: str) -> str | None:
    if name in ALLOWED_MODULES:
        return None
    allowed = ", ".join(sorted(m for m in ALLOWED_MODULES if "." not in m))
    return f"import of '{name}' is not allowed (allowed modules: {allowed})"


@dataclass
class PolicyReport:
    status: str | None          # None when the program may run, else compile_error | forbidden
    message: str | None = None  # the reason, without the "Error: " prefix
    line: int | None = None
    code: object = None         # the compiled code object when status is None
    mutates_attributes: bool = False  # has attribute stores: the worker re-checks tools afterwards


MAX_PROGRAM_CHARS = 100_000  # generated programs are a few hundred characters


def check_program(source: str, filename: str = "<program>") -> PolicyReport:
    if len(source) > MAX_PROGRAM_CHARS:
        return PolicyReport("forbidden",
                            f"the program is longer than {MAX_PROGRAM_CHARS} characters")
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return PolicyReport("compile_error", f"{type(exc).__name__}: {exc.msg}", exc.lineno)
    except (ValueError, MemoryError, RecursionError) as exc:  # null bytes, absurd nesting
        return PolicyReport("compile_error", f"{type(exc).__name__}: {exc}")
    try:
        checker = _Checker(tree)
        checker.visit(tree)
    except RecursionError:
        return PolicyReport("compile_error", "the program is nested too deeply")
    if checker.refusal:
        message, line = checker.refusal
        return PolicyReport("forbidden", message, line)
    try:
        tree = ast.fix_missing_locations(_AttributeWrites().visit(tree))
        code = compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return PolicyReport("compile_error", f"{type(exc).__name__}: {exc}",
                            getattr(exc, "lineno", None))
    return PolicyReport(None, code=code, mutates_attributes=checker.mutates_attributes)


class _AttributeWrites(ast.NodeTransformer):
    """``obj.name`` as an assignment or ``del`` target becomes
    ``__vprl_attr__(obj)['name']``: the runtime guard (guards.AttributeTarget) then checks
    that the program owns ``obj``, in every binding form Python has."""

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            return node
        target = ast.Call(ast.Name("__vprl_attr__", ast.Load()), [node.value], [])
        return ast.copy_location(
            ast.Subscript(ast.copy_location(target, node), ast.Constant(node.attr), node.ctx),
            node)


def _root_name(node: ast.AST) -> str | None:
    """The variable at the base of ``a.b[c].d``, or None for call results etc."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Checker(ast.NodeVisitor):
    def __init__(self, tree: ast.AST):
        self.refusal: tuple[str, int | None] | None = None
        self.mutates_attributes = False
        self.imported: set[str] = set()
        self.bound: set[str] = set()
        for node in ast.walk(tree):  # names the program binds itself
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.bound.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound.add(node.name)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    self.imported.add((alias.asname or alias.name).split(".")[0])

    def refuse(self, node: ast.AST, message: str) -> None:
        if self.refusal is None:
            self.refusal = (message, getattr(node, "lineno", None))

    def generic_visit(self, node):
        if self.refusal is None:
            super().generic_visit(node)

    def visit_Import(self, node):
        for alias in node.names:
            reason = module_refusal(alias.name)
            if reason:
                self.refuse(node, reason)

    def visit_ImportFrom(self, node):
        if node.level:
            self.refuse(node, "relative imports are not allowed")
            return
        reason = module_refusal(node.module or "")
        if reason:
            self.refuse(node, reason)
        for alias in node.names:
            if alias.name != "*":
                reason = attribute_refusal(alias.name)
                if reason and f"{node.module}.{alias.name}" not in ALLOWED_MODULES:
                    self.refuse(node, reason)

    def visit_Name(self, node):
        if node.id in DENIED_NAMES:
            self.refuse(node, f"'{node.id}' is not allowed in programs")
        elif node.id.startswith("__") and node.id.endswith("__"):
            self.refuse(node, f"the special name '{node.id}' is not allowed in programs")

    def visit_Attribute(self, node):
        reason = attribute_refusal(node.attr)
        if reason:
            self.refuse(node, reason)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.mutates_attributes = True
            self._check_mutation(node, node.value)
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name) and func.id in _REFLECTION_CALLS:
            if func.id in ("setattr", "delattr"):
                self.mutates_attributes = True
                if node.args:
                    self._check_mutation(node, node.args[0])
            if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[1].value, str):
                reason = attribute_refusal(node.args[1].value)
                if reason:
                    self.refuse(node, reason)
        if isinstance(func, ast.Attribute) and func.attr in ("format", "format_map") \
                and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str) \
                and _FORMAT_TRAVERSAL.search(func.value.value):
            self.refuse(node, "format strings may not reach private or special attributes")
        self.generic_visit(node)

    def _check_mutation(self, node, target):
        # Assigning onto something the program did not create itself (a tool
        # class, a module, a builtin) would leak into the programs that run next.
        root = _root_name(target)
        if root is not None and (root in self.imported or root not in self.bound):
            self.refuse(node, f"modifying '{root}' is not allowed: programs may not "
                              "change modules, tools or builtins")
