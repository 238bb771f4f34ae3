"""Held-out evaluation's scoring: the families' hits and aggregates, `vprl eval`'s metrics,
logical accuracy.

Answers meet labels in `rewards.labels` alone (the correctness reward's comparison): each
row's own metric against whichever of `answer` / `answers` that metric reads, None for a
row without a label.

Logical accuracy: ViUniT found by hand that a third of "correct" programs were right
for the wrong reasons. For synthetic shapes questions that is measurable: run each
program on M counterfactual scenes where its question stays well defined (a colour
swapped, an object moved across, the queried object removed, ...) and compare with the
answer the question's spec gives there.
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

from rewards.labels import answer_score, result_score


def mean(values: Sequence) -> float:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else float("nan")


def family_hits(rows: list[dict], answers_by_family: dict[str, list], metric: str,
                aggregators: Sequence[str] = (), judge_fn: Callable[[str], str] | None = None
                ) -> dict[str, list[float]]:
    """Per-question hits of each prompt family and of each aggregator over the families
    (seed 002 Table 4). `answers_by_family` lists the families best-first: aggregator
    ties go to the earliest."""
    from envs.selfplay.aggregate import aggregate

    def hit(answer, row) -> float:  # also the oracle's metric: this row's, with its labels
        return answer_score(answer, row, metric) or 0.0

    names = list(answers_by_family)
    out = {f"family/{name}": [hit(a, row) for a, row in zip(answers_by_family[name], rows)] for name in names}
    if len(names) > 1:
        for method in aggregators:
            out[f"aggregate/{method}"] = [
                hit(aggregate(method, row["question"], [answers_by_family[n][i] for n in names],
                              ask_fn=judge_fn, gold=row, metric=hit), row)
                for i, row in enumerate(rows)]
    return out


def evaluate_choices(choices, rows: list[dict], executor, metric: str, counterfactuals: int = 0,
                     seed: int = 0, cache: dict | None = None, per_question: bool = False) -> dict:
    """`vprl eval`'s metrics for one answer per question (`train.strategies.Choice`s):
    accuracy, error rate, refusal rate (the fallback answered), the mean unit-test or
    property-test score where a strategy computed one, the errors by kind (assertion,
    runtime, compile), and logical metrics for shapes questions.

    cache: `logical_metrics`'s scene cache. per_question: also return, under
    "per_question", each row's accuracy and logical accuracy (NaN where it has none),
    which paired bootstrap intervals need."""
    n = len(choices)
    scores = [result_score(c.result, rows[c.row], metric) for c in choices]
    out = {"questions": n, "accuracy": mean(scores),
           "error_rate": sum(c.result.status != "ok" for c in choices) / n if n else float("nan"),
           "refusal_rate": sum(c.refused for c in choices) / n if n else 0.0}
    scored = [c.score for c in choices if c.score is not None]
    if scored:
        out["mean_unit_test_score"] = sum(scored) / len(scored)
    # PropTest Table 1: why the programs failed, before any fallback answered.
    from rewards.property_tests.types import failure_kind

    kinds = [c.failure if c.failure is not None or c.refused else failure_kind(c.result) for c in choices]
    out["errors"] = {k: kinds.count(k) for k in ("assertion", "runtime", "compile")}
    reports = []
    if counterfactuals > 0 and rows and rows[0].get("spec"):
        reports = logical_metrics(choices, rows, executor, m=counterfactuals, seed=seed, cache=cache)
        for k, v in summarize(reports, prefix="").items():
            out[k.lstrip("/")] = v
    if per_question:
        accuracy, logical = [float("nan")] * len(rows), [float("nan")] * len(rows)
        for c, score in zip(choices, scores):
            accuracy[c.row] = score
        for rep in reports:
            logical[rep["row"]] = rep["logical_accuracy"]
        out["per_question"] = {"accuracy": accuracy, "logical_accuracy": logical}
    return out


def logical_metrics(rollouts, rows: list[dict], executor, m: int = 4, seed: int = 0,
                    cache: dict | None = None) -> list[dict]:
    """One logical report per rollout whose question has a `spec` and `scene` (shapes);
    each names its rollout's `row` and its `index` in `rollouts`.

    cache: a dict kept by the caller across calls, so each question's counterfactual
    scenes (a function of the question, `m` and `seed` only) are drawn and rendered once.
    """
    from envs.data.counterfactual import counterfactual_items, logical_report
    from envs.data.render import png_bytes
    from envs.data.spec import coerce

    jobs = []  # (index, rollout, spec, scene, items)
    for index, ro in enumerate(rollouts):
        row = rows[ro.row]
        if not row.get("spec") or not row.get("scene"):
            continue
        spec, scene = coerce(row["spec"], row["scene"])
        key = (row.get("id"), row["question"], m, seed)
        items = cache.get(key) if cache is not None else None
        if items is None:
            items = counterfactual_items(spec, scene, m, random.Random(f"vprl-eval-cf:{seed}:{row.get('id')}"))
            if cache is not None:  # kept as PNG: ~3 KB a scene instead of 192 KB of pixels
                items = [{**it, "image": png_bytes(it["image"])} for it in items]
                cache[key] = items
        if items:
            jobs.append((index, ro, spec, scene, items))
    programs = [ro.program for _, ro, _, _, items in jobs for _ in items]
    images = [it["image"] for _, _, _, _, items in jobs for it in items]
    results = iter(executor.run(programs, images) if programs else [])
    reports = []
    for index, ro, spec, scene, items in jobs:
        answers = [next(results).answer for _ in items]
        reports.append({**logical_report(ro.result.answer, spec, scene, answers, [it["scene"] for it in items]),
                        "row": ro.row, "index": index})
    return reports


def summarize(reports: list[dict], prefix: str = "eval") -> dict:
    if not reports:
        return {}
    n = len(reports)
    correct = [r for r in reports if r["accuracy"] == 1.0]
    rfwr = sum(r["right_for_wrong_reasons"] for r in reports)
    return {
        f"{prefix}/logical_accuracy": sum(r["logical_accuracy"] for r in reports) / n,
        f"{prefix}/right_for_wrong_reasons": rfwr / n,
        f"{prefix}/right_for_wrong_reasons_of_correct": rfwr / len(correct) if correct else 0.0,
    }
