"""Answering strategies on hand-written programs and suites, run in the real sandbox:
base, majority, ViUniT selection, refusal with the end-to-end fallback, unit-test
re-prompting and error re-prompting (with a scripted program generator)."""

from __future__ import annotations

import pytest

from envs.data.render import render
from envs.data.scene import Obj, Scene
from rewards.unit_tests.suite import Suite
from rewards.unit_tests.types import UnitTest
from train.strategies import Scoring, choose

RED_CIRCLE = render(Scene([Obj("circle", "red", "large", 60, 128)]))
BLUE_SQUARE = render(Scene([Obj("square", "blue", "large", 60, 128)]))
RED_SQUARE = render(Scene([Obj("square", "red", "large", 180, 128)]))

RIGHT = 'def execute_command(image):\n    return "yes" if ImagePatch(image).exists("red circle") else "no"\n'
ALWAYS_YES = 'def execute_command(image):\n    return "yes"\n'
ANY_RED = 'def execute_command(image):\n    return "yes" if ImagePatch(image).exists("red object") else "no"\n'
CRASH = "def execute_command(image):\n    return 1/0\n"

SUITE = Suite("Is there a red circle?",
              [UnitTest("a red circle", "yes"), UnitTest("a blue square", "no"), UnitTest("a red square", "no")],
              [RED_CIRCLE, BLUE_SQUARE, RED_SQUARE])
ROWS = [{"question": "Is there a red circle?", "answer": "yes", "image": RED_CIRCLE}]


def test_base_and_majority(ex):
    progs = [[ALWAYS_YES, CRASH, RIGHT, CRASH, CRASH]]
    assert choose("base", ROWS, progs, ex)[0].program == ALWAYS_YES
    # Crashed programs do not vote; 'yes' (programs 0 and 2) wins.
    c = choose("majority", ROWS, progs, ex)[0]
    assert c.result.answer == "yes" and c.program == ALWAYS_YES


def test_viunit_selects_the_program_right_for_the_right_reasons(ex):
    progs = [[ALWAYS_YES, ANY_RED, RIGHT, CRASH]]
    c = choose("viunit", ROWS, progs, ex, [SUITE])[0]
    assert c.program == RIGHT and c.score == 1.0
    # ALWAYS_YES passes 1/3, ANY_RED 2/3, CRASH -0.1: the scores are exact.
    only_wrong = choose("viunit", ROWS, [[ALWAYS_YES, CRASH]], ex, [SUITE])[0]
    assert only_wrong.program == ALWAYS_YES and only_wrong.score == pytest.approx(1 / 3)


def test_refusal_falls_back_below_theta_only(ex):
    c = choose("refusal", ROWS, [[ANY_RED, ALWAYS_YES]], ex, [SUITE], Scoring(theta=0.8))[0]
    assert c.refused and "simple_query" in c.program and c.result.answer == "yes"
    kept = choose("refusal", ROWS, [[ANY_RED]], ex, [SUITE], Scoring(theta=0.6))[0]
    assert not kept.refused and kept.program == ANY_RED


def test_unit_test_reprompt_shows_the_tests_and_keeps_the_better_program(ex):
    calls = []

    def reprompt(rows_idx, programs, feedbacks):
        calls.append((rows_idx, programs, feedbacks))
        return [[CRASH, RIGHT]]

    c = choose("reprompt", ROWS, [[ALWAYS_YES]], ex, [SUITE], reprompt=reprompt, iterations=2)[0]
    assert c.program == RIGHT and c.rounds == 1 and len(calls) == 1  # passed: no second round
    fb = calls[0][2][0]
    assert 'Image Content: "a blue square"' in fb and 'Ground Truth Answer: "no"' in fb and 'Program Output: "yes"' in fb
    # A worse correction never replaces a better program.
    c = choose("reprompt", ROWS, [[ANY_RED]], ex, [SUITE], reprompt=lambda *a: [[CRASH]], iterations=2)[0]
    assert c.program == ANY_RED and c.rounds == 2


