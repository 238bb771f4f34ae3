"""The SS-parser: every rule on a script that breaks it and one that passes; repair
output parses, fixes the multi-instance error, leaves valid scripts unchanged and is
idempotent; the same checks for Python programs."""
from __future__ import annotations

import random

import pytest

from envs.visprog.language import parse_script
from rewards.vlagent.pychecks import program_violations, repair_program
from rewards.vlagent.repair import repair_script
from rewards.vlagent.ssparser import RULES, check_script

Q_COUNT = "How many red circles are there?"
GOOD_COUNT = "BOX0=LOC(image=IMAGE,object='red circle')\nANSWER0=COUNT(box=BOX0)\nFINAL_RESULT=RESULT(var=ANSWER0)"
Q_BOTH = "Do both squares have the same color?"
BAD_BOTH = ("BOX0=LOC(image=IMAGE,object='square')\nIMAGE0=CROP(image=IMAGE,box=BOX0)\n"
            "ANSWER0=VQA(image=IMAGE0,question='What color is the square?')\n"
            "ANSWER1=VQA(image=IMAGE0,question='What color is the square?')\n"
            "ANSWER2=EVAL(expr=\"'yes' if {ANSWER0} == {ANSWER1} else 'no'\")\nFINAL_RESULT=RESULT(var=ANSWER2)")
GOOD_BOTH = ("BOX0=LOC(image=IMAGE,object='square')\nIMAGE_ARRAY0=CROP_EACH(image=IMAGE,box=BOX0,k=2)\n"
             "ANSWER0=VQA(image=IMAGE_ARRAY0,question='What color is the square?')\n"
             "ANSWER1=EVAL(expr=\"'yes' if {ANSWER0}[0] == {ANSWER0}[1] else 'no'\")\n"
             "FINAL_RESULT=RESULT(var=ANSWER1)")
Q_LEFT = "Is the red circle to the left of the green square?"
GOOD_LEFT = ("BOX0=LOC(image=IMAGE,object='green square')\nIMAGE0=CROP_LEFTOF(image=IMAGE,box=BOX0)\n"
             "BOX1=LOC(image=IMAGE0,object='red circle')\nANSWER0=COUNT(box=BOX1)\n"
             "ANSWER1=EVAL(expr=\"'yes' if {ANSWER0} > 0 else 'no'\")\nFINAL_RESULT=RESULT(var=ANSWER1)")
Q_COLOR = "What color is the large triangle?"
GOOD_COLOR = ("BOX0=LOC(image=IMAGE,object='large triangle')\nIMAGE0=CROP(image=IMAGE,box=BOX0)\n"
              "ANSWER0=VQA(image=IMAGE0,question='What color is the large triangle?')\n"
              "FINAL_RESULT=RESULT(var=ANSWER0)")

# rule -> (question, a script that breaks it, a script that passes every rule)
CASES = {
    "syntax": (Q_COUNT, GOOD_COUNT.replace("COUNT(box=BOX0)", "COUNT(box=BOX0"), GOOD_COUNT),
    "unquoted_text": (Q_COUNT, GOOD_COUNT.replace("'red circle'", "circle"), GOOD_COUNT),
    "unknown_module": (Q_COUNT, GOOD_COUNT.replace("LOC(", "FIND("), GOOD_COUNT),
    "unknown_argument": (Q_COUNT, GOOD_COUNT.replace("object=", "obj="), GOOD_COUNT),
    "missing_argument": (Q_COUNT, GOOD_COUNT.replace("image=IMAGE,", ""), GOOD_COUNT),
    "duplicate_argument": (Q_COUNT, GOOD_COUNT.replace("COUNT(box=BOX0)", "COUNT(box=BOX0,box=BOX0)"),
                           GOOD_COUNT),
    "argument_type": (Q_COLOR, GOOD_COLOR.replace("box=BOX0", "box=IMAGE"), GOOD_COLOR),
    "undefined_variable": (Q_COUNT, GOOD_COUNT.replace("box=BOX0", "box=BOX1"), GOOD_COUNT),
    "reserved_name": (Q_COUNT, GOOD_COUNT.replace("BOX0", "LOC", 1).replace("box=BOX0", "box=LOC"),
                      GOOD_COUNT),
    "malformed_eval": (Q_LEFT, GOOD_LEFT.replace("{ANSWER0} > 0", "{ANSWER0} = 1"), GOOD_LEFT),
    "redundant_step": (Q_COUNT, GOOD_COUNT.replace("\nFINAL", "\nANSWER1=COUNT(box=BOX0)\nFINAL"),
                       GOOD_COUNT),
    "missing_result": (Q_COUNT, GOOD_COUNT.rsplit("\n", 1)[0], GOOD_COUNT),
    "result_kind": (Q_COUNT, GOOD_COUNT.replace("var=ANSWER0", "var=BOX0"), GOOD_COUNT),
    "multi_instance": (Q_BOTH, BAD_BOTH, GOOD_BOTH),
    "loc_argument": (Q_COLOR, GOOD_COLOR.replace("object='large triangle'",
                                                 "object='What color is the large triangle?'"), GOOD_COLOR),
    "loc_grounding": (Q_COLOR, GOOD_COLOR.replace("object='large triangle'", "object='blue square'"),
                      GOOD_COLOR),
    "spatial_crop": (Q_COLOR, GOOD_COLOR.replace("CROP(", "CROP_LEFTOF("), GOOD_COLOR),
}


