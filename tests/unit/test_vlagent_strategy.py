"""`vprl eval --strategy vlagent` stages on hand-written scripts and programs, in the real
sandbox: naive runs the first candidate as written, the parser stage repairs it, the
ensemble stage selects detectors with Algorithm 1 and answers through a tool host, and
the caption stage applies the verifier (a scripted judge stands in for the LLM here)."""
from __future__ import annotations

import pytest

from envs.data.render import render
from envs.data.scene import Obj, Scene
from envs.visprog import script_program
from train.strategies import vlagent

IMAGE = render(Scene([Obj("square", "red", "large", 60, 80), Obj("square", "blue", "large", 190, 170),
                      Obj("circle", "green", "small", 190, 60)]))
ROWS = [{"question": "Do both squares have the same color?", "answer": "no", "image": IMAGE},
        {"question": "How many circles are there?", "answer": "1", "image": IMAGE}]
BOTH = script_program("BOX0=LOC(image=IMAGE,object='square')\nIMAGE0=CROP(image=IMAGE,box=BOX0)\n"
                      "ANSWER0=VQA(image=IMAGE0,question='What color is the square?')\n"
                      "ANSWER1=VQA(image=IMAGE0,question='What color is the square?')\n"
                      "ANSWER2=EVAL(expr=\"'yes' if {ANSWER0} == {ANSWER1} else 'no'\")\n"
                      "FINAL_RESULT=RESULT(var=ANSWER2)")
COUNT = 'def execute_command(image):\n    return len(ImagePatch(image).find_all("circle"))\n'


class BothYes:
    """Scripted judge: the caption has a clue for 'both' questions only, and says 'yes'."""

    def batch(self, prompts, long_answers):
        return [("Yes" if "both" in p else "No") if "yes or no" in p else "A" if "A or B" in p
                else "yes" for p in prompts]


def test_stages_from_naive_to_ensemble(ex):
    programs = [[BOTH], [COUNT]]
    naive, _ = vlagent.answer(ROWS, programs, ex, vlagent.VLAgentSettings(stage="naive"))
    assert [c.result.answer for c in naive] == ["yes", None]  # asks about one square twice
    settings = vlagent.VLAgentSettings(stage="parser")
    parsed, _ = vlagent.answer(ROWS, programs, ex, settings)
    assert [c.result.answer for c in parsed] == ["no", "1"]
    assert settings.stats["flagged"] == 2 and settings.stats["rules"]["multi_instance"] == 1
    settings = vlagent.VLAgentSettings(stage="ensemble", detectors=("shapes-cv", "shapes-cv/blur",
                                                                     "shapes-cv/jpeg"), sample=2)
    try:
        ensembled, runner = vlagent.answer(ROWS, programs, ex, settings, judge=BothYes())
        assert len(settings.stats["detectors"]) >= 2 and runner.switched == 1
        # The judge sides with its (wrong) caption answer: the verifier can hurt too.
        assert [c.result.answer for c in ensembled] == ["yes", "1"]
    finally:
        vlagent.close(settings)
    with pytest.raises(ValueError, match="judge"):
        vlagent.answer(ROWS, programs, ex, vlagent.VLAgentSettings(stage="caption"))
