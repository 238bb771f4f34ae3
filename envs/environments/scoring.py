"""Scoring a batch of completions on dataset rows: one parallel execution, then rewards.

This is the piece the environment's `step` and the trainer share. Programs run once, in
parallel on the process-wide executor; the reward functions then read the executor's
cache (they call `shared_executor()` themselves, as they do under TRL), so however many
rewards look at a program it runs once per image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from rewards.programs import program_from


@dataclass(frozen=True)
class RewardSpec:
    """One configured reward: a registry name (or dotted path), its weight and fixed kwargs."""

    name: str
    weight: float = 1.0
    kwargs: dict = field(default_factory=dict)


def reward_specs(rewards: Iterable[Any] | str | None) -> list[RewardSpec]:
    """Normalise the ways a user names rewards: "name", ("name", weight),
    {"name": ..., "weight": ..., "kwargs": ...} or any object with .name/.weight/.kwargs
    (e.g. train.config.RewardSpec)."""
    if rewards is None:
        return [RewardSpec("correctness")]
    if isinstance(rewards, str):
        rewards = [rewards]
    specs = []
    for item in rewards:
        if isinstance(item, str):
            specs.append(RewardSpec(item))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            specs.append(RewardSpec(item[0], float(item[1])))
        elif isinstance(item, dict) and "name" in item:
            unknown = set(item) - {"name", "weight", "kwargs"}
            if unknown:
                raise ValueError(f"reward {item['name']!r}: unknown keys {sorted(unknown)}; "
                                 "use name, weight and kwargs")
            specs.append(RewardSpec(item["name"], float(item.get("weight", 1.0)),
                                    dict(item.get("kwargs") or {})))
        elif hasattr(item, "name"):
            specs.append(RewardSpec(item.name, float(getattr(item, "weight", 1.0)),
                                    dict(getattr(item, "kwargs", None) or {})))
        else:
            raise ValueError(f"cannot read reward {item!r}; give a name, (name, weight) or "
                             "{'name': ..., 'weight': ..., 'kwargs': ...}")
    if not specs:
        raise ValueError("at least one reward is needed, e.g. rewards=['correctness']")
    return specs


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


def reward_columns(rows: list[dict], metric: str | None = None) -> dict[str, list]:
    """The rows as TRL hands dataset columns to reward functions: one list per column."""
    names = list(dict.fromkeys(k for row in rows for k in row))
    cols = {name: [row.get(name) for row in rows] for name in names}
    if metric is not None and "metric" not in cols:
        cols["metric"] = [metric] * len(rows)
    return cols


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
    if not (len(rows) == len(prompts) == len(completions)):
        raise ValueError(f"need one row and one prompt per completion; got {len(rows)} rows, "
                         f"{len(prompts)} prompts, {len(completions)} completions")
    indices = list(range(len(rows))) if indices is None else list(indices)
    programs = [program_from(p, c) for p, c in zip(prompts, completions)]
    results = executor.run(programs, [row["image"] for row in rows])
    totals, parts = reward_set.score(list(prompts), list(completions), reward_columns(rows, metric))
    outcomes = []
    for k, (program, result) in enumerate(zip(programs, results)):
        mine = {name: values[k] for name, values in parts.items()}
        outcomes.append(Outcome(indices[k], program, result, mine, totals[k],
                                is_solved(mine, totals[k], solved_by, threshold)))
    return outcomes
