"""Guards for numpy's raw memory: what programs get for ``numpy.ndarray`` and
``numpy.recarray`` (the classes, without an explicit buffer), and ``ndarray.resize``
withdrawn in the zygote. The attribute and class guards are in ``guards.py``, which hands
these classes out from ``type(array)``.
"""
from __future__ import annotations

import types

from .rules import checked_name


# ---------------------------------------------------------------- numpy raw memory

class _ArrayClass:
    """What programs get for ``numpy.ndarray`` and ``numpy.recarray`` (from the numpy
    view, from ``type(array)``, as a base class): the real class, except that it cannot
    be built over an explicit buffer. numpy accepts an object-dtype array or a negative
    offset over a ``bytearray``; either reads or forges raw memory."""

    __slots__ = ("real", "buffer_arg", "buffer_position", "subclassable")

    def __init__(self, real: type, buffer_arg: str, buffer_position: int):
        self.real = real
        self.buffer_arg = buffer_arg
        self.buffer_position = buffer_position
        # Subclasses a program derives inherit a __new__ that makes the same check.
        check = self._check

        def checked_new(cls, *args, **kwargs):
            check(args, kwargs)
            return real.__new__(cls, *args, **kwargs)
        self.subclassable = type(real.__name__, (real,), {"__new__": checked_new,
                                                           "__module__": real.__module__})

    def _check(self, args, kwargs) -> None:
        given = (args[self.buffer_position] if len(args) > self.buffer_position else None,
                 kwargs.get(self.buffer_arg))
        if any(value is not None for value in given):
            raise TypeError(f"numpy.{self.real.__name__}({self.buffer_arg}=...) is not "
                            "available in programs (it reads memory outside the buffer)")

    def __call__(self, *args, **kwargs):
        self._check(args, kwargs)
        return self.real(*args, **kwargs)

    def __instancecheck__(self, obj):
        return isinstance(obj, self.real)

    def __subclasscheck__(self, cls):
        return issubclass(cls.real if type(cls) is _ArrayClass else cls, self.real)

    def __mro_entries__(self, bases):
        return (self.subclassable,)

    def __getitem__(self, item):
        return types.GenericAlias(self, item)

    def __getattr__(self, name):
        return getattr(self.real, checked_name(name))

    def __eq__(self, other):
        return other is self or other is self.real

    def __hash__(self):
        return hash(self.real)

    def __repr__(self):
        return repr(self.real)


def _array_classes() -> dict:
    import numpy as np

    return {np.ndarray: _ArrayClass(np.ndarray, "buffer", 2),
            np.recarray: _ArrayClass(np.recarray, "buf", 2)}


ARRAY_CLASSES = _array_classes()
# What runtime.ModuleView hands out for these names of the numpy module (merged into guards.REPLACEMENTS).
REPLACEMENTS = {("numpy", cls.__name__): proxy for cls, proxy in ARRAY_CLASSES.items()}


# ---------------------------------------------------------------- numpy buffer lifetime

def _array_resize(self, *new_shape, refcheck=True):
    """What ``ndarray.resize`` is in a child: refused. It reallocates the array's buffer
    in place; with ``refcheck=False`` it frees memory that live views still read and write
    (a program forges object references from there), and a stand-in in Python cannot keep
    numpy's own reference check (its frame holds references numpy would count)."""
    raise TypeError("ndarray.resize is not available in programs (it can free memory that "
                    "views of the array still use); numpy.resize(a, new_shape) returns a "
                    "resized copy")


def withdraw_array_resize() -> None:
    """Replace ``numpy.ndarray.resize`` by :func:`_array_resize` in this process, for every
    way a program reaches it: bound or unbound, through ``type(a)``, a subclass
    (``recarray``, ``matrix``, its own), ``getattr`` or a class pattern. Only the zygote
    calls this, before it forks: the parent's numpy is untouched.

    numpy's classes are static types whose ``__dict__`` Python cannot assign; the mapping
    behind the read-only proxy is reached through the garbage collector, and the type's
    method cache is invalidated afterwards."""
    import ctypes
    import gc

    import numpy as np

    [namespace] = [d for d in gc.get_referents(np.ndarray.__dict__) if type(d) is dict]
    namespace["resize"] = _array_resize
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(np.ndarray))
