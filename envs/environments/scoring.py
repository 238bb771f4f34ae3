"""What one completion earned on one row: the environment's view of the one scoring path.

`score_rows` is `rewards.combine.execute_and_score` (the path the trainer and `vprl
eval` use too) plus the environment's notion of a solved question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rewards.combine import execute_and_score


@dataclass
class Outcome:
    """What one completion earned on one row."""

    index: int
    program: str
    result: Any                  # envs.execution.ExecutionResult
    parts: dict[str, float | None]
    reward: float | None         # weighted sum over the parts that apply; None if none does
    solved: bool

    def info(self) -> dict:
        return {"program": self.program, "execution": self.result.to_dict(),
                "reward_parts": dict(self.parts), "reward_applies": self.reward is not None,
                "solved": self.solved}


def is_solved(parts: dict, total: float | None, solved_by: str | None, threshold: float) -> bool:
    """Solved when the `solved_by` part (else the total) reaches `threshold`."""
    value = parts.get(solved_by) if solved_by in parts else total
    return value is not None and not math.isnan(value) and value >= threshold


def score_rows(rows: list[dict], prompts: list, completions: list, reward_set, executor,
               indices: list[int] | None = None, metric: str | None = None,
               solved_by: str | None = "correctness", threshold: float = 1.0) -> list[Outcome]:
    """Execute every completion on its row's image in one parallel batch, then score it.

    rows[i], prompts[i] and completions[i] belong together; rows repeat when a question
    has several samples. `reward_set` is a `rewards.RewardSet`.
    """
    indices = list(range(len(rows))) if indices is None else list(indices)
    scored = execute_and_score(rows, prompts, completions, executor, reward_set, metric=metric)
    return [Outcome(indices[k], s.program, s.result, s.parts, s.reward,
                    is_solved(s.parts, s.reward, solved_by, threshold)) for k, s in enumerate(scored)]
