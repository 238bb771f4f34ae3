"""The static check: what a program may say, judged on its syntax tree before it runs.

This is the first of several layers (see ``runtime.py`` for the restricted
builtins and module views, ``lockdown.py`` for the kernel limits). It refuses the
well-known Python sandbox escapes at the source level so that most hostile
programs never reach a worker, and gives the model a precise reason it can learn
from. It is not the last line of defence: anything it misses still runs without
file-system writes, network, new processes or the real ``builtins``. The rules it
applies live in ``rules.py``, the rule for each node type in ``syntax.py``.
"""
from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

from .rules import MAX_NESTING, tree_depth
from .syntax import Checker, Rewriter


@dataclass
class PolicyReport:
    status: str | None          # None when the program may run, else compile_error | forbidden
    message: str | None = None  # the reason, without the "Error: " prefix
    line: int | None = None
    code: object = None         # the compiled code object when status is None
    mutates_attributes: bool = False  # has attribute stores: the worker re-checks tools afterwards


MAX_PROGRAM_CHARS = 100_000  # generated programs are a few hundred characters


def check_program(source: str, filename: str = "<program>") -> PolicyReport:
    """The static check's verdict on one program. Whatever the text does to the parser, the
    checker or the compiler (MemoryError, RecursionError, OverflowError, UnicodeError,
    anything) is that program's compile_error: nothing about one program's text may raise
    out of here and fail the batch it came in."""
    try:
        # The compiler warns about a program's text (an always-true assert, an invalid
        # escape) through this process's warnings: one text per line of the trainer's log,
        # or an exception under -W error. What it says reaches the model as the verdict.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _check(source, filename)
    except Exception as exc:  # noqa: BLE001 - see the docstring: the text is hostile
        return PolicyReport("compile_error", f"the program could not be checked "
                                             f"({type(exc).__name__})")


# An AST nests a few nodes per level of source nesting (a call is Call > Name > Load).
_MAX_TREE_DEPTH = 4 * MAX_NESTING


def _check(source: str, filename: str) -> PolicyReport:
    if len(source) > MAX_PROGRAM_CHARS:
        return PolicyReport("forbidden",
                            f"the program is longer than {MAX_PROGRAM_CHARS} characters")
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return PolicyReport("compile_error", f"{type(exc).__name__}: {exc.msg}", exc.lineno)
    except (ValueError, MemoryError, RecursionError) as exc:  # null bytes, absurd nesting
        return PolicyReport("compile_error", f"{type(exc).__name__}: {exc}")
    if tree_depth(tree, _MAX_TREE_DEPTH):
        return PolicyReport("compile_error", "the program is nested too deeply")
    try:
        checker = Checker(tree)
        checker.visit(tree)
    except RecursionError:
        return PolicyReport("compile_error", "the program is nested too deeply")
    if checker.refusal:
        message, line = checker.refusal
        return PolicyReport("forbidden", message, line)
    try:
        tree = ast.fix_missing_locations(Rewriter().visit(tree))
        code = compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        # ValueError includes UnicodeEncodeError: a lone surrogate in a string literal.
        return PolicyReport("compile_error", f"{type(exc).__name__}: {exc}",
                            getattr(exc, "lineno", None))
    return PolicyReport(None, code=code, mutates_attributes=checker.mutates_attributes)
