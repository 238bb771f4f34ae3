"""Strategies that need no unit tests: the first program, the majority vote, and
re-prompting with the error on the real image (ViUniT's baselines)."""

from __future__ import annotations

from envs.selfplay.aggregate import majority_index
from train.strategies.registry import Choice, Inputs, execute_own
from train.strategies.selection import error_feedback


def base(inputs: Inputs) -> list[Choice]:
    return [Choice(i, ps[0], rs[0]) for i, (ps, rs) in enumerate(zip(inputs.programs, inputs.own))]


def majority(inputs: Inputs) -> list[Choice]:
    """The most common answer (one vote per program that answered, `answer_key` form)."""
    out = []
    for i, (ps, rs) in enumerate(zip(inputs.programs, inputs.own)):
        k = majority_index([r.answer if r.status == "ok" else None for r in rs])
        k = 0 if k is None else k
        out.append(Choice(i, ps[k], rs[k]))
    return out


def error_reprompt(inputs: Inputs) -> list[Choice]:
    """The baseline: re-prompt with the error the first program raised on the image."""
    choices = base(inputs)
    for round_ in range(1, inputs.iterations + 1):
        failing = [c for c in choices if c.result.status != "ok"]
        if not failing:
            break
        fresh = inputs.reprompt([c.row for c in failing], [c.program for c in failing],
                                [error_feedback(c.result) for c in failing])
        per_row = expand(fresh, failing, len(inputs.rows))
        runs = execute_own(inputs.executor, inputs.rows, per_row)
        for c in failing:
            ps, rs = per_row[c.row], runs[c.row]
            if ps:
                k = next((j for j, r in enumerate(rs) if r.status == "ok"), 0)
                c.program, c.result, c.rounds = ps[k], rs[k], round_
    return choices


def expand(fresh, failing, n):
    """Per-row program lists for `fresh` (indexed like `failing`), empty elsewhere."""
    out = [[] for _ in range(n)]
    for c, ps in zip(failing, fresh):
        out[c.row] = list(ps)
    return out
