"""Held-out evaluation extras: logical accuracy on counterfactual scenes.

ViUniT found by hand that a third of "correct" programs were right for the wrong
reasons. For synthetic shapes questions that is measurable: run each program on M
counterfactual scenes where its question stays well defined (a colour swapped, an
object moved across, the queried object removed, ...) and compare with the answer the
question's spec gives there.
"""

from __future__ import annotations

import random


def logical_metrics(rollouts, rows: list[dict], executor, m: int = 4, seed: int = 0) -> list[dict]:
    """One logical report per rollout whose question has a `spec` and `scene` (shapes)."""
    from envs.data.counterfactual import counterfactual_items, logical_report
    from envs.data.spec import coerce

    jobs = []  # (rollout, spec, scene, items)
    for ro in rollouts:
        row = rows[ro.row]
        if not row.get("spec") or not row.get("scene"):
            continue
        spec, scene = coerce(row["spec"], row["scene"])
        items = counterfactual_items(spec, scene, m, random.Random(f"vprl-eval-cf:{seed}:{row.get('id')}"))
        if items:
            jobs.append((ro, spec, scene, items))
    programs = [ro.program for ro, _, _, items in jobs for _ in items]
    images = [it["image"] for _, _, _, items in jobs for it in items]
    results = iter(executor.run(programs, images) if programs else [])
    reports = []
    for ro, spec, scene, items in jobs:
        answers = [next(results).answer for _ in items]
        reports.append(logical_report(ro.result.answer, spec, scene, answers, [it["scene"] for it in items]))
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
