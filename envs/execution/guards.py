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
import sys
import types

from .numpy_guards import ARRAY_CLASSES, REPLACEMENTS as NUMPY_REPLACEMENTS
from .rules import attribute_refusal, checked_name, namespace_refusal
from .results import exact_str, type_name

PROGRAM_FILENAME = "<program>"
_FLAGS = type.__dict__["__flags__"]
_QUALNAME = type.__dict__["__qualname__"]
_HEAPTYPE, _IMMUTABLETYPE = 1 << 9, 1 << 8


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
    name = checked_name(name)
    if name in ("format", "format_map"):
        try:
            return format_attribute(obj, name)
        except AttributeError:
            if default:
                return default[0]
            raise
    return getattr(obj, name, *default)


def guarded_hasattr(obj, name) -> bool:
    """False for a name programs may not use (as for any attribute they cannot reach)."""
    try:
        name = checked_name(name)
    except AttributeError:
        return False
    return hasattr(obj, name)


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
    program (syntax.py rewrites the target into ``__vprl_attr__(obj)['name']``), so
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


# ---------------------------------------------------------------- format strings

def check_format(fmt: str) -> str:
    """``fmt`` (an exact str) if no replacement field of it reaches a refused attribute
    (``{0.__class__}``, ``{x._secret}``), nested format specs included."""
    import _string

    for _literal, field, spec, _conversion in _string.formatter_parser(fmt):
        if field is not None:
            _first, rest = _string.formatter_field_name_split(field)
            for is_attribute, key in rest:
                if is_attribute:
                    reason = attribute_refusal(key)
                    if reason:
                        raise AttributeError(f"format string: {reason}")
        if spec:
            check_format(spec)
    return fmt


def format_attribute(obj, name: str):
    """What ``obj.format`` / ``obj.format_map`` give a program: for strings (and ``str``
    itself), a version that checks the format string when it is called."""
    method = getattr(obj, name)
    if isinstance(obj, str):
        text = exact_str(obj)
        real = getattr(str, name)
        return lambda *args, **kwargs: real(check_format(text), *args, **kwargs)
    if issubclass(type(obj), type) and issubclass(obj, str):
        real = getattr(str, name)
        return lambda fmt, *args, **kwargs: real(check_format(exact_str(fmt)), *args, **kwargs)
    return method


# ---------------------------------------------------------------- class creation

def checked_namespace(namespace) -> dict:
    """An exact dict copy of a class namespace a program hands to a class factory, or
    TypeError: no special names beyond the safe methods (no array protocols, attribute
    hooks, copy hooks or finalisers on objects library code will handle)."""

    if not isinstance(namespace, dict):
        raise TypeError("a class namespace must be a dict")
    copy = dict(namespace)
    reason = namespace_refusal(list(copy))
    if reason:
        raise TypeError(reason)
    return copy


def _refuse_metaclass_bases(bases) -> None:
    for base in bases:
        if issubclass(type(base), type) and issubclass(base, type):
            raise TypeError("programs may not define metaclasses")


class TypeGuard:
    """The ``type`` programs see. ``type(x)`` is the real class of ``x`` (``type`` itself is
    this guard, so ``type(int) is type`` holds); ``type(name, bases, dict)`` checks the
    namespace first; ``type`` cannot be subclassed or subscripted (both would reach the
    real one)."""

    __slots__ = ()

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs:
            cls = type(args[0])
            if cls is type:
                return self
            if issubclass(cls, type) and cls not in CHECKED_METACLASSES:
                raise TypeError("programs may not use the metaclass of this class")
            return ARRAY_CLASSES.get(cls, cls)
        if len(args) != 3:
            raise TypeError("type() takes 1 or 3 arguments")
        name, bases, namespace = args
        _refuse_metaclass_bases(bases)
        return type(name, bases, checked_namespace(namespace), **kwargs)

    def __instancecheck__(self, obj):
        return isinstance(obj, type)

    def __subclasscheck__(self, cls):
        return issubclass(cls, type)

    def __mro_entries__(self, bases):
        raise TypeError("programs may not define metaclasses")

    def __getattr__(self, name):
        return getattr(type, checked_name(name))

    def __repr__(self):
        return "<class 'type'>"


TYPE = TypeGuard()
# Python-level metaclasses of allowed modules whose __new__ checks namespaces once
# patched (patch_metaclasses, in the zygote before it freezes).
CHECKED_METACLASSES: set = set()


def patch_metaclasses() -> None:
    """Make ``abc.ABCMeta`` and ``enum.EnumType`` check every class namespace they are
    given (class statements, ``ABCMeta(name, bases, dict)``, the functional Enum API)."""
    import abc
    import enum

    for meta in (abc.ABCMeta, enum.EnumType):
        original = meta.__dict__["__new__"]

        def checked_new(mcls, name, bases, namespace, /, _original=original, **kwargs):
            if _for_a_program():

                reason = namespace_refusal(list(namespace))
                if reason:
                    raise TypeError(reason)
                _refuse_metaclass_bases(bases)
            return _original(mcls, name, bases, namespace, **kwargs)

        meta.__new__ = checked_new
        CHECKED_METACLASSES.add(meta)


def _for_a_program() -> bool:
    """Whether a program's code is on the stack (libraries also make classes, lazily)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == PROGRAM_FILENAME:
            return True
        frame = frame.f_back
    return False


def build_class(func, name, *bases, **kwargs):
    """``__build_class__`` for programs: no class statement may derive from a metaclass."""
    import builtins

    _refuse_metaclass_bases(bases)
    return builtins.__build_class__(func, name, *bases, **kwargs)


def make_dataclass(cls_name, fields, *, namespace=None, **kwargs):
    """``dataclasses.make_dataclass`` with the class namespace and field names checked
    (a field named like an array protocol would become an instance attribute)."""
    import dataclasses

    names = [f if isinstance(f, str) else f[0] for f in fields]
    for field_name in names:
        if not (type(field_name) is str and not field_name.startswith("_")):
            raise TypeError(f"dataclass field names must be public names, got {field_name!r}")
    return dataclasses.make_dataclass(cls_name, fields, namespace=checked_namespace(
        namespace or {}), **kwargs)


def _unavailable(what: str, why: str):
    def refuse(*_args, **_kwargs):
        raise AttributeError(f"{what} is not available in programs ({why})")
    return refuse


REPLACEMENTS.update({
    ("dataclasses", "make_dataclass"): make_dataclass,
    # typing.Type calls the real ``type``; singledispatch evaluates annotation strings.
    ("typing", "Type"): _unavailable("typing.Type", "it creates classes unchecked; use type"),
    ("functools", "singledispatch"): _unavailable(
        "functools.singledispatch", "it evaluates annotation strings"),
    ("functools", "singledispatchmethod"): _unavailable(
        "functools.singledispatchmethod", "it evaluates annotation strings"),
})

REPLACEMENTS.update(NUMPY_REPLACEMENTS)
