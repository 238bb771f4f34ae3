"""Scenes and rendering of the synthetic shapes world."""
import random

import numpy as np
import pytest

from envs.data.render import render
from envs.data.scene import Obj, Scene, fits, sample_scene
from envs.data.vocab import BACKGROUND, COLORS, SHAPES, SIZES


def test_sample_scene_ranges_and_vocabulary():
    rng = random.Random(0)
    for _ in range(100):
        s = sample_scene(rng, n_min=2, n_max=8)
        assert 2 <= len(s.objects) <= 8
        for o in s.objects:
            assert o.shape in SHAPES and o.color in COLORS and o.size in SIZES
            left, lower, right, upper = o.box(s.size)
            assert 0 <= left < right <= s.size and 0 <= lower < upper <= s.size


def test_without_overlap_boxes_are_disjoint():
    rng = random.Random(1)
    for _ in range(100):
        s = sample_scene(rng)
        for i, o in enumerate(s.objects):
            assert fits(o, s.objects[:i] + s.objects[i + 1:], s.size, overlap=False)


def test_overlap_knob_produces_overlaps():
    rng = random.Random(2)
    scenes = [sample_scene(rng, overlap=True) for _ in range(50)]
    assert any(not fits(o, s.objects[:i] + s.objects[i + 1:], s.size, overlap=False)
               for s in scenes for i, o in enumerate(s.objects))


def test_json_roundtrip_and_numpy_rng():
    s = sample_scene(np.random.default_rng(3), clutter=0.5)
    assert Scene.from_json(s.to_json()) == s
    assert s.clutter and s.noise > 0


def test_sampling_is_deterministic():
    assert sample_scene(random.Random(7)) == sample_scene(random.Random(7))


def test_bad_arguments():
    with pytest.raises(ValueError):
        sample_scene(random.Random(0), n_min=5, n_max=2)
    with pytest.raises(ValueError):
        sample_scene(random.Random(0), clutter=1.5)


def test_render_uses_bottom_left_origin():
    s = Scene([Obj("square", "red", "small", 50.0, 200.0)])
    arr = np.asarray(render(s))
    assert arr.shape == (256, 256, 3) and arr.dtype == np.uint8
    assert tuple(arr[256 - 200, 50]) == COLORS["red"]  # y=200 is near the top
    assert tuple(arr[200, 50]) == BACKGROUND
    # the square covers exactly its 24-px box
    red = np.all(arr == COLORS["red"], axis=-1)
    rows, cols = np.nonzero(red)
    assert (cols.min(), cols.max() + 1) == (38, 62)
    assert (256 - (rows.max() + 1), 256 - rows.min()) == (188, 212)


def test_render_scales_and_is_deterministic_with_clutter():
    s = sample_scene(random.Random(4), clutter=1.0)
    a, b = np.asarray(render(s)), np.asarray(render(s))
    assert np.array_equal(a, b)
    assert render(s, size=128).size == (128, 128)
