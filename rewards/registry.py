"""The one registry of reward functions.

A reward has TRL's signature, `fn(prompts, completions, **columns) -> list[float | None]`,
so the same callable plugs into `trl.GRPOTrainer(reward_funcs=...)`. Configs name a
reward by its registered name or by a dotted path `package.module:function`.
"""

from __future__ import annotations

import importlib
from typing import Callable

RewardFn = Callable[..., list]
_REGISTRY: dict[str, RewardFn | str] = {}


def register(name: str, fn: RewardFn | str | None = None):
    """Register `fn` (a callable or "pkg.mod:fn") under `name`; usable as a decorator."""

    def _add(f):
        if name in _REGISTRY and _REGISTRY[name] is not f:
            raise ValueError(f"reward {name!r} is already registered; pick another name")
        _REGISTRY[name] = f
        return f

    return _add if fn is None else _add(fn)


def _import_dotted(path: str) -> RewardFn:
    module, _, attr = path.partition(":")
    if not attr:
        module, _, attr = path.rpartition(".")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as e:
        raise KeyError(f"cannot import reward {path!r} ({e}); use 'package.module:function'") from None
    if not callable(fn):
        raise KeyError(f"reward {path!r} is not callable")
    return fn


def get(name: str) -> RewardFn:
    entry = _REGISTRY.get(name)
    if entry is None:
        if ":" in name or "." in name:
            return _import_dotted(name)
        raise KeyError(
            f"unknown reward {name!r}; known: {', '.join(available())} "
            "(or give a dotted path 'package.module:function')"
        )
    if isinstance(entry, str):
        entry = _REGISTRY[name] = _import_dotted(entry)
    return entry


def available() -> list[str]:
    return sorted(_REGISTRY)
