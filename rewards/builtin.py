"""Built-in rewards: correctness (the dataset's metric), executes (code pass), format.

`result_accuracy` / `answer_accuracy` are the one answer-against-label comparison: the
correctness reward, the held-out evaluation, `vprl eval` and the self-play aggregators
all score answers with them.
"""

from __future__ import annotations

import ast

from policies.programs import parse_program, program_from
from rewards.registry import register


def execute(prompts, completions, image, executor=None):
    """Each completion's program run on its image: on `executor` (the caller's, handed
    in through the reward context), else on the process-wide one (rewards called by TRL)."""
    if executor is None:
        from envs.execution import shared_executor

        executor = shared_executor()
    programs = [program_from(p, c) for p, c in zip(prompts, completions)]
    # `execute_and_score` runs every program before scoring, so this is a cache read
    # there; called from TRL it runs them once for all rewards that share the executor.
    return executor.run(programs, list(image))


@register("correctness", reads=("answer", "answers"))
def correctness(prompts, completions, image=None, answer=None, answers=None, metric="gqa_accuracy",
                executor=None, **_):
    """The task metric of the program's answer on the question's image (Khan et al., ViUniT Eq. 9).

    `metric` is a metric name, or a per-row list of names when the dataset carries a
    `metric` column (real-dataset presets do).
    """
    if image is None or (answer is None and answers is None):
        return [None] * len(completions)
    results = execute(prompts, completions, image, executor)
    return [result_accuracy(result, answer[i] if answer is not None else None,
                            answers[i] if answers is not None else None,
                            metric[i] if isinstance(metric, (list, tuple)) else metric)
            for i, result in enumerate(results)]


def result_accuracy(result, answer: str | None, answers: list | None, metric: str = "gqa_accuracy") -> float:
    """The task metric of one execution result against a row's `answer` / `answers`,
    whichever the metric reads; a failed run or a missing answer scores 0."""
    if result.status != "ok":
        return 0.0
    return answer_accuracy(result.answer, answer, answers, metric)


def answer_accuracy(prediction, answer: str | None, answers: list | None, metric: str = "gqa_accuracy") -> float:
    """The task metric of one answer against a row's `answer` / `answers`, whichever the
    metric reads (vqa_soft_accuracy, anls, ... read the `answers` list); None scores 0."""
    from rewards.metrics import REFERENCE_COLUMN, get_metric

    if prediction is None:
        return 0.0
    if REFERENCE_COLUMN.get(metric, "answer") == "answers":
        target = answers if answers is not None else [answer]
    else:
        target = answer if answer is not None else answers[0]
    return float(get_metric(metric)(prediction, target))


@register("executes", reads=())
def executes(prompts, completions, image=None, executor=None, **_):
    """1 when the program runs to an answer on the image, else 0 (seed 002's code pass)."""
    if image is None:
        return [None] * len(completions)
    # `ok` with no answer is a program that returned nothing: it did not answer.
    return [1.0 if r.status == "ok" and r.answer is not None else 0.0
            for r in execute(prompts, completions, image, executor)]


@register("format", reads=())
def format_reward(prompts, completions, **_):
    """1 when the completion yields a parsable `execute_command(image)` function."""
    out = []
    for p, c in zip(prompts, completions):
        tree, _ = parse_program(program_from(p, c))
        if tree is None:
            out.append(0.0)
            continue
        fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "execute_command"), None)
        # The prompt already holds the header and first line: the program must add a return.
        ok = fn is not None and any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn))
        out.append(1.0 if ok else 0.0)
    return out
