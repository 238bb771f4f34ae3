"""The in-worker half of the sandbox: the world a program sees, and one run of it.

A program gets a fresh globals dict per run: a new tools namespace, a restricted
copy of builtins (with the guards of guards.py), and read-only views of modules.
What else keeps programs apart is in hygiene.py.
"""
from __future__ import annotations

import builtins
import dis
import importlib
import sys
import time
import types

import numpy as np

from .rules import ALLOWED_MODULES, DENIED_NAMES, attribute_refusal, module_refusal
from .limits import ProgramTimeout, SoftTimer
from .results import (MAX_ANSWER_CHARS, cap_text, describe_exception, format_error,
                      to_answer, type_name)
from . import guards

STDOUT_CAP = 4096
STDOUT_MARKER = "\n...[output truncated: {} more characters]"
PROGRAM_FILENAME = guards.PROGRAM_FILENAME


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
        name = guards.checked_name(name)
        replacement = guards.REPLACEMENTS.get((module.__name__, name))
        if replacement is not None:
            return replacement
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            if value.__name__ not in ALLOWED_MODULES:
                raise AttributeError(f"module '{value.__name__}' is not available to programs")
            return ModuleView(value)
        return _read_only(value)

    def __setattr__(self, name, value):
        raise AttributeError("modules are read-only inside programs")

    def __delattr__(self, name):
        raise AttributeError("modules are read-only inside programs")

    def __dir__(self):
        module = object.__getattribute__(self, "_module")
        return [n for n in dir(module) if attribute_refusal(n) is None]

    def __repr__(self):
        return f"<module '{object.__getattribute__(self, '_module').__name__}'>"


def _read_only(value):
    """Module-level containers are shared by every program: hand out read-only copies
    (``np.typecodes``, ``string``'s tables, registries) so none can be changed in place."""
    kind = type(value)
    if kind is dict:
        return types.MappingProxyType(dict(value))
    if kind is list:
        return tuple(value)
    if kind is set:
        return frozenset(value)
    if kind is bytearray:
        return bytes(value)
    if kind is np.ndarray:
        copy = value.copy()
        copy.setflags(write=False)
        return copy
    return value


def make_module_views() -> None:
    """Create the views of every allowed module now (in the zygote), so that no program
    leaves a new one behind in the view cache."""
    for name in ALLOWED_MODULES:
        ModuleView(importlib.import_module(name))


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    caller = sys._getframe(1)
    filename = caller.f_code.co_filename
    if (filename == PROGRAM_FILENAME and caller.f_code.co_code[caller.f_lasti] != _IMPORT_NAME) \
            or not filename.startswith("<"):
        # Not an import statement of the program: C code (numpy's lazy
        # ``numpy._core._methods``, for one) imports through the builtins of
        # the calling frame, which are ours. It needs the real module, and the
        # program never sees the value, so this goes to the real import. Code
        # compiled from a string elsewhere (``<string>``: what a library evaluates,
        # such as an annotation) gets the program's rules, not this way out.
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
_SAFE_BUILTINS.update(__import__=_guarded_import, getattr=guards.guarded_getattr,
                      hasattr=guards.guarded_hasattr, setattr=guards.guarded_setattr,
                      delattr=guards.guarded_delattr, type=guards.TYPE,
                      __build_class__=guards.build_class, __name__="builtins",
                      __vprl_attr__=guards.AttributeTarget,
                      __vprl_format__=guards.format_attribute)


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
                timeout_s: float, cpu_time_s: float | None) -> dict:
    """Run one checked program on one image; returns the result as a plain dict.

    Everything that can run the program's own code -- the program, ``str()`` of what it
    returns, ``str()`` of what it raises, finalisers of what it leaves behind -- runs
    while its timer is armed, so none of it can outlast the program's time limit.
    """
    output = CappedOutput()
    globals_ = wrap_namespace(namespace)
    globals_["__builtins__"] = make_builtins(output)
    globals_["__name__"] = "__program__"
    outcome = None
    start = time.perf_counter()
    timer.arm(timeout_s, cpu_time_s)
    try:
        outcome = _execute(report.code, globals_, image, entry)
        globals_.clear()  # the program's objects die (and their __del__ runs) on its time
        timer.armed = False
    except BaseException:  # noqa: B036 - reporting the program's failure was itself stopped
        timer.armed = False  # first: no timer signal may interrupt what follows
    timer.disarm()
    if timer.fired:
        # The program ran past its limit (perhaps swallowing the first timeout).
        outcome = {"status": "timeout", "answer": None, "raw_type": None,
                   "error": format_error(f"Timeout: {timer.fired}")}
    elif outcome is None:
        outcome = {"status": "runtime_error", "answer": None, "raw_type": None,
                   "error": format_error("the program's error could not be reported")}
    outcome["duration_s"] = time.perf_counter() - start
    outcome["stdout"] = output.text()
    return outcome


def _execute(code, globals_: dict, image, entry: str) -> dict:
    try:
        exec(code, globals_)
        function = globals_.get(entry)
        if not callable(function):
            return {"status": "compile_error", "answer": None, "raw_type": None,
                    "error": format_error(f"the program does not define {entry}(image)")}
        value = function(image)
        answer = to_answer(value)
        return {"status": "ok", "answer": None if answer is None else cap_text(answer, MAX_ANSWER_CHARS),
                "raw_type": type_name(value), "error": None}
    except BaseException as exc:  # noqa: B036 - the program may raise anything
        status, error = classify(exc)
        exc.__traceback__ = None
        return {"status": status, "answer": None, "raw_type": None, "error": error}
