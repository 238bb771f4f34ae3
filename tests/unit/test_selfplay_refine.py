"""Self-refinement loop: stops on success, at the limit, and only refines errors."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from envs.prompts import get_family
from envs.selfplay import refine, refine_batch, refine_stats

FAMILY = get_family("viper_compact")
FIRST = FAMILY.program_prefix + "\n    return image_patch.missing()\n"


@dataclass
class Result:
    status: str
    answer: str | None = None
    error: str | None = None


def crashing(program):
    return Result("runtime_error", error="AttributeError: 'ImagePatch' object has no attribute 'missing'")


class Policy:
    """Returns scripted completions and records the prompts it saw."""

    def __init__(self, completions):
        self.completions, self.prompts = list(completions), []

    def __call__(self, prompt):
        self.prompts.append(prompt)
        return self.completions.pop(0)


def execute(program):
    if "return 'yes'" in program:
        return Result("ok", answer="yes")
    if "syntax(" in program:
        return Result("compile_error", error="SyntaxError: invalid syntax")
    return crashing(program)


def test_stops_at_the_limit():
    policy = Policy(["\n    return syntax(\n"] * 5)
    out = refine(policy, execute, FAMILY, None, "Is there a cat?", FIRST, crashing(FIRST), max_refinements=3)
    assert out.rounds == 3 and len(policy.prompts) == 3
    assert out.result.status == "compile_error" and not out.fixed
    assert [status for _, status in out.history] == ["compile_error"] * 3
    assert out.initial_status == "runtime_error"


def test_stops_on_success_and_shows_the_error():
    policy = Policy(["\n    return syntax(\n", "\n    return 'yes'\n", "\n    return 'no'\n"])
    shots = [("Is there a dog?", "    image_patch = ImagePatch(image)\n    return 'no'\n")]
    out = refine(policy, execute, FAMILY, None, "Is there a cat?", FIRST, crashing(FIRST),
                 max_refinements=5, shots=shots)
    assert out.rounds == 2 and out.fixed and out.result.answer == "yes"
    assert out.program.startswith("def execute_command(image):\n    image_patch = ImagePatch(image)\n")
    assert "return 'yes'" in out.program
    first, second = policy.prompts
    # Round 1 shows the original crash, round 2 the refined program's syntax error.
    assert "image_patch.missing()" in first and "AttributeError" in first
    assert "syntax(" in second and "SyntaxError" in second
    # The shots stay in the refinement prompt; it ends like a first-turn prompt.
    assert all("# Query: Is there a dog?" in p for p in policy.prompts)
    assert all(p.endswith(FAMILY.program_prefix) for p in policy.prompts)


def test_no_refinement_for_ok_programs_wrong_answers_or_zero_limit():
    policy = Policy([])
    assert refine(policy, execute, FAMILY, None, "q", FIRST, Result("ok", "no"), 3).rounds == 0
    assert refine(policy, execute, FAMILY, None, "q", FIRST, Result("timeout"), 3).rounds == 0
    assert refine(policy, execute, FAMILY, None, "q", FIRST, crashing(FIRST), 0).rounds == 0
    assert policy.prompts == []
    with pytest.raises(ValueError, match="max_refinements"):
        refine(policy, execute, FAMILY, None, "q", FIRST, crashing(FIRST), -1)


def test_batch_refines_only_failures_one_call_per_round():
    calls = []

    def generate(prompts):
        calls.append(len(prompts))
        # Question 0 is fixed in round 1; question 2 never is.
        return ["\n    return 'yes'\n" if "q0" in p else "\n    return syntax(\n" for p in prompts]

    seen_indices = []

    def execute_batch(programs, indices):
        seen_indices.append(list(indices))
        return [execute(p) for p in programs]

    results = [crashing(FIRST), Result("ok", "2"), crashing(FIRST)]
    out = refine_batch(generate, execute_batch, FAMILY, None, ["q0", "q1", "q2"], [FIRST] * 3,
                       results, max_refinements=3,
                       shots_per_question=[[], [], [("q9", "    return 'x'\n")]])
    assert calls == [2, 1, 1] and seen_indices == [[0, 2], [2], [2]]
    assert [o.rounds for o in out] == [1, 0, 3]
    assert [o.result.status for o in out] == ["ok", "ok", "compile_error"]
    stats = refine_stats(out)
    assert stats["refine/tried"] == 2 and stats["refine/fixed"] == 1
    assert stats["refine/fix_rate"] == 0.5 and stats["refine/rounds_mean"] == 2.0
    assert stats["refine/code_pass_before"] == pytest.approx(1 / 3)
    assert stats["refine/code_pass_after"] == pytest.approx(2 / 3)


def test_custom_to_program_and_length_checks():
    out = refine(lambda p: "anything", execute, FAMILY, None, "q", FIRST, crashing(FIRST), 2,
                 to_program=lambda prompt, completion: "def execute_command(image):\n    return 'yes'\n")
    assert out.fixed and out.rounds == 1
    with pytest.raises(ValueError, match="completions"):
        refine_batch(lambda ps: [], lambda ps, ix: [], FAMILY, None, ["q"], [FIRST], [crashing(FIRST)], 1)
