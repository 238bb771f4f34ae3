"""What each rank reports about its rollouts and evaluations, and the metrics built from
the records of all ranks (gathered with `accelerate.utils.gather_object`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from train.rollout import status_rates


@dataclass
class RolloutRecord:
    reward: float | None
    weight: float
    status: str
    parts: dict = field(default_factory=dict)  # reward name -> its value
    completion_tokens: int = 0
    prompt_family: str = ""
    accuracy: float | None = None  # against the label: logged, never trained on
    question_family: str | None = None  # the data's `family` column (counting, spatial, ...)

    @classmethod
    def of(cls, ro, row: dict | None = None, weight: float = 0.0) -> "RolloutRecord":
        """`ro`'s record; `weight` is what the update gave it (its Example's; 0: not trained on)."""
        return cls(ro.reward, weight, ro.result.status, dict(ro.parts), len(ro.completion_ids), ro.prompt_family,
                   ro.accuracy, (row or {}).get("family"))


@dataclass
class EvalRecord:
    """One held-out question's answer: a line of `runs/<name>/eval/<point>.jsonl`."""

    accuracy: float | None
    status: str
    id: object = None
    family: str | None = None  # question family
    question: str = ""
    expected: object = None
    answer: object = None
    logical_accuracy: float | None = None  # on counterfactual scenes (shapes)
    right_for_wrong_reasons: bool | None = None
    program: str = ""
    error: str | None = None

    @classmethod
    def of(cls, ro, row: dict | None = None, logical: dict | None = None) -> "EvalRecord":
        row, logical = row or {}, logical or {}
        return cls(ro.accuracy, ro.result.status, row.get("id", ro.row), row.get("family"), row.get("question", ""),
                   row.get("answer"), ro.result.answer, logical.get("logical_accuracy"),
                   logical.get("right_for_wrong_reasons"), ro.program, ro.result.error)


def mean_std(values) -> tuple[float, float]:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    return (float(arr.mean()), float(arr.std())) if arr.size else (float("nan"), float("nan"))


def rollout_metrics(records: list[RolloutRecord], reward_names: list[str], families: list[str]) -> dict:
    m = {}
    m["reward/mean"], m["reward/std"] = mean_std(r.reward for r in records)
    for name in reward_names:
        m[f"rewards/{name}/mean"], m[f"rewards/{name}/std"] = mean_std(r.parts.get(name) for r in records)
    m.update(status_rates([r.status for r in records], "rollout"))
    m["rollout/samples"] = len(records)
    m["rollout/weighted_samples"] = sum(r.weight > 0 for r in records)
    m["rollout/completion_tokens"] = mean_std(r.completion_tokens for r in records)[0]
    m["rollout/accuracy"] = mean_std(r.accuracy for r in records)[0]
    for name in families:
        fam = [r for r in records if r.prompt_family == name]
        m[f"rollout/{name}/accuracy"] = mean_std(r.accuracy for r in fam)[0]
        m[f"rollout/{name}/pass_rate"] = mean_std(float(r.status == "ok") for r in fam)[0]
    # Where the learning signal goes: shares of |weight|, since rloo/grpo advantages of one
    # question sum to about 0 and a signed total near 0 made the shares explode (-7e9).
    total = sum(abs(r.weight) for r in records)
    for kind in sorted({r.question_family for r in records if r.question_family}):
        rows = [r for r in records if r.question_family == kind]
        m[f"rollout/by_question/{kind}/accuracy"] = mean_std(r.accuracy for r in rows)[0]
        m[f"rollout/by_question/{kind}/weight_share"] = sum(abs(r.weight) for r in rows) / total if total else 0.0
    return m


def eval_metrics(records: list[EvalRecord], hits: dict[str, list[float]]) -> dict:
    m = {"eval/accuracy": mean_std(r.accuracy for r in records)[0], "eval/questions": len(records)}
    m.update(status_rates([r.status for r in records], "eval"))
    m.update({f"eval/{k}/accuracy": mean_std(v)[0] for k, v in hits.items()})
    kinds = sorted({r.family for r in records if r.family})
    if len(kinds) > 1:  # per question family: where the policy gains or loses
        m.update({f"eval/by_family/{k}/accuracy": mean_std(r.accuracy for r in records if r.family == k)[0]
                  for k in kinds})
    return m


def reward_counters(reward_set) -> dict:
    """A reward's own running counters (rank 0's), e.g. viunit's suites built so far."""
    return {f"rewards/{name}/{k}": v for name, fn in zip(reward_set.names, reward_set.fns)
            if callable(getattr(fn, "metrics", None)) for k, v in fn.metrics().items()}
