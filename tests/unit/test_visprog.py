"""Planning scripts: the grammar, EVAL's evaluator, the module semantics (CROP expansion
and clipping, half-image boxes, COUNT), the visprog prompt family, and scripts run in the
real sandbox with the same statuses as programs."""
from __future__ import annotations

import re

import numpy as np
import pytest

from envs.data.render import render
from envs.data.scene import Obj, Scene
from envs.prompts import get_family
from envs.tools import build_namespace
from envs.visprog import EvalError, evaluate, extract_script, parse_script, script_of, script_program
from envs.visprog.language import MODULES, ScriptSyntaxError, parse_line, tokenize
from envs.visprog.modules import expand_box, half_box
from policies.programs import program_from

SCENE = Scene([Obj("circle", "red", "large", 60.0, 80.0), Obj("circle", "blue", "small", 180.0, 170.0),
               Obj("square", "green", "large", 190.0, 60.0)])
IMAGE = render(SCENE)


def test_a_line_parses_into_output_module_and_arguments():
    step = parse_line("BOX0=LOC(image=IMAGE,object='red circle')", 3)
    assert (step.out, step.module, step.line) == ("BOX0", "LOC", 3)
    assert [(n, v.kind, v.value) for n, v in step.args] == [("image", "var", "IMAGE"),
                                                           ("object", "str", "red circle")]
    assert parse_line('A=CROP_EACH(image=IMAGE,box=BOX0,k=2,)').get("k").value == 2
    assert step.render() == "BOX0=LOC(image=IMAGE,object='red circle')"


@pytest.mark.parametrize("line,where", [
    ("BOX0=LOC(image=IMAGE,object='red circle'", "ends early"),
    ("BOX0 LOC(image=IMAGE)", "expected '='"),
    ("box0=LOC(image=IMAGE)", "upper case"),
    ("BOX0=LOC(image=IMAGE) + 1", "unexpected character '+'"),
    ("BOX0=LOC(image=IMAGE) X", "unexpected 'X' after"),
    ("BOX0=LOC(image=IMAGE,object='dog)", "unterminated"),
    ("BOX0=LOC(image IMAGE)", "'=' after"),
])
def test_malformed_lines_are_refused_with_a_reason(line, where):
    with pytest.raises(ScriptSyntaxError, match=re.escape(where)):
        parse_line(line)


def test_tokenizer_keeps_escaped_quotes_and_numbers():
    kinds = [(t.kind, t.text) for t in tokenize(r"X=EVAL(expr='it\'s', k=-2.5)")]
    assert ("string", r"'it\'s'") in kinds and ("number", "-2.5") in kinds


def test_one_bad_line_does_not_hide_the_others():
    script = parse_script("BOX0=LOC(image=IMAGE,object='x')\n\n# note\nBAD LINE\nN=COUNT(box=BOX0)")
    assert [s.line for s in script.steps] == [1, 5]
    assert [i.line for i in script.syntax] == [4]


def test_extract_script_stops_at_the_next_example():
    text = "\nBOX0=LOC(image=IMAGE,object='x')\nN=COUNT(box=BOX0)\n\nQuestion: next?\nProgram:\nZ=CAP(image=IMAGE)"
    assert extract_script(text) == "BOX0=LOC(image=IMAGE,object='x')\nN=COUNT(box=BOX0)"
    assert extract_script("```\nA=CAP(image=IMAGE)\n```\nmore") == "A=CAP(image=IMAGE)"


# ------------------------------------------------------------------------ EVAL
def test_eval_coerces_yes_no_and_numbers_like_visprog():
    assert evaluate("'yes' if {A} == {B} else 'no'", {"A": "yes", "B": "Yes"}) == "yes"
    assert evaluate("{A} == 'yes'", {"A": "yes"}) == "yes"  # literals are coerced too
    assert evaluate("{A} and not {B}", {"A": "yes", "B": "no"}) == "yes"
    assert evaluate("{N} > {M}", {"N": "3", "M": 2}) == "yes"
    assert evaluate("{N} + 1", {"N": "3"}) == 4
    assert evaluate("len(set({A})) == 1", {"A": ["red", "red"]}) == "yes"
    assert evaluate("{A}[0] == {A}[-1]", {"A": ["red", "blue"]}) == "no"
    assert evaluate("all({A})", {"A": ["yes", "yes"]}) == "yes"
    assert evaluate("ANSWER0 > 1", {"ANSWER0": 2}) == "yes"  # bare names work as well


@pytest.mark.parametrize("expr", [
    "__import__('os').system('x')", "{A}.upper()", "open('/etc/passwd')", "[x for x in {A}]",
    "lambda: 1", "(1).__class__", "{A}[{B}]", "'ab' * 10**9", "max(*{A})", "len(x=1)",
    "{A} := 1", "f'{A}'",
])
def test_eval_refuses_everything_outside_the_allow_list(expr):
    with pytest.raises(EvalError):
        evaluate(expr, {"A": ["x"], "B": 0})


def test_eval_errors_are_eval_errors():
    with pytest.raises(EvalError, match="not defined"):
        evaluate("{C} > 1", {})
    with pytest.raises(EvalError, match="ZeroDivisionError"):
        evaluate("1 / {A}", {"A": "0"})
    with pytest.raises(EvalError, match="malformed"):
        evaluate("{A} ==", {"A": 1})


