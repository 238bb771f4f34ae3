"""Registry of perception backends, by name (one registry per extension point)."""
from __future__ import annotations

import importlib
from typing import Callable

_FACTORIES: dict[str, "Callable | str"] = {}


def register_backend(name: str, factory, overwrite: bool = False) -> None:
    """``factory(**kwargs) -> Backend``, or a dotted path "pkg.mod:attr" loaded on first use
    (so heavy backends cost nothing until asked for)."""
    if not isinstance(name, str) or not name:
        raise ValueError("backend name must be a non-empty string")
    if name in _FACTORIES and not overwrite and _FACTORIES[name] is not factory:
        raise ValueError(f"tool backend {name!r} is already registered; pass overwrite=True "
                         "to replace it")
    _FACTORIES[name] = factory


def available_backends() -> list[str]:
    return sorted(_FACTORIES)


def get_backend(name: str, **kwargs):
    """A new backend instance."""
    if name not in _FACTORIES:
        raise ValueError(f"unknown tool backend {name!r}; available: "
                         f"{', '.join(available_backends()) or 'none'}. Register one with "
                         "envs.tools.register_backend(name, factory).")
    factory = _FACTORIES[name]
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        _FACTORIES[name] = factory
    return factory(**kwargs)
