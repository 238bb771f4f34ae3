"""The in-worker half of the sandbox: the world a program sees, and one run of it.

A program gets a fresh globals dict per run: the tools namespace, a restricted
copy of builtins, and read-only views of modules. Nothing it assigns survives
into the next program; attribute changes on shared classes are undone after the
run (see ``ClassGuard``).
"""
from __future__ import annotations

import builtins
import dis
import importlib
import sys
import time
import types

from .policy import ALLOWED_MODULES, DENIED_NAMES, attribute_refusal, module_refusal
from .limits import ProgramTimeout, SoftTimer
from .results import MAX_ANSWER_CHARS, cap_text, describe_exception, format_error, to_answer
from .snapshots import SHARED_CLASSES, ClassGuard

STDOUT_CAP = 4096
STDOUT_MARKER = "\n...[output truncated: {} more characters]"
PROGRAM_FILENAME = "<program>"


class ModuleView:
    """Read-only stand-in for a module: no private names, no unlisted submodules,
    no assignment. ``dataclasses.sys`` or ``numpy.f2py`` are what it hides."""

    __slots__ = ("_module",)
    _views: dict = {}

    def __new__(cls, module):
        view = cls._views.get(module.__name__)
        if view is None:
            view = object.__new__(cls)
            object.__setattr__(view, "_module", module)
            cls._views[module.__name__] = view
        return view

    def __getattr__(self, name):
        module = object.__getattribute__(self, "_module")
        if name == "__all__":  # for "from m import *"
            names = getattr(module, "__all__", None) or list(vars(module))
            return [n for n in names if attribute_refusal(n) is None]
        if name == "__name__":
            # `from m import x` falls back to sys.modules[f"{m.__name__}.x"] when the
            # attribute is refused; a name no module has keeps that fallback from
            # handing out a hidden submodule someone else already imported.
            return f"{module.__name__} (program view)"
        reason = attribute_refusal(name)
        if reason:
            raise AttributeError(reason)
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            if value.__name__ not in ALLOWED_MODULES:
                raise AttributeError(f"module '{value.__name__}' is not available to programs")
            return ModuleView(value)
        return value

    def __setattr__(self, name, value):
        raise AttributeError("modules are read-only inside programs")

    def __delattr__(self, name):
        raise AttributeError("modules are read-only inside programs")

    def __dir__(self):
        module = object.__getattribute__(self, "_module")
        return [n for n in dir(module) if attribute_refusal(n) is None]

    def __repr__(self):
        return f"<module '{object.__getattribute__(self, '_module').__name__}'>"


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    caller = sys._getframe(1)
    if caller.f_code.co_filename != PROGRAM_FILENAME \
            or caller.f_code.co_code[caller.f_lasti] != _IMPORT_NAME:
        # Not an import statement of the program: C code (numpy's lazy
        # ``numpy._core._methods``, for one) imports through the builtins of
        # the calling frame, which are ours. It needs the real module, and the
        # program never sees the value, so this goes to the real import.
        return _real_import(name, globals, locals, fromlist, level)
    if level:
        raise ImportError("relative imports are not allowed")
    reason = module_refusal(name)
    if reason:
        raise ImportError(reason)
    module = importlib.import_module(name)
    if fromlist:
        return ModuleView(module)
    return ModuleView(importlib.import_module(name.split(".")[0]))


_real_import = builtins.__import__
_IMPORT_NAME = dis.opmap["IMPORT_NAME"]


def _check_name(name):
    if isinstance(name, str):
        reason = attribute_refusal(name)
        if reason:
            raise AttributeError(reason)


def _guarded_getattr(obj, name, *default):
    _check_name(name)
    return getattr(obj, name, *default)


def _guarded_setattr(obj, name, value):
    _check_name(name)
    if isinstance(obj, (type, ModuleView)) and obj in SHARED_CLASSES:
        raise AttributeError("programs may not change tools or modules")
    setattr(obj, name, value)


