"""VLAgent's verifiers: Eq. 1, box fusion, the silhouette (equal to scikit-learn's for
2 <= K <= N-1), exact 1-D k-means, Algorithm 1 stopping at M, the shapes-cv detector
variants, the caption verifier's decision table, and the three rewards."""
from __future__ import annotations

import random

import numpy as np
import pytest
from sklearn.metrics import silhouette_score

import rewards
from envs.data.render import render
from envs.data.scene import Obj, Scene, sample_scene
from envs.tools import build_namespace
from envs.tools.ensemble import area_iou, fuse_answers, fuse_boxes
from rewards.vlagent.caption import CaptionVerifier, decide, succinct
from rewards.vlagent.selection import best_k, kmeans_1d, select_models, silhouette


# ------------------------------------------------------------------------- Eq. 1
def test_eq1_identical_disjoint_and_partial():
    a = [(0, 0, 10, 10)]
    assert area_iou(a, a) == 1.0
    assert area_iou(a, [(20, 20, 30, 30)]) == 0.0
    assert area_iou(a, [(5, 0, 15, 10)]) == pytest.approx(50 / 150)


def test_eq1_counts_overlaps_within_one_list_once():
    # Two overlapping boxes cover 150 pixels, not 200: IoU with their union is 1.
    assert area_iou([(0, 0, 10, 10), (5, 0, 15, 10)], [(0, 0, 15, 10)]) == 1.0
    assert area_iou([(0, 0, 10, 10), (0, 0, 10, 10)], [(0, 0, 10, 10)]) == 1.0


def test_eq1_empty_cases():
    assert area_iou([], []) == 1.0            # both say "nothing there": agreement
    assert area_iou([], [(0, 0, 5, 5)]) == 0.0
    assert area_iou([(3, 3, 3, 9)], []) == 1.0  # zero-area boxes are no boxes


def test_fusion_keeps_majority_boxes_ranked_by_support():
    a, b, c = (0, 0, 10, 10), (50, 50, 60, 60), (100, 0, 110, 10)
    fused = fuse_boxes([[a, b], [b, (1, 0, 11, 10)], [c, b]])
    assert fused[0] == b and fused[1][:2] in ((0, 0), (1, 0)) and c not in fused
    assert fuse_boxes([[a], []]) == [a]  # one of two members is half: kept
    assert fuse_answers(["Red", "blue", "red."]) == "red"
    assert fuse_answers(["blue", "red"]) == "blue"  # a tie goes to the first member


# ------------------------------------------------------------- Eqs. 3-7, Alg. 1
def test_silhouette_equals_scikit_learn_for_2_to_n_minus_1():
    rng = np.random.default_rng(0)
    for _ in range(30):
        values = rng.random(int(rng.integers(3, 9))).round(2)
        for k in range(2, len(values)):
            labels = kmeans_1d(values, k)
            if len(set(labels)) < 2:
                continue
            ours = silhouette(values, labels)
            theirs = silhouette_score(values.reshape(-1, 1), labels, metric="manhattan")
            assert ours == pytest.approx(theirs, abs=1e-12)


def test_kmeans_1d_is_optimal_and_k1_kn_score_zero():
    values = [0.1, 0.12, 0.5, 0.52, 0.9]
    assert kmeans_1d(values, 3) == [0, 0, 1, 1, 2]
    assert silhouette(values, [0] * 5) == 0.0 and silhouette(values, list(range(5))) == 0.0
    k, labels, scores = best_k(values)
    assert k == 3 and scores[1] == scores[5] == 0.0
    assert best_k([0.5, 0.5, 0.5])[0] == 1  # nothing separates: keep everything


def test_selection_keeps_the_best_cluster_and_stops_at_m():
    good = [[(0, 0, 10, 10)]] * 4
    outputs = {"a": good, "b": good, "c": [[(0, 0, 9, 10)]] * 4, "d": [[(50, 50, 60, 60)]] * 4,
               "e": [[(70, 0, 80, 10)]] * 4}
    chosen, rounds = select_models(outputs, minimum=2)
    assert set(chosen) == {"a", "b", "c"} and len(rounds) == 1
    chosen, rounds = select_models(outputs, minimum=4)  # a second round from what is left
    assert len(chosen) >= 4 and len(rounds) == 2 and chosen[:3] == rounds[0]["chosen"]
    assert select_models(outputs, minimum=9)[0].__len__() == 5  # runs out of models
    with pytest.raises(ValueError):
        select_models(outputs, minimum=0)


