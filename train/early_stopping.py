"""Stop policy iteration when the monitored score declines (ViUniT §3.4), and know
which adapter scored best.

The paper stops on declining training reward (`early_stopping.monitor: reward/mean`).
The reward measured at iteration t scores rollouts sampled *before* update t, i.e. the
adapter of iteration t-1 ("initial" for t = 0); the trainer scores the last adapter with
one more rollout pass so that it too can be chosen. Each iteration draws new questions,
so that reward also moves with how hard the batch was. `probe/reward` removes that: after
each update (and once before the first) the trainer rolls out a fixed batch of
`early_stopping.probe_questions` training questions with the same sampling seed, under the
run's own rewards (label-free when they are). With stateless rewards (correctness, format)
the probe leaves the training trajectory as it was; rewards that build and cache unit-test
suites (viunit, proptest) also build the probe questions' suites, and count them. An eval
monitor (`eval/accuracy`) scores the adapter of the same iteration on held-out labels:
selection on the reported set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

MONITORS = ("reward/mean", "probe/reward", "eval/accuracy", "eval/logical_accuracy")


@dataclass
class EarlyStopper:
    patience: int = 2
    min_delta: float = 0.0
    enabled: bool = True
    # Progress (the only state a checkpoint keeps; settings come from the config):
    best: float | None = None
    best_policy: int = -1   # iteration whose adapter scored best; -1 is the initial adapter
    declines: int = 0
    scores: dict[int, float] = field(default_factory=dict)  # adapter -> its score

    def update(self, value: float | None, policy: int) -> bool:
        """Record the score of `policy`'s adapter; True when the run should stop."""
        if value is None or not math.isfinite(value):
            return False  # nothing was scored this iteration: neither better nor worse
        self.scores[policy] = value
        if self.best is None or value >= self.best:  # a tie goes to the later (more trained) adapter
            self.best, self.best_policy, self.declines = value, policy, 0
            return False
        if value < self.best - self.min_delta:
            self.declines += 1
        else:
            self.declines = 0
        return self.enabled and self.declines >= self.patience

    def state_dict(self) -> dict:
        return {"best": self.best, "best_policy": self.best_policy, "declines": self.declines,
                "scores": {str(k): v for k, v in self.scores.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.best, self.best_policy, self.declines = state["best"], state["best_policy"], state["declines"]
        self.scores = {int(k): v for k, v in state.get("scores", {}).items()}