def test_error_reprompt_feeds_the_error_back(ex):
    seen = []

    def reprompt(rows_idx, programs, feedbacks):
        seen.append(feedbacks[0])
        return [[RIGHT]]

    c = choose("error_reprompt", ROWS, [[CRASH]], ex, reprompt=reprompt, iterations=3)[0]
    assert c.program == RIGHT and c.rounds == 1 and "ZeroDivisionError" in seen[0]
    untouched = choose("error_reprompt", ROWS, [[ALWAYS_YES]], ex, reprompt=reprompt)[0]
    assert untouched.rounds == 0 and len(seen) == 1


def test_strategy_errors(ex):
    with pytest.raises(ValueError, match="unknown strategy"):
        choose("best", ROWS, [[RIGHT]], ex)
    with pytest.raises(ValueError, match="needs unit-test suites"):
        choose("viunit", ROWS, [[RIGHT]], ex)
    with pytest.raises(ValueError, match="re-prompt"):
        choose("reprompt", ROWS, [[RIGHT]], ex, [SUITE])


def test_eval_accuracy_reads_the_metric_reference_column(ex):
    """vqa_soft_accuracy scores against the `answers` list, as the correctness reward does
    (gqa_accuracy on `answer` would give 1.0 here)."""
    from rewards.metrics import vqa_soft_accuracy
    from train.evaluate import evaluate_choices
    from train.strategies import Choice

    answers = ["yes"] * 2 + ["no"] * 8
    rows = [{"question": "q", "answer": "yes", "answers": answers, "image": RED_CIRCLE,
             "metric": "vqa_soft_accuracy"}]
    (result,) = ex.run([ALWAYS_YES], [RED_CIRCLE])
    out = evaluate_choices([Choice(0, ALWAYS_YES, result)], rows, ex, "gqa_accuracy", counterfactuals=0)
    assert out["accuracy"] == pytest.approx(vqa_soft_accuracy("yes", answers)) and out["accuracy"] < 1.0


def test_majority_agrees_with_the_self_play_vote(ex):
    """Regression (issue 12): for answers ['3', 'two', '2'] self-play's majority said 'two'
    and `vprl eval --strategy majority` said '3' (it only lowercased). One answer key now."""
    from envs.selfplay import majority

    answers = ["3", "two", "2"]
    progs = [[f"def execute_command(image):\n    return {a!r}\n" for a in answers]]
    c = choose("majority", ROWS, progs, ex)[0]
    assert c.result.answer == majority(answers) == "two" and c.program == progs[0][1]


def test_strategies_register_in_one_place(ex):
    from train.strategies import answer_strategies, get_strategy, register_strategy

    assert {"base", "majority", "viunit", "refusal", "reprompt", "error_reprompt"} <= set(answer_strategies())
    assert get_strategy("reprompt").needs == ("suites", "reprompt")

    def last(inputs):  # a new strategy: the last program, with its result on the row's image
        return [type(c)(c.row, ps[-1], rs[-1]) for c, ps, rs in
                zip(get_strategy("base")(inputs), inputs.programs, inputs.own)]

    register_strategy("test_last", last, help="the last program")
    c = choose("test_last", ROWS, [[CRASH, RIGHT]], ex)[0]
    assert c.program == RIGHT and c.result.answer == "yes"
    with pytest.raises(ValueError, match="already registered"):
        register_strategy("test_last", lambda inputs: [])
    with pytest.raises(ValueError, match="needs the policy sampler"):
        register_strategy("test_policy", last, needs=("policy",))
        choose("test_policy", ROWS, [[RIGHT]], ex)


def test_one_error_text_for_refinement_reprompting_and_the_env(ex):
    """Regression (issue 12): the error feedback was written three times; ViUniT's
    re-prompt showed a sandbox error as 'Error: Error: ZeroDivisionError ...'."""
    from types import SimpleNamespace

    from envs.environments.env import default_feedback
    from envs.prompts import error_text
    from train.strategies.selection import error_feedback, output_text

    (crash,) = ex.run([CRASH], [RED_CIRCLE])
    assert crash.error.startswith("Error: ZeroDivisionError")
    assert output_text(crash) == error_text(crash).splitlines()[0] == crash.error.splitlines()[0]
    assert error_feedback(crash).endswith("\n" + crash.error.splitlines()[0])
    assert default_feedback({}, SimpleNamespace(result=crash)) == error_text(crash)
    silent = SimpleNamespace(status="timeout", error=None)
    assert error_text(silent) == "Error: the program stopped with status timeout"