# --------------------------------------------------------------------- modules
def test_crop_expands_the_first_box_and_clips_to_the_image():
    assert expand_box((40, 40, 60, 80)) == (35, 30, 65, 90)  # 1.5x about the centre
    mods = build_namespace("shapes-cv")
    image = np.zeros((100, 200, 3), np.uint8)
    crop = mods["CROP"](image=image, box=[(0, 0, 20, 40), (100, 50, 120, 60)])
    assert (crop.left, crop.lower, crop.right, crop.upper) == (0, 0, 25, 50)  # clipped at 0
    inner = mods["CROP"](image=crop, box=[(20, 40, 40, 60)])  # clipped to the crop it cuts
    assert (inner.left, inner.lower, inner.right, inner.upper) == (15, 35, 25, 50)
    whole = mods["CROP"](image=image, box=[])
    assert (whole.left, whole.lower, whole.right, whole.upper) == (0, 0, 200, 100)


def test_half_image_boxes_and_side_crops():
    assert half_box((0, 0, 200, 100), "TOP") == (0, 50, 200, 100)
    assert half_box((0, 0, 200, 100), "LEFT") == (0, 0, 100, 100)
    mods = build_namespace("shapes-cv")
    image = np.zeros((100, 200, 3), np.uint8)
    assert mods["LOC"](image=image, object="BOTTOM") == [(0, 0, 200, 50)]
    left = mods["CROP_LEFTOF"](image=image, box=[(80, 10, 120, 30)])
    above = mods["CROP_ABOVE"](image=image, box=[(80, 10, 120, 30)])
    assert (left.right, above.lower) == (100, 20)  # split at the box centre


def test_loc_count_and_vqa_read_the_pixels():
    mods = build_namespace("shapes-cv")
    img = np.asarray(IMAGE)
    boxes = mods["LOC"](image=img, object="circle")
    assert mods["COUNT"](box=boxes) == 2 and mods["COUNT"](box=[]) == 0
    crops = mods["CROP_EACH"](image=img, box=boxes)
    assert mods["VQA"](image=crops, question="What color is the circle?") == ["red", "blue"]
    assert set(MODULES) == {k for k in mods if k.isupper()}
    with pytest.raises(TypeError, match="box must be"):
        mods["COUNT"](box=img)


# ----------------------------------------------------------------- prompt family
def test_visprog_prompt_has_the_cot_line_k_examples_and_the_question():
    family = get_family("visprog")
    prompt = family.render(None, "Is there a red circle?")
    assert prompt.startswith("Think step by step to answer the question.")
    assert prompt.count("Program:") == family.k + 1
    assert prompt.rstrip().endswith("Question: Is there a red circle?\nProgram:")
    assert re.search(family.stop, "X\n\n") and re.search(family.stop, "X\nQuestion") is None
    script = "N=CAP(image=IMAGE)\nFINAL_RESULT=RESULT(var=N)"
    program = program_from(prompt, script + "\n\nQuestion: other")
    assert script_of(program) == script
    assert get_family("visprog_gqa").render(None, "q").count("Program:") > 1


# ------------------------------------------------------------------ in the sandbox
def test_scripts_run_in_the_sandbox_with_the_programs_statuses(ex):
    both = ("BOX0=LOC(image=IMAGE,object='circle')\nIMAGE_ARRAY0=CROP_EACH(image=IMAGE,box=BOX0,k=2)\n"
            "ANSWER0=VQA(image=IMAGE_ARRAY0,question='What size is the circle?')\n"
            "ANSWER1=EVAL(expr=\"'yes' if {ANSWER0}[0] == {ANSWER0}[1] else 'no'\")\n"
            "FINAL_RESULT=RESULT(var=ANSWER1)")
    left = ("BOX0=LOC(image=IMAGE,object='green square')\nIMAGE0=CROP_LEFTOF(image=IMAGE,box=BOX0)\n"
            "BOX1=LOC(image=IMAGE0,object='red circle')\nANSWER0=COUNT(box=BOX1)\n"
            "FINAL_RESULT=RESULT(var=ANSWER0)")
    scripts = [both, left, "X=LOC(image=IMAGE,object=dog)", "X=CROP(image=IMAGE,box=IMAGE)",
               "X=EVAL(expr=\"__import__('os')\")", "X=FIND(image=IMAGE,object='x')", ""]
    results = ex.run([script_program(s) for s in scripts], [IMAGE] * len(scripts))
    got = [(r.status, r.answer) for r in results]
    assert got[:2] == [("ok", "no"), ("ok", "1")]
    assert [s for s, _ in got[2:]] == ["compile_error", "runtime_error", "runtime_error",
                                       "runtime_error", "compile_error"]
    assert results[2].error.endswith("(line 2)")  # script line 1 is program line 2
    assert "EvalError" in results[4].error and "NameError" in results[5].error


def test_a_script_without_result_returns_its_last_step(ex):
    result = ex.run([script_program("B=LOC(image=IMAGE,object='circle')\nN=COUNT(box=B)")], [IMAGE])[0]
    assert (result.status, result.answer) == ("ok", "2")


def test_readme_vlagent_example_runs_as_written(capsys):
    from pathlib import Path

    readme = Path(__file__).resolve().parents[2] / "README.md"
    section = readme.read_text().split("### VLAgent", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "['multi_instance']" and "CROP_EACH(image=IMAGE,box=BOX0,k=2)" in out[2]
