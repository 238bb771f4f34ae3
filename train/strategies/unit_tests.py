"""Strategies that read ViUniT unit-test suites: best-program selection (Eq. 6), answer
refusal with the end-to-end fallback, and re-prompting with unit-test feedback (Eq. 7)."""

from __future__ import annotations

from rewards.unit_tests.scoring import run_on_suites, suite_score
from train.strategies.basic import expand
from train.strategies.registry import Choice, Inputs, execute_own
from policies.programs import fallback_program
from train.strategies.selection import refuses, select_best, unit_test_feedback


def viunit(inputs: Inputs) -> list[Choice]:
    scores = _scores(inputs, inputs.programs)
    choices = []
    for i, (ps, rs, ss) in enumerate(zip(inputs.programs, inputs.own, scores)):
        k = _best(inputs, ss, rs)
        choices.append(Choice(i, ps[k], rs[k], ss[k]))
    return choices


def refusal(inputs: Inputs) -> list[Choice]:
    choices = viunit(inputs)
    refused = [c for c in choices if refuses(c.score, inputs.scoring.theta)]
    if refused:
        fallbacks = [[fallback_program(inputs.rows[c.row]["question"], inputs.prompt_family)] for c in refused]
        results = execute_own(inputs.executor, inputs.rows, expand(fallbacks, refused, len(inputs.rows)))
        for c, (program,) in zip(refused, fallbacks):
            c.program, c.result, c.refused = program, results[c.row][0], True
    return choices


def reprompt(inputs: Inputs) -> list[Choice]:
    """Eq. 7: while the best program fails θ, show it with its test outputs and sample
    anew; keep the best-scoring program seen (the paper executes p** once it passes)."""
    choices = viunit(inputs)
    suites, theta = inputs.suites, inputs.scoring.theta
    for round_ in range(1, inputs.iterations + 1):
        failing = [c for c in choices if refuses(c.score, theta)]
        if not failing:
            break
        results = run_on_suites(inputs.executor, [c.program for c in failing], [suites[c.row] for c in failing])
        feedback = [unit_test_feedback(suites[c.row], r) for c, r in zip(failing, results)]
        fresh = inputs.reprompt([c.row for c in failing], [c.program for c in failing], feedback)
        per_row = expand(fresh, failing, len(inputs.rows))
        own = execute_own(inputs.executor, inputs.rows, per_row)
        scores = _scores(inputs, per_row)
        for c in failing:
            ps, rs, ss = per_row[c.row], own[c.row], scores[c.row]
            if not ps:
                continue
            k = _best(inputs, ss, rs)
            c.rounds = round_
            if ss[k] > c.score:
                c.program, c.result, c.score = ps[k], rs[k], ss[k]
    return choices


def _best(inputs: Inputs, scores, results) -> int:
    answers = [r.answer if r.status == "ok" else None for r in results]
    return select_best(scores, answers, inputs.scoring.tie_break, inputs.rng)


def _scores(inputs: Inputs, programs: list[list[str]]) -> list[list[float]]:
    sc, suites = inputs.scoring, inputs.suites
    flat_p = [p for ps in programs for p in ps]
    flat_s = [suites[i] for i, ps in enumerate(programs) for _ in ps]
    results = run_on_suites(inputs.executor, flat_p, flat_s)
    flat = iter(suite_score(r, s, sc.eps_runtime, sc.eps_compile, sc.aggregator) for r, s in zip(results, flat_s))
    return [[next(flat) for _ in ps] for ps in programs]
