"""Scoring a batch with the configured rewards: weights in one place, failures counted.

`execute_and_score` is the one execute-then-score path: the trainer's rollouts, the
environment's `step`/`score_batch`, self-refinement and `vprl eval` all run programs
and rewards through it. Programs run once, in parallel, on the executor the caller
hands in; the rewards read their results from the reward context (`results`, one
ExecutionResult per completion, for a reward whose signature names it) and get that
executor (`executor`) for any other run they need, e.g. on unit-test images. A reward
called TRL's way gets neither and runs the programs itself
(`rewards.execution.program_results`, on `envs.execution.shared_executor()`).
"""

from __future__ import annotations

import inspect
import logging
import math
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterable

from policies.programs import program_from
from rewards.registry import get, label_columns

log = logging.getLogger(__name__)


class RewardFailure(RuntimeError):
    """A reward kept raising past the configured limit."""


@dataclass
class RewardSpec:
    """One configured reward: a registry name (or dotted path), its weight and fixed kwargs."""

    name: str  # registry name (`rewards.available()`) or dotted path module:function
    weight: float = 1.0
    kwargs: dict = field(default_factory=dict)  # the reward's own options


def reward_specs(rewards: Iterable[Any] | str | None) -> list[RewardSpec]:
    """Normalise the ways a user names rewards: "name", ("name", weight),
    {"name": ..., "weight": ..., "kwargs": ...} or a RewardSpec."""
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
        elif isinstance(item, RewardSpec):
            specs.append(RewardSpec(item.name, float(item.weight), dict(item.kwargs or {})))
        else:
            raise ValueError(f"cannot read reward {item!r}; give a name, (name, weight) or "
                             "{'name': ..., 'weight': ..., 'kwargs': ...}")
    if not specs:
        raise ValueError("at least one reward is needed, e.g. rewards=['correctness']")
    return specs


def named_parameters(fn) -> set[str]:
    """The parameter names of a reward (a function or a `Reward`'s `__call__`); the
    reward-context entries it receives."""
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


@dataclass
class RewardSet:
    """The configured rewards, each with a weight and fixed keyword arguments.

    The total is the weighted sum over the parts that apply (`None` means "does not
    apply", as in TRL). A reward that raises is counted, logged with its traceback and
    reported as a failure for that batch, never silently turned into 0; past
    `failure_limit` raising batches the run stops with the traceback.
    """

    specs: list  # RewardSpec, or anything reward_specs reads
    failure_limit: int = 3
    failures: dict = field(default_factory=dict)
    # Run-level values (e.g. run_dir) handed to the rewards whose signature names them.
    context: dict = field(default_factory=dict)

    def __post_init__(self):
        self.specs = reward_specs(self.specs)
        self.fns = [get(s.name) for s in self.specs]
        self._params = [named_parameters(fn) for fn in self.fns]

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.specs]

    def label_columns(self) -> dict[str, tuple[str, ...]]:
        """{reward name: the label columns it reads}; all empty means a label-free set."""
        return {s.name: label_columns(s.name, s.kwargs, fn) for s, fn in zip(self.specs, self.fns)}

    def score(self, prompts, completions, columns: dict, **context) -> tuple[list[float | None], dict[str, list]]:
        """Weighted totals and per-reward parts. `context` (e.g. executor=, results=) joins
        the run-level context for this call; each reward gets the entries its signature
        names (`named_parameters`), so a reward that names none is called as TRL calls it."""
        context = {**self.context, **context}
        parts: dict[str, list] = {}
        for spec, fn, params in zip(self.specs, self.fns, self._params):
            # A column that shares a name with a context entry or an option yields to it.
            kwargs = {**columns, **{k: v for k, v in context.items() if k in params}, **spec.kwargs}
            try:
                values = list(fn(prompts, completions, **kwargs))
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


def reward_columns(rows: list[dict], metric: str | None = None) -> dict[str, list]:
    """The rows as TRL hands dataset columns to reward functions: one list per column.

    `metric` fills a `metric` column when the rows carry none (the dataset's default).
    """
    names = list(dict.fromkeys(k for row in rows for k in row))
    cols = {name: [row.get(name) for row in rows] for name in names}
    if metric is not None and "metric" not in cols:
        cols["metric"] = [metric] * len(rows)
    return cols


@dataclass
class Scored:
    """One completion executed on its row's image, and what the rewards gave it."""

    program: str
    result: Any                      # envs.execution.ExecutionResult
    parts: dict[str, float | None]   # per reward; empty when no rewards were asked for
    reward: float | None             # weighted sum over the parts that apply; None if none does


def execute_and_score(rows: list[dict], prompts: list, completions: list, executor, reward_set=None,
                      metric: str | None = None, progress: bool = False) -> list[Scored]:
    """Run every completion's program on its row's image in one parallel sandbox batch,
    then score the batch with `reward_set` (a RewardSet; None: execute only).

    rows[i], prompts[i] and completions[i] belong together; rows repeat when a question
    has several samples. A completion that is already a whole program takes an empty
    prompt. The rewards receive the results just computed (`results`) and `executor`.
    """
    if not (len(rows) == len(prompts) == len(completions)):
        raise ValueError(f"need one row and one prompt per completion; got {len(rows)} rows, "
                         f"{len(prompts)} prompts, {len(completions)} completions")
    if not completions:
        return []
    programs = [program_from(p, c) for p, c in zip(prompts, completions)]
    results = executor.run(programs, [row["image"] for row in rows], progress=progress)
    if reward_set is None:
        return [Scored(p, r, {}, None) for p, r in zip(programs, results)]
    totals, parts = reward_set.score(list(prompts), list(completions), reward_columns(rows, metric),
                                     executor=executor, results=results)
    return [Scored(program, result, {name: values[k] for name, values in parts.items()}, totals[k])
            for k, (program, result) in enumerate(zip(programs, results))]
