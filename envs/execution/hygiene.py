"""No state crosses programs: what a child resets and verifies between programs.

A child runs several programs (``max_tasks_per_worker``); between two of them the
interpreter must be what the zygote left. The design (docs/threat_model.md):

- shared classes cannot change at all: every class that exists when the zygote is
  frozen gets CPython's immutable-type flag, so ``setattr``, ``update_wrapper``,
  decorators and anything else that writes a class attribute fail for everyone;
- settings held in context variables (numpy's error, print and buffer settings, the
  current decimal context) live in a copy of the zygote's context per program;
- the global random generators are put back to the zygote's state after each program;
- a program that leaves anything behind is detected, and its child retired (the
  zygote forks a clean one in milliseconds): any object the program made (an instance
  of its class, its class, function, generator or frame) still alive after a full
  garbage collection -- something kept it: a cache keyed by its object, a registry, a
  finaliser, a library object it was attached to --, any ABC registration (the global
  ABC token moved), a change to decimal's template contexts, an extra thread, or a
  change to a container or object that library classes and modules share
  (library_state.py; the shared arrays among them are read-only to begin with).
  Objects that survive without being the program's (the tools' result caches) are
  frozen after each check, so a check only ever looks at what the last program left.

Everything else a program could change it reaches only through an escape from the
Python layers; ``max_tasks_per_worker=1`` (a fresh child per program) covers that too.
"""
from __future__ import annotations

import abc
import contextvars
import ctypes
import decimal
import gc
import random
import threading
import types

import numpy as np

_HEAPTYPE, _IMMUTABLETYPE = 1 << 9, 1 << 8
_MT_STATE_BYTES = 624 * 4 + 4  # mt19937_state: uint32 key[624]; int pos


def _flags_word(cls: type) -> ctypes.c_ulong:
    """``tp_flags`` of a type object, found by its known value (not a hard-coded offset)."""
    flags = cls.__flags__
    base = id(cls)
    for offset in range(8 * 16, 8 * 32, 8):
        word = ctypes.c_ulong.from_address(base + offset)
        if word.value == flags:
            return word
    raise RuntimeError("cannot locate tp_flags in this CPython's type objects")


def freeze_classes() -> int:
    """Make every heap type that exists now immutable; returns how many were frozen.

    A class created later (by a program, or a new tools namespace) stays mutable: it
    belongs to one program and dies with it."""
    frozen = 0
    probe = type("_Probe", (), {})
    offset = ctypes.addressof(_flags_word(probe)) - id(probe)
    for obj in gc.get_objects():
        if isinstance(obj, type):
            flags = type.__dict__["__flags__"].__get__(obj)
            if flags & _HEAPTYPE and not flags & _IMMUTABLETYPE:
                word = ctypes.c_ulong.from_address(id(obj) + offset)
                if word.value != flags:  # not where every other type keeps it: leave it
                    continue
                word.value = flags | _IMMUTABLETYPE
                frozen += 1
    return frozen


def _decimal_templates() -> tuple:
    return tuple(repr(c) for c in (decimal.DefaultContext, decimal.BasicContext,
                                   decimal.ExtendedContext))


class Hygiene:
    """Taken in the zygote once it is frozen; each child checks itself against it."""

    def __init__(self, shared_state=None):
        self.shared_state = shared_state  # library_state.SharedState: shared containers
        self.context = contextvars.copy_context()
        self.random_state = random.getstate()
        self.numpy_state = np.random.get_state()
        # numpy's global generator: its raw state, compared each time (a memcmp), so the
        # slow set_state runs only after a program that drew from it.
        self._mt_address = np.random.mtrand._rand._bit_generator.ctypes.state_address
        self._mt_bytes = ctypes.string_at(self._mt_address, _MT_STATE_BYTES)
        self.decimal = _decimal_templates()
        self.abc_token = abc.get_cache_token()
        self.threads = threading.active_count()

    def run(self, fn, *args):
        """``fn(*args)`` in a fresh copy of the zygote's context, with its own decimal
        context (the template contexts stay untouched unless a program writes them)."""
        def body():
            decimal.setcontext(decimal.Context())
            return fn(*args)
        return self.context.copy().run(body)

    def reset(self) -> None:
        random.setstate(self.random_state)
        if ctypes.string_at(self._mt_address, _MT_STATE_BYTES) != self._mt_bytes:
            np.random.set_state(self.numpy_state)

    def start(self) -> None:
        """In a new child, before its first program. Python reseeds ``random`` in every
        forked child; the reset makes the first program start where every other does."""
        self.reset()
        gc.collect()
        gc.freeze()

    def clean(self) -> bool:
        """Whether the last program left the interpreter as the zygote made it."""
        gc.collect()
        left = [obj for obj in gc.get_objects() if program_made(obj)]
        gc.freeze()
        return (not left and abc.get_cache_token() == self.abc_token
                and _decimal_templates() == self.decimal
                and threading.active_count() == self.threads
                and (self.shared_state is None or self.shared_state.unchanged()))


_FLAGS = type.__dict__["__flags__"]
_PROGRAM = "<program>"
_CODE_OF = {types.FunctionType: types.FunctionType.__code__.__get__,
            types.GeneratorType: types.GeneratorType.gi_code.__get__,
            types.CoroutineType: types.CoroutineType.cr_code.__get__,
            types.AsyncGeneratorType: types.AsyncGeneratorType.ag_code.__get__,
            types.FrameType: types.FrameType.f_code.__get__}


def program_made(obj) -> bool:
    """Whether ``obj`` is (an instance of) a class created after the freeze, or a
    function, generator or frame of the program's code."""
    kind = type(obj)
    cls = obj if issubclass(kind, type) else kind
    flags = _FLAGS.__get__(cls)
    if flags & _HEAPTYPE and not flags & _IMMUTABLETYPE:
        return True
    code_of = _CODE_OF.get(kind)
    return code_of is not None and code_of(obj).co_filename == _PROGRAM
