"""State that library classes and objects share between programs, sealed or verified.

A child runs many programs. Classes are immutable (hygiene.freeze_classes) and module
views hand out read-only copies of module-level containers, but neither covers what a
class or a shared object *holds*: ``numpy.polynomial.Polynomial.window`` is a writeable
array every program reaches as ``Polynomial.window``, and an in-place write
(``window.put(0, 5)``, ``np.add(w, 1, out=w)``) would change the default of every later
program on that child. Likewise a shared library object whose methods change it
(``numpy.ma.masked_print_option.set_display``).

So, once in the zygote, everything a program can reach by public attribute names from
an allowed module or the tools namespace is walked:

- writeable arrays are made read-only (the library only reads them; writing raises)
  and remembered too: an array that owns its memory can be made writeable again;
- mutable containers (list, dict, set, bytearray, deque and their subclasses) and the
  attribute dicts of shared objects are remembered with a shallow copy; after each
  program the child compares them (by identity of what they hold, never by calling a
  program's ``__eq__``) and retires itself on any difference (hygiene.Hygiene.clean).
  Dicts, nearly all of what is watched, are checked by CPython's per-dict version stamp
  (PEP 509) where the interpreter keeps one, else by the ids of what they hold: the
  check costs tens of microseconds a program, not hundreds.
"""
from __future__ import annotations

import collections
import importlib
import sys
import types
from itertools import chain

import numpy as np

from .rules import ALLOWED_MODULES, attribute_refusal

MAX_DEPTH = 5  # attribute hops; measured (numpy 2.4, CPython 3.11): nothing new past 3
_CONTAINERS = (list, dict, set, bytearray, collections.deque)
# Values that are immutable, or whose changes other layers see (types are frozen,
# modules are views, descriptors live in frozen classes), or C objects without
# Python-visible state: the walk stops there.
_STOP = (int, float, complex, str, bytes, bool, type(None), range, slice, frozenset,
         type(Ellipsis), type(NotImplemented), types.ModuleType, types.BuiltinFunctionType,
         types.MethodDescriptorType, types.WrapperDescriptorType, types.GetSetDescriptorType,
         types.MemberDescriptorType, types.MethodWrapperType, types.MappingProxyType,
         np.ufunc, np.dtype, np.generic)


def _public(name) -> bool:
    return type(name) is str and attribute_refusal(name) is None


def walk(roots: dict):
    """Yield ``(path, obj)`` for every object reachable from ``roots`` (name -> object)
    through public attribute names, class dictionaries (along the MRO) and container
    items, up to MAX_DEPTH hops. Module-level containers are walked into but not
    yielded themselves: programs only ever get copies of them (runtime._read_only)."""
    seen: set[int] = set()
    stack = []
    for name, value in roots.items():
        if type(value) in (dict, list, set, bytearray, np.ndarray):
            seen.add(id(value))
            stack.extend((f"{name}[{key!r}]", item, 1) for key, item in _items(value))
        else:
            stack.append((name, value, 0))
    while stack:
        path, obj, depth = stack.pop()
        if id(obj) in seen or depth > MAX_DEPTH:
            continue
        seen.add(id(obj))
        if isinstance(obj, tuple):
            stack.extend((f"{path}[{i}]", item, depth + 1) for i, item in enumerate(obj))
            continue
        if isinstance(obj, _STOP):
            continue
        yield path, obj
        if isinstance(obj, np.ndarray):
            if obj.dtype.hasobject:
                stack.extend((f"{path}[{i}]", item, depth + 1) for i, item
                             in enumerate(np.ndarray.tolist(np.ndarray.ravel(obj))))
            continue
        if isinstance(obj, _CONTAINERS):
            stack.extend((f"{path}[{key!r}]", item, depth + 1) for key, item in _items(obj))
            continue
        if isinstance(obj, type):
            for klass in type.__dict__["__mro__"].__get__(obj):
                for name, value in vars(klass).items():
                    if _public(name):
                        if isinstance(value, (staticmethod, classmethod)):
                            value = value.__func__
                        stack.append((f"{path}.{name}", value, depth + 1))
            continue
        attributes = _instance_dict(obj)
        if attributes is not None:
            stack.extend((f"{path}.{name}", value, depth + 1)
                         for name, value in list(attributes.items()) if _public(name))


def _items(container):
    if isinstance(container, dict):
        return list(container.items())
    if isinstance(container, (set, bytearray)):
        return []  # set members are hashable, bytearray items are ints: nothing to reach
    if isinstance(container, np.ndarray):
        return []
    return list(enumerate(container))


_HEAPTYPE = 1 << 9


def _python_class(cls: type) -> bool:
    return bool(type.__dict__["__flags__"].__get__(cls) & _HEAPTYPE)


def _instance_dict(obj):
    try:
        attributes = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return None
    return attributes if type(attributes) is dict else None


def roots(namespace: dict | None = None) -> dict:
    """The allowed modules' public attributes, and the tools namespace's values."""
    found = {}
    for module_name in sorted(ALLOWED_MODULES):
        module = importlib.import_module(module_name)
        for name in dir(module):
            if _public(name):
                value = getattr(module, name, None)
                if not isinstance(value, types.ModuleType):
                    found[f"{module_name}.{name}"] = value
    for name, value in (namespace or {}).items():
        if not isinstance(value, types.ModuleType):
            found[f"tools.{name}"] = value
    return found


