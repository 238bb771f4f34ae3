"""Scoring a batch with the configured rewards: weights in one place, failures counted."""

from __future__ import annotations

import inspect
import logging
import math
import traceback
from dataclasses import dataclass, field

from rewards.registry import get

log = logging.getLogger(__name__)


class RewardFailure(RuntimeError):
    """A reward kept raising past the configured limit."""


@dataclass
class RewardSet:
    """The configured rewards, each with a weight and fixed keyword arguments.

    The total is the weighted sum over the parts that apply (`None` means "does not
    apply", as in TRL). A reward that raises is counted, logged with its traceback and
    reported as a failure for that batch, never silently turned into 0; past
    `failure_limit` raising batches the run stops with the traceback.
    """

    specs: list  # RewardSpec-like: .name, .weight, .kwargs
    failure_limit: int = 3
    failures: dict = field(default_factory=dict)
    # Run-level values (e.g. run_dir) handed to the rewards whose signature names them.
    context: dict = field(default_factory=dict)

    def __post_init__(self):
        self.fns = [get(s.name) for s in self.specs]
        self._context = []
        for fn in self.fns:
            try:
                params = inspect.signature(fn).parameters
            except (TypeError, ValueError):
                params = {}
            self._context.append({k: v for k, v in self.context.items() if k in params})

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.specs]

    def score(self, prompts, completions, columns: dict) -> tuple[list[float | None], dict[str, list]]:
        parts: dict[str, list] = {}
        for spec, fn, context in zip(self.specs, self.fns, self._context):
            try:
                values = list(fn(prompts, completions, **columns, **context, **spec.kwargs))
                if len(values) != len(completions):
                    raise ValueError(f"returned {len(values)} values for {len(completions)} completions")
            except Exception:
                count = self.failures[spec.name] = self.failures.get(spec.name, 0) + 1
                tb = traceback.format_exc()
                log.error("reward %r raised (%d/%d):\n%s", spec.name, count, self.failure_limit, tb)
                if count >= self.failure_limit:
                    raise RewardFailure(f"reward {spec.name!r} raised {count} times; last traceback:\n{tb}") from None
                values = [None] * len(completions)
            parts[spec.name] = values
        totals = []
        for i in range(len(completions)):
            applicable = [(s.weight, parts[s.name][i]) for s in self.specs if parts[s.name][i] is not None]
            applicable = [(w, v) for w, v in applicable if not (isinstance(v, float) and math.isnan(v))]
            totals.append(sum(w * v for w, v in applicable) if applicable else None)
        return totals, parts
