"""Built-in rewards: correctness (the dataset's metric), executes (code pass), format.

Each reads the programs' execution results from the reward context (`results`, handed
in by `rewards.combine.execute_and_score`); called without them, as TRL calls a reward,
it runs the programs itself (`rewards.execution.program_results`).
"""

from __future__ import annotations

import ast

from policies.programs import parse_program, program_from
from rewards.execution import program_results
from rewards.labels import result_score
from rewards.registry import register


@register("correctness", reads=("answer", "answers"))
def correctness(prompts, completions, image=None, answer=None, answers=None, metric="gqa_accuracy",
                executor=None, results=None, **_):
    """The task metric of the program's answer on the question's image (Khan et al., ViUniT Eq. 9);
    None for a row without a label (`rewards.labels`).

    `metric` is a metric name, or a per-row list of names when the dataset carries a
    `metric` column (real-dataset presets do).
    """
    if image is None or (answer is None and answers is None):
        return [None] * len(completions)
    results = program_results(prompts, completions, image, executor, results)
    return [result_score(result, {"answer": answer[i] if answer is not None else None,
                                  "answers": answers[i] if answers is not None else None},
                         metric[i] if isinstance(metric, (list, tuple)) else metric)
            for i, result in enumerate(results)]


@register("executes", reads=())
def executes(prompts, completions, image=None, executor=None, results=None, **_):
    """1 when the program runs to an answer on the image, else 0 (seed 002's code pass)."""
    if image is None:
        return [None] * len(completions)
    # `ok` with no answer is a program that returned nothing: it did not answer.
    return [1.0 if r.status == "ok" and r.answer is not None else 0.0
            for r in program_results(prompts, completions, image, executor, results)]


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