class SharedState:
    """Made in the zygote: seals shared arrays, and remembers shared mutable state."""

    def __init__(self, namespace: dict | None = None):
        self.sealed: list[str] = []
        self.watched: list[tuple[str, object, object]] = []  # (path, live object, copy)
        for path, obj in walk(roots(namespace)):
            if isinstance(obj, np.ndarray):
                if obj.flags.writeable:
                    obj.setflags(write=False)
                    self.sealed.append(path)
                # An array that owns its memory can be made writeable again: the flag
                # turns honest writes into errors, the comparison catches the rest.
                self.watched.append((path, obj, _snapshot(obj)))
            elif isinstance(obj, _CONTAINERS):
                self.watched.append((path, obj, _snapshot(obj)))
            elif _python_class(type(obj)) and not isinstance(obj, (types.FunctionType,
                                                                  types.MethodType)):
                # Instances of classes written in C (numpy's function dispatchers) change
                # their dict only by attribute writes, which the guards refuse on shared
                # objects; a Python class's own methods may write theirs.
                attributes = _instance_dict(obj)
                if attributes:
                    self.watched.append((path, attributes, _snapshot(attributes)))

        # The check after each program reads the dicts' version stamps, or else the ids
        # of what they hold, in order (`watched` keeps those objects alive: no id can be
        # reused). Most programs change nothing; `changed` names the paths, slowly.
        self._dicts = [live for _, live, _ in self.watched if type(live) is dict]
        self._dict_ids = _held_ids(self._dicts)
        self._stamps = _DictStamps(self._dicts) if _STAMP_OFFSET is not None else None
        # Arrays: their bytes and flag (shape and dtype change only by attribute writes,
        # which the guards refuse on shared objects).
        self._arrays = [live for _, live, _ in self.watched
                        if isinstance(live, np.ndarray) and not live.dtype.hasobject]
        self._array_bytes = _array_contents(self._arrays)
        self._others = [(live, copy) for _, live, copy in self.watched
                        if type(live) is not dict and not any(live is a for a in self._arrays)]

    def unchanged(self) -> bool:
        """Whether every watched array, container and object holds what it held."""
        dicts_same = (self._stamps.same() if self._stamps is not None
                      else _held_ids(self._dicts) == self._dict_ids)
        return (dicts_same
                and _array_contents(self._arrays) == self._array_bytes
                and all(_same(live, copy) for live, copy in self._others))

    def changed(self) -> list[str]:
        """Paths of the watched containers and objects whose contents differ now."""
        return [path for path, live, copy in self.watched if not _same(live, copy)]


def _stamp_offset() -> int | None:
    """Where CPython keeps a dict's version tag (PEP 509: a 64-bit stamp that every write
    to the dict changes, value replacements included), found by writing to a probe dict;
    None where this interpreter keeps no such stamp there (free-threaded or debug builds,
    3.14's dicts), and the comparison of ids is used instead."""
    import ctypes
    import sysconfig

    if sysconfig.get_config_var("Py_GIL_DISABLED") or hasattr(sys, "gettotalrefcount"):
        return None
    offset = 3 * ctypes.sizeof(ctypes.c_ssize_t)  # after ob_refcnt, ob_type, ma_used
    probe = {"a": object()}
    word = ctypes.c_uint64.from_address(id(probe) + offset)
    first, again = word.value, word.value
    probe["a"] = object()  # the size stays: only a version tag moves
    second = word.value
    probe["a"] = probe["a"]  # the same object again: no write
    third = word.value
    return offset if first == again and second != first and third == second else None


_STAMP_OFFSET = _stamp_offset()


class _DictStamps:
    """The version stamps of the watched dicts, read in one pass (no id lists to build)."""

    def __init__(self, dicts: list):
        import ctypes

        self.words = [ctypes.c_uint64.from_address(id(d) + _STAMP_OFFSET) for d in dicts]
        self.values = [word.value for word in self.words]

    def same(self) -> bool:
        return [word.value for word in self.words] == self.values


def _array_contents(arrays: list) -> list:
    return [(np.ndarray.tobytes(a), a.flags.writeable) for a in arrays]


def _held_ids(dicts: list) -> tuple[list, list]:
    # Sizes too: an item moving from the end of one dict to the start of the next would
    # leave the flat sequence alone.
    return (list(map(len, dicts)),
            list(map(id, chain.from_iterable(chain.from_iterable(map(dict.items, dicts))))))


def _snapshot(container):
    """What ``container`` holds, by identity: nothing a program wrote (a key's ``__eq__``
    or ``__hash__``) runs when it is compared later, outside the program's time limit."""
    if isinstance(container, np.ndarray):
        # ndarray's own methods: a subclass (numpy.ma's masked constant) overrides them.
        content = (tuple(np.ndarray.tolist(np.ndarray.ravel(container)))
                   if container.dtype.hasobject else np.ndarray.tobytes(container))
        return container.shape, container.dtype, container.flags.writeable, content
    if isinstance(container, dict):
        return tuple(dict.items(container))
    if isinstance(container, set):
        return frozenset(map(id, set.__iter__(container)))
    if isinstance(container, bytearray):
        return bytes(container)
    return tuple(container)


def _same(live, copy) -> bool:
    if isinstance(live, np.ndarray):
        now = _snapshot(live)
        if live.dtype.hasobject:
            return now[:3] == copy[:3] and all(a is b for a, b in zip(now[3], copy[3]))
        return now == copy
    if isinstance(live, dict):
        items = tuple(dict.items(live))
        return len(items) == len(copy) and all(
            a is c and b is d for (a, b), (c, d) in zip(items, copy))
    if isinstance(live, set):
        return frozenset(map(id, set.__iter__(live))) == copy
    if isinstance(live, bytearray):
        return bytes(live) == copy
    items = tuple(live)
    return len(items) == len(copy) and all(a is b for a, b in zip(items, copy))
