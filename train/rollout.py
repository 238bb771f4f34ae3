"""One rollout batch: prompts → sampled programs → sandboxed execution → rewards."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rewards.combine import Scored, execute_and_score
from rewards.labels import result_score


@dataclass(frozen=True)
class Rollout:
    """One sampled program, executed and scored: a value, never edited in place. A
    refined program is a new Rollout (`rescored`); the weight the update gives it lives
    beside it, in its training Example."""

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
    prompt_family: str = ""  # the prompt family (few-shot pool) it was written in; rows' `family` is the question's
    refined: bool = False   # replaced by a self-refinement round
    searched: bool = False  # found by program search (train/search.py), not sampled: the prompt is taught it
    accuracy: float | None = None  # the task metric against the label: logged, never trained on


def _scored(sc: Scored, row: dict, metric: str | None) -> dict:
    """A Rollout's fields that come from executing and scoring its program."""
    return {"program": sc.program, "result": sc.result, "parts": sc.parts, "reward": sc.reward,
            "accuracy": result_score(sc.result, row, metric or "gqa_accuracy")}


def rescored(ro: Rollout, program: str, sc: Scored, row: dict, metric: str | None) -> Rollout:
    """`ro` with the program self-refinement wrote in its place (kept as written: the
    prompt is taught it), executed and scored as `sc`."""
    return replace(ro, refined=True, **{**_scored(sc, row, metric), "program": program})


def written(row: int, prompt: str, prompt_ids: list[int], program: str, prefix: str, sc: Scored, data_row: dict,
            metric: str | None, prompt_family: str) -> Rollout:
    """A program search wrote for a question no rollout sampled (a probe question its form
    was proven on), executed and scored as `sc`: the prompt is taught it."""
    return replace(Rollout(row, prompt, program[len(prefix):], program, prompt_ids, [], True, None,
                           prompt_family=prompt_family, searched=True),
                   **{**_scored(sc, data_row, metric), "program": program})


def collect(rows: list[dict], prompts: list[str], generator, n: int, executor, reward_set=None,
            metric: str | None = None, progress: bool = False, desc: str = "generate",
            prompt_family: str = "") -> list[Rollout]:
    """n programs per prompt, executed on their rows' images and scored (the one path,
    `rewards.combine.execute_and_score`); reward_set None executes only (evaluation).
    `accuracy` is each result against its row's label, with `metric` (default gqa_accuracy)
    where the row names none."""
    samples = generator.generate(prompts, n=n, progress=progress, desc=desc)
    index = [s.prompt_index for s in samples]
    sample_prompts = [prompts[i] for i in index]
    completions = [s.text for s in samples]
    scored = execute_and_score([rows[i] for i in index], sample_prompts, completions, executor, reward_set,
                               metric=metric, progress=progress)
    return [Rollout(i, p, c, prompt_ids=s.prompt_ids, completion_ids=s.completion_ids, finished=s.finished,
                    prompt_family=prompt_family, **_scored(sc, rows[i], metric))
            for i, p, c, s, sc in zip(index, sample_prompts, completions, samples, scored)]


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
