"""Runtime guards a program's code calls instead of the raw attribute machinery.

Every guard copies what it is given to an exact built-in type before checking it (a
``str`` subclass that lies in ``startswith`` or ``__eq__`` is checked, and then used,
as the plain string it really holds), and decides by exact types, never by methods
of the object it checks.

Attribute writes: the static policy refuses writes to modules, tools and builtins by
name; these guards refuse them by ownership, however the object was reached. A
program may set or delete attributes only on objects it made: instances of its own
classes, its classes, its functions. Shared classes are immutable anyway (hygiene.py),
but shared functions and shared instances are not.
"""
from __future__ import annotations

import functools
import types

from .policy import attribute_refusal
from .results import exact_str, type_name

PROGRAM_FILENAME = "<program>"
_FLAGS = type.__dict__["__flags__"]
_QUALNAME = type.__dict__["__qualname__"]
_HEAPTYPE, _IMMUTABLETYPE = 1 << 9, 1 << 8


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


def program_owned(obj) -> bool:
    """Whether ``obj`` was made by the running program (or is otherwise its own)."""
    cls = obj if issubclass(type(obj), type) else type(obj)
    flags = _FLAGS.__get__(cls)
    if flags & _HEAPTYPE and not flags & _IMMUTABLETYPE:
        return True
    if type(obj) is types.FunctionType:
        return types.FunctionType.__code__.__get__(obj).co_filename == PROGRAM_FILENAME
    return False


def _require_owned(obj, name: str) -> None:
    if not program_owned(obj):
        what = (f"the shared class {exact_str(_QUALNAME.__get__(obj))}"
                if issubclass(type(obj), type) else f"a shared {type_name(obj)} object")
        raise AttributeError(f"cannot set or delete '{name}' on {what}: "
                             "programs may change only objects they made")


def guarded_getattr(obj, name, *default):
    return getattr(obj, checked_name(name), *default)


def guarded_hasattr(obj, name) -> bool:
    return hasattr(obj, checked_name(name))


def guarded_setattr(obj, name, value) -> None:
    name = checked_name(name)
    _require_owned(obj, name)
    setattr(obj, name, value)


def guarded_delattr(obj, name) -> None:
    name = checked_name(name)
    _require_owned(obj, name)
    delattr(obj, name)


class AttributeTarget:
    """What ``obj.name = value`` / ``del obj.name`` / ``obj.name += v`` compile to in a
    program (policy.py rewrites the target into ``__vprl_attr__(obj)['name']``), so
    the ownership check holds in every binding form: plain and augmented assignment,
    tuple unpacking, ``for`` and ``with`` targets, comprehensions."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __getitem__(self, name):
        return getattr(self.obj, checked_name(name))

    def __setitem__(self, name, value):
        guarded_setattr(self.obj, name, value)

    def __delitem__(self, name):
        guarded_delattr(self.obj, name)


def update_wrapper(wrapper, wrapped, assigned=functools.WRAPPER_ASSIGNMENTS,
                   updated=functools.WRAPPER_UPDATES):
    """``functools.update_wrapper`` for programs: the wrapper must be the program's own,
    and only the standard names may be copied (the real one copies any attribute named
    in ``assigned`` or ``updated``, dunders included, onto any object)."""
    assigned, updated = tuple(assigned), tuple(updated)
    if not (set(assigned) <= set(functools.WRAPPER_ASSIGNMENTS)
            and set(updated) <= set(functools.WRAPPER_UPDATES)
            and all(type(n) is str for n in assigned + updated)):
        raise AttributeError("update_wrapper may copy only the standard attributes "
                             f"{functools.WRAPPER_ASSIGNMENTS + functools.WRAPPER_UPDATES}")
    _require_owned(wrapper, "__wrapped__")
    return functools.update_wrapper(wrapper, wrapped, assigned, updated)


def wraps(wrapped, assigned=functools.WRAPPER_ASSIGNMENTS, updated=functools.WRAPPER_UPDATES):
    return functools.partial(update_wrapper, wrapped=wrapped, assigned=assigned, updated=updated)


# Module attributes programs get in place of the real ones (ModuleView looks here).
REPLACEMENTS = {("functools", "update_wrapper"): update_wrapper, ("functools", "wraps"): wraps}
