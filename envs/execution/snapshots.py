"""Shared classes and their snapshots.

Tools and allowed modules hand programs the same class objects run after run.
A program that changes one (``C = collections.Counter; C.most_common = ...``)
would change it for every later program in that worker, so the worker
snapshots these classes at warm-up and restores them after any program that
assigns attributes.
"""
from __future__ import annotations

import importlib

from .policy import ALLOWED_MODULES

# Classes programs share; the guarded setattr/delattr refuse to touch them.
SHARED_CLASSES: set = set()
_MISSING = object()
_IMMUTABLETYPE, _HEAPTYPE = 1 << 8, 1 << 9


class ClassGuard:
    """Snapshots of the classes programs share (tools, classes in allowed modules);
    ``restore()`` undoes any change a program made to them."""

    def __init__(self, namespace: dict):
        classes = {v for v in namespace.values() if isinstance(v, type)}
        for name in ALLOWED_MODULES:
            module = importlib.import_module(name)
            classes.update(v for v in vars(module).values() if isinstance(v, type))
        # Only heap types without Py_TPFLAGS_IMMUTABLETYPE can be changed at all.
        self.snapshots = [(cls, dict(vars(cls))) for cls in classes
                          if cls.__flags__ & _HEAPTYPE and not cls.__flags__ & _IMMUTABLETYPE]
        SHARED_CLASSES.update(classes)

    def restore(self) -> int:
        changed = 0
        for cls, snapshot in self.snapshots:
            current = vars(cls)
            if len(current) == len(snapshot) and all(
                    current.get(k, _MISSING) is v for k, v in snapshot.items()):
                continue
            changed += 1
            for key in [k for k in current if k not in snapshot]:
                try:
                    delattr(cls, key)
                except (AttributeError, TypeError):
                    pass
            for key, value in snapshot.items():
                if current.get(key, _MISSING) is not value:
                    try:
                        setattr(cls, key, value)
                    except (AttributeError, TypeError):
                        pass
        return changed


_MISSING = object()
_IMMUTABLETYPE, _HEAPTYPE = 1 << 8, 1 << 9
