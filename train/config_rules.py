"""The rules a config field carries in its annotation (see train/config.py), and the
"did you mean" that every config error shares.

    Positive[float]   Annotated[float, Range(gt=0)]      NonNegative, AtLeast1, Fraction likewise
    NonEmpty[list[X]] Annotated[list[X], MinLen(1)]
    Registered[str, "module:registry"]   a name a registry (that plug-ins extend) must know

`Range` and `MinLen` are checked when the config is loaded; `OneOf` when
`train.setup.validate` runs, after plug-ins had their chance to register names.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Annotated


class ConfigError(ValueError):
    """A configuration mistake; its message is one line naming the fix."""


@dataclass(frozen=True)
class Range:
    """Bounds on a number."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def describe(self) -> str:
        parts = [f"{op} {bound:g}" for op, bound in ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
                 if bound is not None]
        return " and ".join(parts)

    def check(self, value, where: str) -> None:
        ok = ((self.ge is None or value >= self.ge) and (self.gt is None or value > self.gt)
              and (self.le is None or value <= self.le) and (self.lt is None or value < self.lt))
        if not ok:
            raise ConfigError(f"{where} must be {self.describe()}, got {value!r}; fix the value in your config")


@dataclass(frozen=True)
class MinLen:
    """At least `n` items (a list) or characters (a string)."""

    n: int = 1

    def describe(self) -> str:
        return "non-empty" if self.n == 1 else f"at least {self.n} long"

    def check(self, value, where: str) -> None:
        if len(value) < self.n:
            raise ConfigError(f"{where} must be {self.describe()}, got {value!r}; fix the value in your config")


@dataclass(frozen=True)
class OneOf:
    """A name from a registry that plug-ins can extend: `module:attr` is a collection of
    names or a function returning one. Looked up by `check_registered`, not at load time."""

    registry: str
    what: str = ""  # e.g. "per-question metric": said when a name is refused

    def names(self) -> list[str]:
        module, _, attr = self.registry.partition(":")
        found = getattr(importlib.import_module(module), attr)
        return sorted(found() if callable(found) else found)

    def describe(self) -> str:
        try:
            return "one of " + ", ".join(self.names())
        except Exception:  # help must print even when a registry cannot be imported
            return f"a name from {self.registry}"


class _Rule:
    """`Positive[float]` is `Annotated[float, Range(gt=0)]`: a short spelling for the dataclasses."""

    def __init__(self, *rules):
        self.rules = rules

    def __getitem__(self, tp):
        return Annotated[(tp, *self.rules)]


class _Registered:
    def __getitem__(self, args):
        tp, *registry = args
        return Annotated[tp, OneOf(*registry)]


Positive = _Rule(Range(gt=0))
NonNegative = _Rule(Range(ge=0))
AtLeast1 = _Rule(Range(ge=1))
Fraction = _Rule(Range(ge=0, le=1))
NonEmpty = _Rule(MinLen(1))
Registered = _Registered()


def did_you_mean(word: str, choices) -> str:
    """' (did you mean 'x'?)' when a choice is close to `word`, else ''."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
