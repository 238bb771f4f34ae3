"""The static check's rules: which modules, builtins, attributes and special methods a
program may use, and the size budgets its text must fit.

Read by the check of a program's text (``static_check.py``, ``syntax.py``) and by the
run-time guards inside each worker (``runtime.py``, ``guards.py``,
``library_state.py``), so the two layers refuse the same names for the same reasons.
"""
from __future__ import annotations

import ast
import re

from .results import exact_str, type_name

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
    # a class's real bases (numpy.ndarray behind what programs get, see guards.py)
    "mro",
})

# Special methods a program may define. Each is called only by the program's own code
# or by the interpreter on the program's own objects, under its time limit. Not among
# them: the array protocols numpy reads raw memory through (__array_interface__, ...),
# attribute hooks that could fake them (__getattr__, __getattribute__), copy and pickle
# hooks (__reduce__, __getstate__, ...) that let the copy module set any attribute on
# any object, finalisers (__del__), class-creation hooks (__init_subclass__,
# __set_name__, __class_getitem__, __mro_entries__), and metaclass checks.
SAFE_DUNDER_METHODS = frozenset({
    "__init__", "__post_init__", "__repr__", "__str__", "__len__", "__iter__", "__next__",
    "__contains__", "__getitem__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__hash__", "__bool__", "__call__", "__enter__", "__exit__", "__neg__",
    "__pos__", "__abs__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
    "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
    "__rmod__", "__pow__", "__rpow__",
})
# Names the interpreter itself puts in a class namespace.
IMPLICIT_CLASS_NAMES = frozenset({"__module__", "__qualname__", "__doc__", "__annotations__",
                                  "__classcell__", "__orig_bases__", "__firstlineno__",
                                  "__static_attributes__", "__dict__", "__weakref__"})


def namespace_refusal(names) -> str | None:
    """Why a class may not be created with these attribute names (from ``type(n, b, d)``,
    a metaclass, ``make_dataclass``, an enum's members), or None."""
    for name in names:
        if type(name) is not str:
            return "class attribute names must be plain strings"
        if name.startswith("__") and name.endswith("__") and name not in SAFE_DUNDER_METHODS \
                and name not in IMPLICIT_CLASS_NAMES:
            return f"a class may not define '{name}' in programs"
    return None


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


# Budgets checked before anything recursive runs on a program's syntax: CPython's parser,
# its AST builder and this checker recurse, and a hostile program nests until one of them
# runs out of stack or memory. Honest programs nest a handful of levels.
MAX_NESTING = 100
MAX_ANNOTATION_CHARS = 1000  # annotation strings: a type such as "list[tuple[int, str]]"
_OPENERS, _CLOSERS = "([{", ")]}"
# Prefix operators nest without brackets: "- - - 1", "not not x", "lambda: lambda: 1".
_PREFIX_RUN = re.compile(r"(?:(?:[-+~]|\bnot\b|\blambda\b[^:]*:|\bawait\b)\s*){%d,}" % MAX_NESTING)


def nesting_refusal(text: str, limit_chars: int) -> str | None:
    """Why ``text`` is too big or too deeply nested to be parsed, judged by a linear scan
    of its characters (before any parser sees it), or None. The scan counts brackets
    inside string literals too: it errs towards refusing absurd text, never honest code."""
    if len(text) > limit_chars:
        return f"longer than {limit_chars} characters"
    depth = deepest = 0
    for char in text:
        if char in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif char in _CLOSERS:
            depth = max(0, depth - 1)
    if deepest > MAX_NESTING or _PREFIX_RUN.search(text):
        return f"nested more than {MAX_NESTING} levels deep"
    return None


def tree_depth(tree: ast.AST, limit: int) -> bool:
    """Whether the tree nests deeper than ``limit`` nodes (an iterative walk: no recursion
    on a tree whose depth is the question)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def checked_name(name) -> str:
    """An exact copy of an attribute name, or AttributeError/TypeError saying why not."""
    if type(name) is not str:
        if not isinstance(name, str):
            raise TypeError(f"attribute name must be string, not '{type_name(name)}'")
        name = exact_str(name)
    reason = attribute_refusal(name)
    if reason:
        raise AttributeError(reason)
    return name
