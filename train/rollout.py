"""One rollout batch: prompts → sampled programs → sandboxed execution → rewards."""

from __future__ import annotations

from dataclasses import dataclass, field

from rewards.programs import program_from

COLUMNS = ("question", "answer", "answers", "image", "id", "family", "spec", "scene", "metric")


@dataclass
class Rollout:
    row: int                # index of the question in this batch
    prompt: str
    completion: str
    program: str
    prompt_ids: list[int]
    completion_ids: list[int]
    finished: bool
    result: object          # envs.execution.ExecutionResult
    parts: dict = field(default_factory=dict)
    reward: float | None = None
    weight: float = 0.0
    family: str = ""        # prompt family (few-shot pool) the program was written in
    refined: bool = False   # replaced by a self-refinement round
    accuracy: float | None = None  # the task metric against the label: logged, never trained on


def reward_columns(rows: list[dict], index: list[int], metric: str | None) -> dict:
    """Dataset columns repeated per sample, as TRL hands them to reward functions."""
    cols = {}
    for name in COLUMNS:
        if rows and name in rows[0]:
            cols[name] = [rows[i][name] for i in index]
    if "metric" not in cols and metric:
        cols["metric"] = [metric] * len(index)
    return cols


def collect(rows: list[dict], prompts: list[str], generator, n: int, executor, reward_set=None,
            metric: str | None = None, progress: bool = False, desc: str = "generate") -> list[Rollout]:
    samples = generator.generate(prompts, n=n, progress=progress, desc=desc)
    index = [s.prompt_index for s in samples]
    sample_prompts = [prompts[i] for i in index]
    completions = [s.text for s in samples]
    programs = [program_from(p, c) for p, c in zip(sample_prompts, completions)]
    results = executor.run(programs, [rows[i]["image"] for i in index], progress=progress)
    rollouts = [
        Rollout(i, p, c, prog, s.prompt_ids, s.completion_ids, s.finished, r)
        for i, p, c, prog, s, r in zip(index, sample_prompts, completions, programs, samples, results)
    ]
    if reward_set is not None:
        totals, parts = reward_set.score(sample_prompts, completions, reward_columns(rows, index, metric))
        for k, ro in enumerate(rollouts):
            ro.reward = totals[k]
            ro.parts = {name: values[k] for name, values in parts.items()}
    return rollouts


ERROR_GROUPS = {"compile_error": "compile", "runtime_error": "runtime", "timeout": "timeout"}


def status_rates(statuses: list[str], prefix: str) -> dict:
    """Pass rate and the error rate by category (compile, runtime, timeout, other)."""
    if not statuses:  # nothing was run: no rate, rather than a misleading 0
        return {f"{prefix}/{k}": float("nan") for k in
                ("pass_rate", "error/compile", "error/runtime", "error/timeout", "error/other")}
    n = len(statuses)
    out = {f"{prefix}/pass_rate": sum(s == "ok" for s in statuses) / n}
    for group in ("compile", "runtime", "timeout", "other"):
        out[f"{prefix}/error/{group}"] = sum(
            ERROR_GROUPS.get(s, "other") == group for s in statuses if s != "ok"
        ) / n
    return out
