"""The one registry of reward functions.

A reward has TRL's signature, `fn(prompts, completions, **columns) -> list[float | None]`,
so the same callable plugs into `trl.GRPOTrainer(reward_funcs=...)`. Configs name a
reward by its registered name, by a dotted path `package.module:function`, or by a file
path `my_rewards.py:function` (relative to the working directory; no PYTHONPATH needed).

A reward that keeps state (suite builders, counters, the batches for its W&B table)
is a `Reward` subclass, registered as the class: `get` returns a fresh instance, so
every RewardSet (and every TRL user) holds its own state and no caller overwrites
another's. Its optional hooks are the `Reward` methods below; a plain function may
carry none of them.

Each reward also says which label columns it reads: the ground truth (`answer`,
`answers`) or an oracle (`spec`, a shapes question's meaning). A plain function says
so with `register(..., reads=)`, a `Reward` with `label_columns(kwargs)`; a run whose
rewards read none of them is label-free, and `label_columns` answers that for a
configured reward.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Callable

RewardFn = Callable[..., list]
_REGISTRY: dict[str, RewardFn | type | str] = {}
# name -> the label columns read: a tuple, or fn(reward kwargs) -> tuple when it depends on options.
_READS: dict[str, tuple | Callable[[dict], tuple]] = {}
LABEL_COLUMNS = ("answer", "answers", "spec")  # ground truth, and the oracle meaning of a shapes question


class Reward:
    """A reward with state: call it like a reward function; override the hooks it needs.

    - `check_kwargs(kwargs)`: vet the config's options at start-up (raise ValueError);
    - `metrics() -> dict`: counters, logged as `rewards/<name>/<key>` every iteration;
    - `table_rows() -> list[dict]`: rows of the batches scored since the last call (the
      batch the trainer just trained on), logged as a W&B table (PIL images become images);
    - `uses_labels`: False for a label-free reward (it never reads answer/answers/spec);
    - `label_columns(kwargs) -> tuple`: which of them it reads with these options (by
      default all of them when `uses_labels`, else none).
    """

    name = "reward"       # what TRL logs it as (`__name__`)
    uses_labels = True

    def __init__(self):
        self.__name__ = self.name

    def __call__(self, prompts, completions, **columns) -> list:
        raise NotImplementedError

    def check_kwargs(self, kwargs: dict) -> None:
        pass

    def metrics(self) -> dict:
        return {}

    def table_rows(self) -> list[dict]:
        return []

    def label_columns(self, kwargs: dict) -> tuple[str, ...]:
        return LABEL_COLUMNS if self.uses_labels else ()


def register(name: str, fn: RewardFn | type | str | None = None, *,
             reads: tuple | Callable[[dict], tuple] | None = None):
    """Register `fn` (a callable, a `Reward` class, or "pkg.mod:fn") under `name`;
    usable as a decorator.

    reads: the label columns (`answer`, `answers`, `spec`) the reward reads, or a function
    of the reward's config kwargs returning them. Left out, a `Reward` answers with its
    `label_columns`, and a function's are read off its signature.
    """

    def _add(f):
        if name in _REGISTRY and _REGISTRY[name] is not f:
            raise ValueError(f"reward {name!r} is already registered; pick another name")
        if reads is not None and not callable(reads) and set(reads) - set(LABEL_COLUMNS):
            raise ValueError(f"reads= names columns {sorted(set(reads) - set(LABEL_COLUMNS))}; "
                             f"label columns are {', '.join(LABEL_COLUMNS)}")
        _REGISTRY[name] = f
        if reads is not None:
            _READS[name] = reads
        return f

    return _add if fn is None else _add(fn)


def _import_file(file: str):
    """A module loaded from a .py file, once: its `rewards.register` decorators run once."""
    path = Path(file).resolve()
    if not path.is_file():
        raise ImportError(f"no file {file}")
    for module in list(sys.modules.values()):
        if getattr(module, "__file__", None) and Path(module.__file__).resolve() == path:
            return module
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(path.stem, module)
    spec.loader.exec_module(module)
    return module


def label_columns(name: str, kwargs: dict | None = None, fn=None) -> tuple[str, ...]:
    """The label columns the reward `name`, configured with `kwargs`, reads: () when it
    is label-free. `fn` is the reward already built from `name` (else `get` builds one).

    Undeclared rewards are judged by their signature: the parameters named `answer`,
    `answers` or `spec`, and all three for one that takes only `**columns` (it could
    read anything), unless it carries `uses_labels = False`.
    """
    kwargs = dict(kwargs or {})
    declared = _READS.get(name)
    if declared is None:
        # A config may name a registered reward by its file or dotted path; its register(...,
        # reads=) declaration still holds (found by identity, since the name differs).
        fn = get(name) if fn is None else fn
        declared = next((_READS[n] for n, f in _REGISTRY.items() if f is fn and n in _READS), None)
    if declared is not None:
        return tuple(declared(kwargs) if callable(declared) else declared)
    fn = get(name) if fn is None else fn
    if isinstance(fn, Reward):
        return tuple(fn.label_columns(kwargs))
    if getattr(fn, "uses_labels", None) is False:
        return ()
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return LABEL_COLUMNS
    named = tuple(c for c in LABEL_COLUMNS if c in params)
    opaque = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return named if named or not opaque else LABEL_COLUMNS


def _import_dotted(path: str) -> RewardFn:
    module, _, attr = path.partition(":")
    if not attr:
        module, _, attr = path.rpartition(".")
    try:
        fn = getattr(_import_file(module) if module.endswith(".py") else importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as e:
        raise KeyError(f"cannot import reward {path!r} ({e}); use 'package.module:function' "
                       "or 'path/to/file.py:function'") from None
    if not callable(fn):
        raise KeyError(f"reward {path!r} is not callable")
    return fn


def get(name: str) -> RewardFn:
    """The reward called `name` (or at a dotted path); a class is instantiated, so each
    caller gets its own state."""
    entry = _REGISTRY.get(name)
    if entry is None:
        if ":" in name or "." in name:
            entry = _import_dotted(name)
        else:
            raise KeyError(
                f"unknown reward {name!r}; known: {', '.join(available())} "
                "(or give a dotted path 'package.module:function')"
            )
    elif isinstance(entry, str):
        entry = _REGISTRY[name] = _import_dotted(entry)
    return entry() if inspect.isclass(entry) else entry


def available() -> list[str]:
    return sorted(_REGISTRY)
