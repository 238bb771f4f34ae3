"""The verified "scene" unit-test source (rewards.unit_tests.scene_tests)."""
import json
import random
import time
from collections import Counter

import pytest

from envs.data.questions import sample_question
from envs.data.scene import Scene, fits, sample_scene
from envs.data.spec import FAMILIES, answer_spec
from rewards.unit_tests.scene_tests import scene_candidates
from envs.data.layout import cell_of, on_grid, parse_caption
from rewards.unit_tests.types import UnitTest


def questions(per_family: int, seed: int = 0):
    rng = random.Random(seed)
    for family in FAMILIES:
        got = 0
        while got < per_family:
            try:
                q = sample_question(rng, sample_scene(rng), families=[family])
            except ValueError:  # this scene cannot carry that family
                continue
            got += 1
            yield q


def cells(scene: Scene):
    return [(o.shape, o.color, o.size, cell_of(o, scene.size)) for o in scene.objects]


def test_captions_reproduce_scene_and_answer_for_every_family():
    n_questions = n_tests = 0
    for k, q in enumerate(questions(per_family=34)):  # 306 questions
        tests = scene_candidates(q["spec"], 20, rng=k)
        assert tests, q["spec"]
        n_questions += 1
        for t in tests:
            scene = Scene.from_json(t.scene)
            assert on_grid(scene) and not scene.clutter
            assert answer_spec(q["spec"], scene) == t.answer
            back = parse_caption(t.caption, seed=k)
            assert back is not None, t.caption
            assert cells(back) == cells(scene), t.caption
            assert answer_spec(q["spec"], back) == t.answer, (t.caption, q["spec"])
            n_tests += 1
    assert n_questions >= 300 and n_tests >= 300 * 15


def test_candidate_fields_and_distinct_captions():
    spec = {"family": "attribute", "attr": "color", "obj": {"shape": "square", "size": "small"}}
    tests = scene_candidates(spec, 20, rng=3)
    assert len(tests) == 20
    assert all(isinstance(t, UnitTest) and t.source == "scene" for t in tests)
    assert len({t.caption for t in tests}) == 20
    for t in tests:
        scene = Scene.from_json(t.scene)
        assert all(fits(o, [p for p in scene.objects if p is not o], scene.size, False)
                   for o in scene.objects)
    assert len({t.answer for t in tests}) >= 4  # the square's colour varies


@pytest.mark.parametrize("spec", [
    {"family": "existence", "obj": {"color": "red", "shape": "circle"}},
    {"family": "spatial_verify", "a": {"shape": "square"}, "rel": "left", "b": {"color": "blue"}},
    {"family": "logic", "op": "and", "a": {"color": "green"},
     "b": {"shape": "triangle", "size": "large"}},
    {"family": "count_compare", "op": "more", "a": {"shape": "circle"}, "b": {"color": "yellow"}},
    {"family": "itm", "text": "...", "claims": [
        {"kind": "rel", "a": {"color": "red", "shape": "circle"}, "rel": "above",
         "b": {"color": "blue", "shape": "square"}}]},
])
def test_yes_no_questions_get_both_answers_evenly(spec):
    for seed in range(5):
        counts = Counter(t.answer for t in scene_candidates(spec, 20, rng=seed))
        assert set(counts) == {"yes", "no"}, counts
        assert min(counts.values()) >= 8, counts


def test_counting_gets_several_counts():
    spec = {"family": "counting", "obj": {"shape": "triangle"}}
    counts = Counter(t.answer for t in scene_candidates(spec, 20, rng=0))
    assert len(counts) >= 4 and "0" in counts and max(counts.values()) <= 6, counts


def test_choose_answers_are_the_options():
    spec = {"family": "choose", "attr": "color", "obj": {"shape": "circle"},
            "options": ["red", "cyan"]}
    answers = Counter(t.answer for t in scene_candidates(spec, 20, rng=1))
    assert set(answers) == {"red", "cyan"}


def test_spatial_query_is_answerable():
    spec = {"family": "spatial_query", "attr": "color", "a": {}, "rel": "left",
            "b": {"color": "gray", "shape": "circle"}}
    tests = scene_candidates(spec, 20, rng=0)
    assert len(tests) == 20 and len({t.answer for t in tests}) >= 4


def test_deterministic_and_accepts_json_and_random():
    spec = {"family": "existence", "obj": {"size": "large", "color": "purple"}}
    a = scene_candidates(spec, 10, rng=7)
    b = scene_candidates(json.dumps(spec), 10, rng=random.Random(7))
    assert [(t.caption, t.answer) for t in a] == [(t.caption, t.answer) for t in b]
    assert len(scene_candidates(spec, 3, rng=0)) == 3
    assert scene_candidates(spec, 0, rng=0) == []


def test_other_canvas():
    spec = {"family": "counting", "obj": {"color": "red"}}
    for t in scene_candidates(spec, 10, rng=0, canvas=512):
        scene = Scene.from_json(t.scene)
        assert scene.size == 512
        assert parse_caption(t.caption, canvas=512).objects == scene.objects


def test_fast_enough_for_the_rl_loop():
    specs = [q["spec"] for q in questions(per_family=3, seed=5)]
    start = time.perf_counter()
    for k, spec in enumerate(specs):
        scene_candidates(spec, 20, rng=k)
    per_call = (time.perf_counter() - start) / len(specs)
    assert per_call < 0.1, per_call  # typically a few ms; generous for shared CI machines
