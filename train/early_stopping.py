"""Stop policy iteration when the mean training reward declines (ViUniT §3.4).

The reward measured at iteration t scores rollouts sampled *before* update t, i.e. the
adapter produced by iteration t-1. So the best reward points at the adapter of the
previous iteration ("initial" for iteration 0), and that is the one restored.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass


@dataclass
class EarlyStopper:
    patience: int = 2
    min_delta: float = 0.0
    enabled: bool = True
    best: float | None = None
    best_policy: int = -1   # iteration whose adapter scored best; -1 is the initial adapter
    declines: int = 0

    def update(self, value: float, policy: int) -> bool:
        """Record the reward of `policy`'s rollouts; True when the run should stop."""
        if value is None or not math.isfinite(value):
            return False  # no reward applied this iteration: neither better nor worse
        if self.best is None or value > self.best:
            self.best, self.best_policy, self.declines = value, policy, 0
            return False
        if value < self.best - self.min_delta:
            self.declines += 1
        else:
            self.declines = 0
        return self.enabled and self.declines >= self.patience

    def state_dict(self) -> dict:
        return asdict(self)

    def load_state_dict(self, state: dict) -> None:
        for k, v in state.items():
            setattr(self, k, v)
