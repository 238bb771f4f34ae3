"""shapes-cv perception on rendered scenes: detection rates and phrase resolution."""
import random

import numpy as np
import pytest

from envs.data.render import render
from envs.data.scene import Obj, Scene, sample_scene
from envs.tools import build_namespace


def _iou(a, b):
    ix = min(a[2], b[2]) - max(a[0], b[0])
    iy = min(a[3], b[3]) - max(a[1], b[1])
    if ix <= 0 or iy <= 0:
        return 0.0
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def detection_rate(n: int, overlap: bool, clutter: float, seed: int = 0) -> float:
    """Fraction of objects found (box IoU >= 0.5) with the right colour, shape and size,
    reading attributes back through the public API as a program would."""
    rng = random.Random(seed)
    hit = total = 0
    for _ in range(n):
        scene = sample_scene(rng, overlap=overlap, clutter=clutter)
        ImagePatch = build_namespace("shapes-cv")["ImagePatch"]
        found = [((p.left, p.lower, p.right, p.upper), p.simple_query("What color is this?"),
                  p.simple_query("What shape is this?"), p.simple_query("What size is this?"))
                 for p in ImagePatch(np.asarray(render(scene))).find("object")]
        for o in scene.objects:
            total += 1
            box = o.box(scene.size)
            best = max(found, key=lambda f: _iou(f[0], box), default=None)
            hit += bool(best and _iou(best[0], box) >= 0.5
                        and best[1:] == (o.color, o.shape, o.size))
    return hit / total


def test_detects_objects_on_clean_scenes():
    rate = detection_rate(200, overlap=False, clutter=0.0)
    print(f"\nshapes-cv detection, 200 clean scenes: {rate:.2%}")
    assert rate >= 0.98


def test_degrades_gracefully_with_overlap_and_clutter():
    rates = {(ov, cl): detection_rate(100, ov, cl, seed=1)
             for ov, cl in [(False, 0.0), (False, 0.5), (False, 1.0), (True, 0.0), (True, 1.0)]}
    for (ov, cl), r in rates.items():
        print(f"shapes-cv detection overlap={ov} clutter={cl}: {r:.2%}")
    chance = 1 / 48  # 8 colours x 3 shapes x 2 sizes
    assert all(r > 20 * chance for r in rates.values())
    assert rates[(False, 0.0)] >= rates[(False, 1.0)] - 0.01
    assert rates[(False, 0.0)] >= rates[(True, 0.0)]
    assert rates[(True, 0.0)] >= rates[(True, 1.0)] - 0.05
    assert rates[(False, 1.0)] >= 0.9 and rates[(True, 1.0)] >= 0.7


SCENE = Scene([Obj("circle", "red", "large", 50.0, 200.0),
               Obj("circle", "blue", "small", 130.0, 200.0),
               Obj("square", "blue", "large", 200.0, 60.0),
               Obj("triangle", "yellow", "small", 60.0, 60.0)])


@pytest.fixture(scope="module")
def patch():
    return build_namespace("shapes-cv")["ImagePatch"](np.asarray(render(SCENE)))


@pytest.mark.parametrize("phrase, n", [
    ("object", 4), ("objects", 4), ("shape", 4), ("circle", 2), ("circles", 2),
    ("red circle", 1), ("blue object", 2), ("large blue square", 1), ("small blue square", 0),
    ("balls", 2), ("grey square", 0), ("dog", 0), ("red dog", 0), ("the yellow triangle", 1),
])
def test_find_resolves_phrases(patch, phrase, n):
    assert len(patch.find(phrase)) == n
    assert patch.exists(phrase) == (n > 0)


@pytest.mark.parametrize("question, answer", [
    ("How many circles are there?", "2"),
    ("How many blue objects are in the image?", "2"),
    ("How many dogs are there?", "0"),
    ("What color is the square?", "blue"),
    ("What shape is the yellow object?", "triangle"),
    ("What size is the red circle?", "large"),
    ("Is there a yellow triangle?", "yes"),
    ("Is there a green triangle?", "no"),
    ("Is the square blue?", "yes"),
    ("Is the triangle red or yellow?", "yellow"),
    ("Is the yellow object a circle or a triangle?", "triangle"),
])
def test_simple_query(patch, question, answer):
    assert patch.simple_query(question) == answer


def test_queries_on_found_patches(patch):
    sq = patch.find("square")[0]
    assert sq.simple_query() == "square"
    assert sq.simple_query("What color is this?") == "blue"
    assert sq.verify_property("square", "blue") and sq.verify_property("square", "large")
    assert not sq.verify_property("square", "red") and not sq.verify_property("square", "shiny")
    circles = sorted(patch.find("circle"), key=lambda p: p.horizontal_center)
    assert [c.simple_query("What color is this?") for c in circles] == ["red", "blue"]
    left = patch.crop_left_of_bbox(circles[1].left, circles[1].lower, circles[1].right,
                                   circles[1].upper)
    assert [c.simple_query("What color is it?") for c in left.find("circle")] == ["red"]


def test_segmentation_is_fast():
    import time

    from envs.tools.shapes_cv import segment

    img = np.asarray(render(sample_scene(random.Random(0))))
    segment(img, (245, 245, 240), 256)
    t = time.perf_counter()
    for _ in range(20):
        segment(img, (245, 245, 240), 256)
    assert (time.perf_counter() - t) / 20 < 0.02  # generous: 2 shared cores