def test_vqa_selection_scores_word_overlap():
    answers = {"a": ["red", "two"], "b": ["red", "2"], "c": ["red", "two"], "d": ["blue", "one"]}
    chosen, rounds = select_models(answers, minimum=1, kind="vqa")
    assert set(chosen) == {"a", "b", "c"} and rounds[0]["scores"]["d"] == 0.0


# ------------------------------------------------------------------ detectors
def test_detector_variants_see_the_scene_differently_but_agree_roughly():
    rng = random.Random(3)
    scene = sample_scene(rng)
    img = np.asarray(render(scene))
    truth = [o.box(scene.size) for o in scene.objects]
    for name in ("shapes-cv", "shapes-cv/half", "shapes-cv/blur", "shapes-cv/jpeg", "ensemble"):
        boxes = [(p.left, p.lower, p.right, p.upper)
                 for p in build_namespace(name)["ImagePatch"](img).find("object")]
        assert area_iou(boxes, truth) > 0.6, name


# ------------------------------------------------------------ caption verifier
@pytest.mark.parametrize("program,clue,caption,prefers,expected", [
    ("yes", False, "no", True, ("yes", False)),     # no clue: keep
    ("yes", True, "yes", True, ("yes", False)),     # agree: keep
    ("Yes.", True, "yes", False, ("Yes.", False)),  # agree after normalising
    ("yes", True, "no", True, ("no", True)),        # explicit clue, disagree: switch
    ("yes", True, "no", False, ("yes", False)),     # judge sides with the program: keep
    (None, True, "2", True, ("2", True)),           # program failed: the caption answers
    (None, False, "2", True, (None, False)),
    ("red", True, None, True, ("red", False)),      # the caption gave no answer
])
def test_caption_decision_table(program, clue, caption, prefers, expected):
    assert decide(program, clue, caption, prefers) == expected


class ScriptedJudge:
    """Stands in for the LLM judge: it answers VLAgent's three questions by reading the
    caption literally.  The embedded model runs as the judge in the integration test."""

    def batch(self, prompts, long_answers):
        out = []
        for p in prompts:
            caption = p.split("\n")[0]
            if "yes or no" in p:
                out.append("Yes" if "circle" in caption else "No")
            elif "A or B" in p:
                out.append("A")
            else:
                out.append("Yes, there is." if "red circle" in caption else "No.")
        return out


def test_caption_verifier_asks_three_questions_and_applies_the_rule():
    verdicts = CaptionVerifier(ScriptedJudge()).verify(
        ["Is there a red circle?"] * 3 + ["How many squares?"],
        ["a large red circle", "a large red circle", None, "a blue square"], ["no", "yes", "no", "1"])
    assert [(v.final, v.switched) for v in verdicts] == [("yes", True), ("yes", False), ("no", False),
                                                        ("1", False)]
    assert succinct("The  Two circles.\nmore") == "2 circles"


# ------------------------------------------------------------------- rewards
def test_rewards_are_registered_label_free_and_trl_shaped():
    for name in ("parse", "caption_agreement", "ensemble_iou"):
        assert name in rewards.available()
    img = render(Scene([Obj("circle", "red", "large", 60, 128), Obj("square", "blue", "small", 180, 60)]))
    script = "BOX0=LOC(image=IMAGE,object='red circle')\nANSWER0=COUNT(box=BOX0)\nFINAL_RESULT=RESULT(var=ANSWER0)"
    program = 'def execute_command(image):\n    p = ImagePatch(image)\n    return len(p.find("blue squares"))\n'
    misnamed = program.replace("p.find(", "p.find_all(")
    broken = script.replace("LOC(", "FIND(").rsplit("\n", 1)[0]
    prompts = ["Question: q\nProgram:\n", "", "Question: q\nProgram:\n"]
    cols = {"image": [img] * 3, "question": ["How many red circles are there?"] * 3}
    assert rewards.get("parse")(prompts, [script, misnamed, broken], **cols) == [1.0, 0.75, 0.5]
    assert rewards.get("parse")(prompts, [script] * 3, penalty=0.5, **cols)[0] == 1.0
    ious = rewards.get("ensemble_iou")(prompts, [script, program, "ANSWER0=CAP(image=IMAGE)"], **cols)
    assert ious[0] > 0.8 and ious[1] > 0.8 and ious[2] is None
    assert rewards.get("ensemble_iou")(prompts, [script] * 3) == [None] * 3
    with pytest.raises(ValueError, match="penalty"):
        rewards.get("parse").check_kwargs({"penalty": 2})
    with pytest.raises(ValueError, match="unknown detector"):
        rewards.get("ensemble_iou").check_kwargs({"detectors": ["owl"]})
