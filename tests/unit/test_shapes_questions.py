"""Question families: ground truth from the scene graph, well-definedness, phrasing."""
import collections
import random
import re

import pytest

from envs.data.questions import sample_question
from envs.data.scene import Obj, Scene, sample_scene
from envs.data.spec import FAMILIES, UndefinedQuestion, answer_spec, well_defined

RED_CIRCLE = {"color": "red", "shape": "circle"}


@pytest.fixture
def scene():
    return Scene([
        Obj("circle", "red", "large", 50.0, 200.0),
        Obj("square", "blue", "small", 150.0, 200.0),
        Obj("triangle", "green", "large", 200.0, 60.0),
        Obj("square", "red", "small", 60.0, 60.0),
    ])


@pytest.mark.parametrize("spec, answer", [
    ({"family": "existence", "obj": RED_CIRCLE}, "yes"),
    ({"family": "existence", "obj": {"color": "blue", "shape": "circle"}}, "no"),
    ({"family": "counting", "obj": {"color": "red"}}, "2"),
    ({"family": "counting", "obj": {}}, "4"),
    ({"family": "counting", "obj": {"color": "red", "shape": "triangle"}}, "0"),
    ({"family": "attribute", "attr": "color", "obj": {"shape": "circle"}}, "red"),
    ({"family": "attribute", "attr": "shape", "obj": {"color": "green"}}, "triangle"),
    ({"family": "attribute", "attr": "size", "obj": {"color": "blue"}}, "small"),
    ({"family": "choose", "attr": "color", "obj": {"shape": "circle"},
      "options": ["blue", "red"]}, "red"),
    ({"family": "choose", "attr": "shape", "obj": {"color": "green"},
      "options": ["triangle", "square"]}, "triangle"),
    ({"family": "spatial_verify", "a": RED_CIRCLE, "rel": "left", "b": {"color": "blue"}}, "yes"),
    ({"family": "spatial_verify", "a": RED_CIRCLE, "rel": "right", "b": {"color": "blue"}}, "no"),
    ({"family": "spatial_verify", "a": {"color": "green"}, "rel": "below",
      "b": {"color": "blue"}}, "yes"),
    ({"family": "spatial_verify", "a": {"color": "green"}, "rel": "above",
      "b": {"color": "blue"}}, "no"),
    ({"family": "spatial_query", "attr": "color", "a": {"shape": "triangle"}, "rel": "right",
      "b": {"color": "blue"}}, "green"),
    ({"family": "spatial_query", "attr": "color", "a": {"size": "large"}, "rel": "left",
      "b": {"color": "blue"}}, "red"),
    ({"family": "count_compare", "op": "more", "a": {"color": "red"}, "b": {"color": "blue"}}, "yes"),
    ({"family": "count_compare", "op": "fewer", "a": {"color": "red"}, "b": {"color": "blue"}}, "no"),
    ({"family": "count_compare", "op": "same", "a": {"color": "blue"}, "b": {"color": "green"}}, "yes"),
    ({"family": "logic", "op": "and", "a": RED_CIRCLE, "b": {"color": "blue", "shape": "triangle"}}, "no"),
    ({"family": "logic", "op": "or", "a": RED_CIRCLE, "b": {"color": "blue", "shape": "triangle"}}, "yes"),
    ({"family": "itm", "claims": [{"kind": "rel", "a": {"color": "red"}, "rel": "left",
                                   "b": {"color": "blue"}}]}, "yes"),
    ({"family": "itm", "claims": [{"kind": "count", "obj": {"color": "red"}, "n": 2},
                                  {"kind": "exist", "obj": {"shape": "triangle"}}]}, "yes"),
    ({"family": "itm", "claims": [{"kind": "exist", "obj": {"color": "green", "shape": "circle"}},
                                  {"kind": "rel", "a": {"color": "red"}, "rel": "above",
                                   "b": {"color": "blue"}}]}, "no"),
])
def test_answer_spec_every_family(scene, spec, answer):
    assert answer_spec(spec, scene) == answer


@pytest.mark.parametrize("spec", [
    {"family": "attribute", "attr": "shape", "obj": {"color": "red"}},         # two red objects
    {"family": "attribute", "attr": "shape", "obj": {"color": "purple"}},      # none
    {"family": "choose", "attr": "color", "obj": {"shape": "circle"}, "options": ["blue", "green"]},
    {"family": "spatial_verify", "a": RED_CIRCLE, "rel": "above", "b": {"color": "blue"}},  # same y
    {"family": "spatial_query", "attr": "color", "a": {"size": "small"}, "rel": "below",
     "b": {"shape": "circle"}},                                                  # blue square: same y
    {"family": "spatial_query", "attr": "shape", "a": {}, "rel": "below", "b": {"color": "blue"}},
    {"family": "itm", "claims": [{"kind": "rel", "a": {"shape": "circle"}, "rel": "below",
                                  "b": {"color": "blue"}}]},                    # only ambiguous pair
])
def test_ill_defined_questions_raise(scene, spec):
    with pytest.raises(UndefinedQuestion):
        answer_spec(spec, scene)
    assert not well_defined(spec, scene)


def test_unknown_family_is_a_clear_error(scene):
    with pytest.raises(ValueError, match="known: existence"):
        answer_spec({"family": "nope"}, scene)


def test_sampled_questions_are_well_defined_and_simple():
    rng = random.Random(0)
    families, answers = collections.Counter(), collections.defaultdict(collections.Counter)
    for _ in range(600):
        s = sample_scene(rng)
        q = sample_question(rng, s)
        assert set(q) == {"question", "answer", "answers", "family", "spec"}
        assert q["answer"] == answer_spec(q["spec"], s) and q["answers"] == [q["answer"]]
        assert re.fullmatch(r"[a-z0-9]+", q["answer"]), q
        assert q["question"][0].isupper()
        assert q["question"].endswith("?") or q["family"] == "itm"
        families[q["family"]] += 1
        answers[q["family"]][q["answer"]] += 1
    assert set(families) == set(FAMILIES)
    for fam in ("existence", "spatial_verify", "count_compare", "logic", "itm"):
        yes, no = answers[fam]["yes"], answers[fam]["no"]
        assert min(yes, no) >= 0.3 * (yes + no), (fam, yes, no)


def test_phrasing_examples():
    rng = random.Random(5)
    texts = [sample_question(rng, sample_scene(rng), [f])["question"] for f in FAMILIES
             for _ in range(3)]
    joined = "\n".join(texts)
    assert "How many" in joined and "Verify image matches text=\"" in joined
    assert re.search(r"to the (left|right) of|above|below", joined)


def test_family_filter_and_errors():
    rng = random.Random(1)
    q = sample_question(rng, sample_scene(rng), families=["itm"])
    assert q["family"] == "itm" and q["question"].startswith('Verify image matches text="')
    with pytest.raises(ValueError, match="unknown question families"):
        sample_question(rng, sample_scene(rng), families=["bogus"])
    lonely = Scene([Obj("circle", "red", "small", 100.0, 100.0)])
    with pytest.raises(ValueError):
        sample_question(rng, lonely, families=["spatial_verify"])
