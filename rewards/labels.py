"""The one comparison of an answer with a row's label: the correctness reward, the
held-out evaluation, `vprl eval`, the self-play aggregators and the logged rollout
accuracy all score through here.

A row is scored with its own metric (a `metric` entry wins over the dataset default)
against whichever of `answer` / `answers` that metric reads. A row that carries neither
has no label to score against: its score is None ("does not apply", as a reward's None),
whatever the program did; with a label, a failed run or a missing answer scores 0.
"""

from __future__ import annotations


def row_metric(row: dict, metric: str) -> str:
    """The metric a row is scored with: its own `metric` entry, else the dataset's."""
    return row.get("metric") or metric


def has_label(row: dict) -> bool:
    return row.get("answer") is not None or row.get("answers") is not None


def answer_score(answer, row: dict, metric: str) -> float | None:
    """One answer (None: none was given) against one row's label; None when it has none."""
    from rewards.metrics import REFERENCE_COLUMN, get_metric

    if not has_label(row):
        return None
    if answer is None:
        return 0.0
    metric = row_metric(row, metric)
    label, labels = row.get("answer"), row.get("answers")
    if REFERENCE_COLUMN.get(metric, "answer") == "answers":
        target = labels if labels is not None else [label]
    else:
        target = label if label is not None else labels[0]
    return float(get_metric(metric)(answer, target))


def result_score(result, row: dict, metric: str) -> float | None:
    """One execution result against one row's label: a failed run scores 0; None when
    the row has no label."""
    return answer_score(result.answer if result.status == "ok" else None, row, metric)
