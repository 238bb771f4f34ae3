"""Answering with several programs per question (ViUniT §3.4 and its baselines).

`base` executes the first program; `majority` takes the most common answer; `viunit`
selects the program that passes most unit tests; `refusal` also falls back to the
end-to-end model below θ; `reprompt` and `error_reprompt` ask the policy for corrected
programs, with unit-test or error feedback, for up to `iterations` rounds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rewards.unit_tests.scoring import THETA, run_on_suites, suite_score
from rewards.unit_tests.selection import (error_feedback, fallback_program, majority_index, refuses,
                                          select_best, unit_test_feedback)

STRATEGIES = ("base", "majority", "viunit", "refusal", "reprompt", "error_reprompt")
NEEDS_SUITES = ("viunit", "refusal", "reprompt")


@dataclass
class Choice:
    row: int
    program: str
    result: object            # ExecutionResult on the question's own image
    score: float | None = None
    refused: bool = False
    rounds: int = 0


@dataclass
class Scoring:
    theta: float = THETA
    eps_runtime: float = 0.1
    eps_compile: float = 0.1
    aggregator: str = "mean"
    tie_break: str = "random"


def choose(strategy: str, rows: list[dict], programs: list[list[str]], executor, suites=None,
           scoring: Scoring | None = None, reprompt=None, iterations: int = 1, family: str = "viper_compact",
           seed: int = 0) -> list[Choice]:
    """One Choice per row. `programs[i]` are row i's candidates; `reprompt(rows_idx,
    programs, feedbacks) -> list[list[str]]` samples corrected programs."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if strategy in NEEDS_SUITES and suites is None:
        raise ValueError(f"strategy {strategy!r} needs unit-test suites")
    if strategy in ("reprompt", "error_reprompt") and reprompt is None:
        raise ValueError(f"strategy {strategy!r} needs a program generator to re-prompt")
    sc = scoring or Scoring()
    rng = random.Random(f"vprl-select:{seed}")
    own = _run_on_own_images(executor, rows, programs)

    if strategy == "base":
        return [Choice(i, ps[0], rs[0]) for i, (ps, rs) in enumerate(zip(programs, own))]
    if strategy == "majority":
        out = []
        for i, (ps, rs) in enumerate(zip(programs, own)):
            k = majority_index([r.answer if r.status == "ok" else None for r in rs])
            k = 0 if k is None else k
            out.append(Choice(i, ps[k], rs[k]))
        return out
    if strategy == "error_reprompt":
        return _error_reprompt(rows, programs, own, executor, reprompt, iterations)

    scores = _scores(executor, programs, suites, sc)
    choices = []
    for i, (ps, rs, ss) in enumerate(zip(programs, own, scores)):
        k = select_best(ss, [r.answer if r.status == "ok" else None for r in rs], sc.tie_break, rng)
        choices.append(Choice(i, ps[k], rs[k], ss[k]))
    if strategy == "reprompt":
        _unit_test_reprompt(choices, rows, suites, executor, reprompt, iterations, sc, rng)
    if strategy == "refusal":
        refused = [c for c in choices if refuses(c.score, sc.theta)]
        fallbacks = [fallback_program(rows[c.row]["question"], family) for c in refused]
        for c, p, r in zip(refused, fallbacks, executor.run(fallbacks, [rows[c.row]["image"] for c in refused])):
            c.program, c.result, c.refused = p, r, True
    return choices


def _run_on_own_images(executor, rows, programs):
    flat = executor.run([p for ps in programs for p in ps],
                        [rows[i]["image"] for i, ps in enumerate(programs) for _ in ps])
    it = iter(flat)
    return [[next(it) for _ in ps] for ps in programs]


def _scores(executor, programs, suites, sc: Scoring) -> list[list[float]]:
    flat_p = [p for ps in programs for p in ps]
    flat_s = [suites[i] for i, ps in enumerate(programs) for _ in ps]
    results = run_on_suites(executor, flat_p, flat_s)
    flat = iter(suite_score(r, s, sc.eps_runtime, sc.eps_compile, sc.aggregator) for r, s in zip(results, flat_s))
    return [[next(flat) for _ in ps] for ps in programs]


def _unit_test_reprompt(choices, rows, suites, executor, reprompt, iterations, sc, rng):
    """Eq. 7: while the best program fails θ, show it with its test outputs and sample
    anew; keep the best-scoring program seen (the paper executes p** once it passes)."""
    for round_ in range(1, iterations + 1):
        failing = [c for c in choices if refuses(c.score, sc.theta)]
        if not failing:
            return
        results = run_on_suites(executor, [c.program for c in failing], [suites[c.row] for c in failing])
        feedback = [unit_test_feedback(suites[c.row], r) for c, r in zip(failing, results)]
        fresh = reprompt([c.row for c in failing], [c.program for c in failing], feedback)
        per_row = _expand(fresh, failing, len(rows))
        own = _run_on_own_images(executor, rows, per_row)
        scores = _scores(executor, per_row, suites, sc)
        for c in failing:
            ps, rs, ss = per_row[c.row], own[c.row], scores[c.row]
            if not ps:
                continue
            k = select_best(ss, [r.answer if r.status == "ok" else None for r in rs], sc.tie_break, rng)
            c.rounds = round_
            if ss[k] > c.score:
                c.program, c.result, c.score = ps[k], rs[k], ss[k]


def _error_reprompt(rows, programs, own, executor, reprompt, iterations):
    """The baseline: re-prompt with the error the first program raised on the image."""
    choices = [Choice(i, ps[0], rs[0]) for i, (ps, rs) in enumerate(zip(programs, own))]
    for round_ in range(1, iterations + 1):
        failing = [c for c in choices if c.result.status != "ok"]
        if not failing:
            break
        fresh = reprompt([c.row for c in failing], [c.program for c in failing],
                         [error_feedback(c.result) for c in failing])
        per_row = _expand(fresh, failing, len(rows))
        runs = _run_on_own_images(executor, rows, per_row)
        for c in failing:
            ps, rs = per_row[c.row], runs[c.row]
            if ps:
                k = next((j for j, r in enumerate(rs) if r.status == "ok"), 0)
                c.program, c.result, c.rounds = ps[k], rs[k], round_
    return choices


def _expand(fresh, failing, n):
    """Per-row program lists for `fresh` (indexed like `failing`), empty elsewhere."""
    out = [[] for _ in range(n)]
    for c, ps in zip(failing, fresh):
        out[c.row] = list(ps)
    return out
