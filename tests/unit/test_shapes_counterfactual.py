"""Counterfactual scenes and the logical-accuracy metric."""
import random

import numpy as np
import pytest

import json

from envs.data.counterfactual import (counterfactual_items, counterfactual_scenes,
                                      logical_accuracy, logical_eval, logical_report, normalize)
from envs.data.questions import sample_question
from envs.data.render import render
from envs.data.scene import Obj, Scene, fits, sample_scene
from envs.data.spec import FAMILIES, answer_spec, well_defined
from envs.tools import build_namespace

SPEC = {"family": "existence", "obj": {"color": "red", "shape": "circle"}}

RIGHT_FOR_WRONG_REASONS = '''
def execute_command(image):
    image_patch = ImagePatch(image)
    return bool_to_yesno(image_patch.exists("red object"))
'''
RIGHT = '''
def execute_command(image):
    image_patch = ImagePatch(image)
    return bool_to_yesno(len(image_patch.find("red circle")) > 0)
'''


def run(program: str, scene: Scene) -> str:
    # Trusted test programs only: the sandbox runs model-written code.
    ns = build_namespace("shapes-cv")
    exec(program, ns)
    return ns["execute_command"](np.asarray(render(scene)))


@pytest.fixture
def scene():
    return Scene([Obj("circle", "red", "large", 60.0, 190.0),
                  Obj("square", "blue", "small", 180.0, 70.0),
                  Obj("triangle", "green", "small", 190.0, 200.0)])


def test_counterfactuals_are_well_defined_distinct_and_targeted(scene):
    cfs = counterfactual_scenes(SPEC, scene, 12, random.Random(0))
    assert len(cfs) == 12
    keys = {s.to_json() for s in cfs}
    assert len(keys) == 12 and scene.to_json() not in keys
    assert all(well_defined(SPEC, s) for s in cfs)
    answers = {answer_spec(SPEC, s) for s in cfs}
    assert answers == {"yes", "no"}
    kinds = set()
    for s in cfs:
        if any(o.shape == "circle" and o.color != "red" for o in s.objects) and len(s.objects) == 3:
            kinds.add("recolor")
        if len(s.objects) == 2:
            kinds.add("remove")
        if any(o.color == "red" and o.shape == "circle" and o.x > 128 for o in s.objects):
            kinds.add("move")
    assert kinds == {"recolor", "remove", "move"}
    for s in cfs:  # no overlap introduced into a scene that had none
        for i, o in enumerate(s.objects):
            assert fits(o, s.objects[:i] + s.objects[i + 1:], s.size, overlap=False)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_keeps_its_question_defined(family):
    rng = random.Random(FAMILIES.index(family))
    for _ in range(5):
        s = sample_scene(rng)
        try:
            q = sample_question(rng, s, [family])
        except ValueError:
            continue
        cfs = counterfactual_scenes(q["spec"], s, 8, rng)
        assert len(cfs) >= 6, (q, len(cfs))
        assert all(well_defined(q["spec"], c) for c in cfs)


def test_counterfactuals_are_deterministic(scene):
    a = counterfactual_scenes(SPEC, scene, 6, random.Random(3))
    b = counterfactual_scenes(SPEC, scene, 6, random.Random(3))
    assert [s.to_json() for s in a] == [s.to_json() for s in b]


def test_right_for_wrong_reasons_is_flagged(scene):
    """ViUniT's failure mode: "yes whenever any red object exists" is right on the original
    image but wrong once the red circle is reshaped, recoloured or replaced by a red square."""
    assert answer_spec(SPEC, scene) == "yes"
    cfs = counterfactual_scenes(SPEC, scene, 10, random.Random(1))
    wrong = logical_report(run(RIGHT_FOR_WRONG_REASONS, scene), SPEC, scene,
                           [run(RIGHT_FOR_WRONG_REASONS, s) for s in cfs], cfs)
    assert wrong["accuracy"] == 1.0
    assert wrong["logical_accuracy"] < 1.0
    assert wrong["right_for_wrong_reasons"] is True
    right = logical_report(run(RIGHT, scene), SPEC, scene, [run(RIGHT, s) for s in cfs], cfs)
    assert right == {"accuracy": 1.0, "logical_accuracy": 1.0, "right_for_wrong_reasons": False,
                     "n_counterfactuals": 10}


def test_logical_accuracy_helpers(scene):
    cfs = counterfactual_scenes(SPEC, scene, 4, random.Random(2))
    truth = [answer_spec(SPEC, s) for s in cfs]
    assert logical_accuracy(truth, SPEC, cfs) == 1.0
    assert logical_accuracy([None] * 4, SPEC, cfs) == 0.0
    assert logical_accuracy([" YES. " if t == "yes" else "False" for t in truth], SPEC, cfs) == 1.0
    with pytest.raises(ValueError):
        logical_accuracy(truth[:2], SPEC, cfs)
    items = counterfactual_items(SPEC, scene, 3, random.Random(2))
    assert [i["answer"] for i in items] == truth[:3]
    assert items[0]["image"].size == (256, 256)


def test_normalize():
    assert normalize("Two") == "2" and normalize("True") == "yes" and normalize("a circle") == "circle"


def test_logical_eval_batches_one_program_over_all_images(scene):
    calls = []

    def answer_fn(images):
        calls.append(len(images))
        return [run_on_image(RIGHT_FOR_WRONG_REASONS, im) for im in images]

    # the dataset's JSON columns work as well as parsed values
    report = logical_eval(json.dumps(SPEC), scene.to_json(), answer_fn, m=8, seed=0)
    assert calls == [9] and report["n_counterfactuals"] == 8
    assert report["right_for_wrong_reasons"] is True


def run_on_image(program: str, image) -> str:
    ns = build_namespace("shapes-cv")
    exec(program, ns)
    return ns["execute_command"](np.asarray(image))


@pytest.mark.parametrize("family", FAMILIES)
def test_counterfactuals_change_the_answer_often_enough(family):
    """A program that memorised the original answer must not keep logical accuracy 1."""
    rng = random.Random(100 + FAMILIES.index(family))
    changed = total = questions = 0
    while questions < 12:
        s = sample_scene(rng)
        try:
            q = sample_question(rng, s, [family])
        except ValueError:
            continue
        questions += 1
        cfs = counterfactual_scenes(q["spec"], s, 8, rng)
        changed += sum(answer_spec(q["spec"], c) != q["answer"] for c in cfs)
        total += len(cfs)
    assert changed / total >= 0.08, (family, changed, total)
