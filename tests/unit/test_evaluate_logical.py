"""Logical accuracy in the trainer's evaluation: real sandbox, real counterfactual scenes."""

import json
from types import SimpleNamespace

from envs.data.programs import reference_program
from envs.data.shapes import build_dataset
from envs.execution import Executor
from train.evaluate import logical_metrics, summarize


def test_reference_programs_are_logically_right_and_constant_yes_is_flagged():
    rows = [dict(r) for r in build_dataset(train=40, validation=0, test=0, seed=5, progress=False)["train"]]
    yes_row = next(i for i, r in enumerate(rows) if r["answer"] == "yes" and r["family"] == "existence")
    with Executor(workers=1) as ex:
        rollouts = []
        for i in range(4):
            program = reference_program(json.loads(rows[i]["spec"]))
            rollouts.append(SimpleNamespace(row=i, program=program, result=ex.run([program], [rows[i]["image"]])[0]))
        always_yes = "def execute_command(image):\n    return 'yes'\n"
        rollouts.append(SimpleNamespace(row=yes_row, program=always_yes,
                                        result=ex.run([always_yes], [rows[yes_row]["image"]])[0]))
        reports = logical_metrics(rollouts, rows, ex, m=6)
    assert [r["logical_accuracy"] for r in reports[:4]] == [1.0] * 4
    assert reports[-1]["accuracy"] == 1.0 and reports[-1]["logical_accuracy"] < 1.0
    assert reports[-1]["right_for_wrong_reasons"]
    summary = summarize(reports)
    assert summary["eval/right_for_wrong_reasons"] == 1 / 5
    assert summary["eval/right_for_wrong_reasons_of_correct"] == 1 / 5


def test_rows_without_a_spec_are_skipped():
    rows = [{"question": "q", "image": None}]
    assert logical_metrics([SimpleNamespace(row=0, program="", result=None)], rows, executor=None) == []
    assert summarize([]) == {}


def test_evaluate_choices_per_question_lines_up_with_rows_and_uses_the_scene_cache():
    """The per-question values a paired bootstrap needs: by row, NaN where a row has no
    answer; the scene cache is filled once and reused."""
    from train.evaluate import evaluate_choices
    from train.strategies import Choice

    rows = [dict(r) for r in build_dataset(train=12, validation=0, test=0, seed=5, progress=False)["train"]]
    yes_rows = [i for i, r in enumerate(rows) if r["answer"] == "yes"][:1]
    no_rows = [i for i, r in enumerate(rows) if r["answer"] == "no"][:1]
    always_yes = "def execute_command(image):\n    return 'yes'\n"
    cache = {}
    with Executor(workers=1) as ex:
        choices = [Choice(i, always_yes, ex.run([always_yes], [rows[i]["image"]])[0]) for i in no_rows + yes_rows]
        out = evaluate_choices(choices, rows, ex, "gqa_accuracy", 4, seed=0, cache=cache, per_question=True)
        again = evaluate_choices(choices, rows, ex, "gqa_accuracy", 4, seed=0, cache=cache)
    pq = out.pop("per_question")
    assert "per_question" not in again and again == out and len(cache) == 2
    chosen = set(no_rows + yes_rows)
    assert [pq["accuracy"][i] for i in no_rows + yes_rows] == [0.0, 1.0]
    assert all(pq["accuracy"][i] != pq["accuracy"][i] for i in range(len(rows)) if i not in chosen)  # NaN
    assert pq["logical_accuracy"][yes_rows[0]] < 1.0 and out["accuracy"] == 0.5