def _guarded_delattr(obj, name):
    _check_name(name)
    if isinstance(obj, (type, ModuleView)) and obj in SHARED_CLASSES:
        raise AttributeError("programs may not change tools or modules")
    delattr(obj, name)




class CappedOutput:
    """print() target that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap: int = STDOUT_CAP):
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def write(self, text: str) -> int:
        room = self.cap - self.size
        if room > 0:
            kept = text[:room]
            self.parts.append(kept)
            self.size += len(kept)
            self.dropped += len(text) - len(kept)
        else:
            self.dropped += len(text)
        return len(text)

    def flush(self):
        pass

    def text(self) -> str:
        out = "".join(self.parts)
        return out + STDOUT_MARKER.format(self.dropped) if self.dropped else out

    def print(self, *args, sep=" ", end="\n", file=None, flush=False):
        if self.size >= self.cap:  # full: count cheaply, don't format
            self.dropped += 1
            return
        self.write((" " if sep is None else str(sep)).join(map(str, args))
                   + ("\n" if end is None else str(end)))


def make_builtins(output: CappedOutput) -> dict:
    """A fresh restricted builtins dict (a copy per program, so a program that
    rebinds ``len`` in it affects only itself)."""
    safe = _SAFE_BUILTINS.copy()
    safe["print"] = output.print
    return safe


_SAFE_BUILTINS = {k: v for k, v in vars(builtins).items()
                  if k not in DENIED_NAMES and not (k.startswith("__") and k != "__build_class__")}
_SAFE_BUILTINS.update(__import__=_guarded_import, getattr=_guarded_getattr,
                      setattr=_guarded_setattr, delattr=_guarded_delattr, __name__="builtins")


def wrap_namespace(namespace: dict) -> dict:
    return {k: (ModuleView(v) if isinstance(v, types.ModuleType) else v)
            for k, v in namespace.items()}


def _program_line(tb) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == PROGRAM_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def classify(exc: BaseException) -> tuple[str, str]:
    line = _program_line(exc.__traceback__)
    if isinstance(exc, ProgramTimeout):
        return "timeout", format_error(f"Timeout: {exc}")
    if isinstance(exc, MemoryError):
        return "memory_limit", describe_exception(exc, line)
    if isinstance(exc, AssertionError):
        return "assertion_error", describe_exception(exc, line)
    return "runtime_error", describe_exception(exc, line)


def run_program(report, namespace: dict, image, entry: str, timer: SoftTimer,
                timeout_s: float, cpu_time_s: float | None, guard: ClassGuard | None) -> dict:
    """Run one checked program on one image; returns the result as a plain dict."""
    output = CappedOutput()
    globals_ = wrap_namespace(namespace)
    globals_["__builtins__"] = make_builtins(output)
    globals_["__name__"] = "__program__"
    outcome = {"status": "ok", "answer": None, "error": None, "raw_type": None}
    start = time.perf_counter()
    try:
        try:
            timer.arm(timeout_s, cpu_time_s)
            exec(report.code, globals_)
            function = globals_.get(entry)
            if not callable(function):
                outcome.update(status="compile_error", error=format_error(
                    f"the program does not define {entry}(image)"))
            else:
                value = function(image)
                outcome["raw_type"] = type(value).__name__
                answer = to_answer(value)
                outcome["answer"] = None if answer is None else cap_text(answer, MAX_ANSWER_CHARS)
        finally:
            timer.disarm()
    except BaseException as exc:  # noqa: B036 - the program may raise anything
        status, error = classify(exc)
        outcome.update(status=status, error=error, answer=None)
        exc.__traceback__ = None
    if timer.fired and outcome["status"] != "timeout":
        # The program swallowed the timeout (a bare except); it still timed out.
        outcome.update(status="timeout", answer=None, error=format_error(f"Timeout: {timer.fired}"))
    if guard is not None and report.mutates_attributes:
        guard.restore()
    outcome["duration_s"] = time.perf_counter() - start
    outcome["stdout"] = output.text()
    return outcome
