"""The registry of answering strategies and what a strategy receives and returns."""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

from rewards.combine import execute_and_score
from rewards.unit_tests.scoring import THETA

NEEDS = ("suites", "reprompt", "policy")


@dataclass
class Choice:
    row: int
    program: str
    result: object            # ExecutionResult on the question's own image
    score: float | None = None
    refused: bool = False       # the end-to-end fallback answered instead
    rounds: int = 0
    failure: str | None = None  # property-test strategies: why the program failed (assertion | runtime | compile)


@dataclass
class Scoring:
    theta: float = THETA
    eps_runtime: float = 0.1
    eps_compile: float = 0.1
    aggregator: str = "mean"
    tie_break: str = "random"


def execute_own(executor, rows: list[dict], programs: list[list[str]]) -> list[list]:
    """Each row's candidate programs run on the row's own image, in one sandbox batch."""
    flat_rows = [rows[i] for i, ps in enumerate(programs) for _ in ps]
    flat = [p for ps in programs for p in ps]
    results = iter(s.result for s in execute_and_score(flat_rows, [""] * len(flat), flat, executor))
    return [[next(results) for _ in ps] for ps in programs]


@dataclass
class Inputs:
    """What a strategy answers from. `programs[i]` are row i's candidates."""

    rows: list[dict]
    programs: list[list[str]]
    executor: object
    suites: list | None = None
    scoring: Scoring = field(default_factory=Scoring)
    # reprompt(row_indices, programs, feedbacks) -> list[list[str]]: corrected programs per row
    reprompt: Callable | None = None
    iterations: int = 1
    prompt_family: str = "viper_compact"
    seed: int = 0
    policy: object | None = None
    options: dict = field(default_factory=dict)

    @cached_property
    def own(self) -> list[list]:
        """Every candidate's ExecutionResult on its row's image (run once, on first use)."""
        return execute_own(self.executor, self.rows, self.programs)

    @cached_property
    def rng(self) -> random.Random:
        return random.Random(f"vprl-select:{self.seed}")


@dataclass
class Strategy:
    name: str
    fn: Callable[[Inputs], list[Choice]] | str  # or "package.module:function", imported on first use
    needs: tuple[str, ...] = ()
    help: str = ""
    writes_programs: bool = False  # samples its own programs (through `policy`): vprl eval samples none first

    def __call__(self, inputs: Inputs) -> list[Choice]:
        if isinstance(self.fn, str):
            module, _, attr = self.fn.partition(":")
            self.fn = getattr(importlib.import_module(module), attr)
        return self.fn(inputs)


_STRATEGIES: dict[str, Strategy] = {}


def register_strategy(name: str, fn=None, *, needs=(), help: str = "", writes_programs: bool = False):
    """Register `fn(inputs) -> list[Choice]` (a callable or "pkg.mod:fn") as `name`;
    usable as a decorator. `writes_programs`: the strategy samples its own programs
    through `inputs.policy`, so `vprl eval` samples none for it."""
    unknown = set(needs) - set(NEEDS)
    if unknown:
        raise ValueError(f"strategy {name!r}: unknown needs {sorted(unknown)}; use {', '.join(NEEDS)}")

    def _add(f):
        if name in _STRATEGIES and _STRATEGIES[name].fn is not f:
            raise ValueError(f"answering strategy {name!r} is already registered; pick another name")
        _STRATEGIES[name] = Strategy(name, f, tuple(needs), help, writes_programs)
        return f

    return _add if fn is None else _add(fn)


def answer_strategies() -> list[str]:
    return list(_STRATEGIES)


def get_strategy(name: str) -> Strategy:
    try:
        return _STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(_STRATEGIES)}") from None


def choose(strategy: str, rows: list[dict], programs: list[list[str]], executor, suites=None,
           scoring: Scoring | None = None, reprompt=None, iterations: int = 1, prompt_family: str = "viper_compact",
           seed: int = 0, policy=None, **options) -> list[Choice]:
    """One Choice per row under the named strategy."""
    chosen = get_strategy(strategy)
    given = {"suites": suites, "reprompt": reprompt, "policy": policy}
    what = {"suites": "unit-test suites", "reprompt": "a program generator to re-prompt",
            "policy": "the policy sampler (policy=)"}
    for need in chosen.needs:
        if given[need] is None:
            raise ValueError(f"strategy {strategy!r} needs {what[need]}")
    return chosen(Inputs(rows, programs, executor, suites, scoring or Scoring(), reprompt, iterations,
                         prompt_family, seed, policy, dict(options)))
