"""ViUniT's uses of a suite at inference, without a model: selection with ties, refusal
at θ, and the re-prompt prompt's format (Listing 4)."""

from __future__ import annotations

import random
from types import SimpleNamespace as NS

import pytest

from envs.selfplay.aggregate import majority_index
from rewards.unit_tests import UnitTest
from policies.programs import fallback_program
from train.strategies.selection import error_feedback, refuses, select_best, unit_test_feedback


def _r(status="ok", answer=None, error=None):
    return NS(status=status, answer=answer, error=error)


def test_select_best_and_ties():
    assert select_best([0.2, 0.8, 0.4]) == 1
    answers = ["no", "yes", "yes", "no", "yes"]
    scores = [1.0, 1.0, 1.0, 1.0, 0.0]
    assert select_best(scores, answers, "vote") == 0  # tied 0..3: 2 "no" vs 2 "yes": the first top answer
    assert select_best([1.0, 1.0, 1.0], ["no", "yes", "yes"], "vote") == 1
    picks = {select_best(scores, answers, "random", random.Random(s)) for s in range(40)}
    assert picks == {0, 1, 2, 3}
    with pytest.raises(ValueError):
        select_best([])


def test_majority_ignores_failures():
    assert majority_index(["No", None, "yes", "no"]) == 0
    assert majority_index([None, None]) is None


def test_refusal_at_threshold():
    assert refuses(0.79, 0.8) and not refuses(0.8, 0.8) and not refuses(0.95, 0.8)
    prog = fallback_program("Is there a 'red' circle?")
    assert "simple_query('Is there a \\'red\\' circle?')" in prog or 'simple_query("Is there a \'red\' circle?")' in prog
    compile(prog, "<fallback>", "exec")
    assert "ImageObject(image).answer" in fallback_program("q", "tool_api")


def test_reprompt_prompt_format_listing4():
    suite = NS(tests=[UnitTest("A room with a red chair", "No"), UnitTest("A blue chair", "Yes")])
    text = unit_test_feedback(suite, [_r(answer="No"), _r("runtime_error", error="NameError: x\nmore")])
    lines = text.splitlines()
    assert lines[0].startswith("You are provided a Python program")
    assert "Correct the Python program such that it passes the tests." in lines
    i = lines.index("Test Cases:")
    assert lines[i + 1:] == ["Test A", 'Image Content: "A room with a red chair"', 'Ground Truth Answer: "No"',
                             'Program Output: "No"', "Test B", 'Image Content: "A blue chair"',
                             'Ground Truth Answer: "Yes"', 'Program Output: "Error: NameError: x"']
    assert error_feedback(_r("compile_error", error="SyntaxError: bad")).endswith("Error: SyntaxError: bad")


def test_reprompt_renders_into_the_policy_prompt():
    from envs.prompts import get_family, render_refinement

    suite = NS(tests=[UnitTest("An empty image", "no")])
    fb = unit_test_feedback(suite, [_r(answer="yes")])
    prompt = render_refinement(get_family("viper_compact"), None, "Is there a circle?", "def execute_command(image):\n    return 'yes'\n", fb)
    assert "# Incorrect program:" in prompt and "# Test A" in prompt and prompt.rstrip().endswith(prompt.rstrip().splitlines()[-1])
    assert prompt.index("# Test Cases:") < prompt.index("# Corrected program:")