def test_every_rule_has_a_case():
    assert set(CASES) == set(RULES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_rule_flags_its_error_and_passes_a_correct_script(rule):
    question, bad, good = CASES[rule]
    assert rule in {v.rule for v in check_script(bad, question)}, check_script(bad, question)
    assert check_script(good, question) == []


@pytest.mark.parametrize("rule", sorted(CASES))
def test_repair_output_parses_and_is_idempotent(rule):
    question, bad, _ = CASES[rule]
    once = repair_script(bad, question)
    assert parse_script(once.text).syntax == []
    assert rule not in {v.rule for v in once.after}, (rule, once.text, once.after)
    assert repair_script(once.text, question).text == once.text


def test_multi_instance_repair_crops_each_box_and_compares():
    fixed = repair_script(BAD_BOTH, Q_BOTH)
    assert fixed.valid and "CROP_EACH(image=IMAGE,box=BOX0,k=2)" in fixed.text
    assert "len(set(" in fixed.text and fixed.text.endswith("RESULT(var=ANSWER1)")


def test_valid_scripts_come_back_unchanged():
    for question, _, good in CASES.values():
        text = good.replace("=", " = ", 1) + "\n"  # unusual spacing is not a violation
        result = repair_script(text, question)
        assert result.text == text and not result.changed


def test_conjunctions_are_not_multi_instance():
    script = BAD_BOTH.replace("same color", "x")
    rules = {v.rule for v in check_script(script, "Is there both a red circle and a square?")}
    assert "multi_instance" not in rules
    assert "multi_instance" in {v.rule for v in check_script(script, "Are both of the squares red?")}


def test_repair_is_idempotent_on_mangled_scripts():
    rng = random.Random(0)
    pieces = GOOD_LEFT.split("\n") + BAD_BOTH.split("\n") + ["X=CROP_LARGER(image=IMAGE1,box=BOX9)",
                                                               "Y=VQA(img=IMAGE,query='x')", "BAD ("]
    for _ in range(150):
        script = "\n".join(rng.sample(pieces, rng.randint(1, 7)))
        question = rng.choice([Q_BOTH, Q_LEFT, Q_COUNT, None])
        once = repair_script(script, question)
        assert parse_script(once.text).syntax == [] or once.text == script
        assert repair_script(once.text, question).text == once.text, (script, once.text)


# --------------------------------------------------------------------- Python
PY_GOOD = ('def execute_command(image):\n    image_patch = ImagePatch(image)\n'
           '    squares = image_patch.find("square")\n'
           '    colors = [s.simple_query("What color is this?") for s in squares]\n'
           '    return bool_to_yesno(len(set(colors)) == 1)\n')
PY_CASES = {
    "syntax": PY_GOOD.replace("find(", "find(("),
    "unknown_method": PY_GOOD.replace("simple_query", "simple_querry"),
    "unknown_argument": PY_GOOD.replace('find("square")', 'find(name="square")'),
    "undefined_variable": PY_GOOD.replace("set(colors)", "set(colours)"),
    "missing_result": PY_GOOD.replace("return ", ""),
    "multi_instance": PY_GOOD.replace('    colors = [s.simple_query("What color is this?") for s in squares]\n',
                                      '    colors = [squares[0].simple_query("What color is this?")]\n'),
}


@pytest.mark.parametrize("rule", sorted(PY_CASES))
def test_python_checks_flag_each_rule(rule):
    assert rule in {v.rule for v in program_violations(PY_CASES[rule], Q_BOTH)}
    assert program_violations(PY_GOOD, Q_BOTH) == []


def test_python_lists_of_patches_and_repairs():
    bad = PY_GOOD.replace("[s.simple_query", "[squares.simple_query")
    assert program_violations(bad)[0].rule == "unknown_method"
    fixed = repair_program(PY_CASES["unknown_method"], Q_BOTH)
    assert fixed.valid and "simple_query(" in fixed.text
    assert repair_program(fixed.text, Q_BOTH).text == fixed.text
    assert repair_program(PY_GOOD, Q_BOTH).text == PY_GOOD
    assert repair_program(PY_CASES["undefined_variable"]).valid


@pytest.mark.parametrize("body", [
    "return (lambda: ImagePatch(image))().find('x')",   # a call of a call: found by the fuzz tier
    "return [f for f in []][0]().exists('x')",
    "return " + "-" * 90_000 + "1",                    # MemoryError in the parser
    "return " + "1+" * 40_000 + "1",                   # RecursionError in the AST builder
    "return 'a\ud800'",                                # UnicodeError
])
def test_the_python_checks_score_any_text_without_raising(body):
    program = "def execute_command(image):\n    " + body + "\n"
    found = program_violations(program, "Is there a red square?")
    assert isinstance(found, list)
    assert repair_program(program, "Is there a red square?").text
