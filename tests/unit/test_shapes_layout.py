"""Captions <-> layouts for the shapes world (envs.data.layout)."""
import json
import random

import pytest

from envs.data.scene import Obj, Scene, fits, sample_scene
from envs.data.spec import REL_MARGIN, relation
from envs.data.vocab import COLORS, SHAPES, SIZES
from envs.data.layout import (
    LAYOUT_PROMPT, LLMLayout, caption_scene, caption_to_scene, captions_to_scenes, cell_center,
    cell_of, layout_prompt, on_grid, parse_caption, parse_layout_json)


def grid_scene(rng: random.Random, canvas: int = 256) -> Scene:
    cells = sorted(rng.sample(range(9), rng.randint(1, 9)))
    return Scene([Obj(rng.choice(SHAPES), rng.choice(tuple(COLORS)), rng.choice(SIZES),
                      *cell_center(c, canvas)) for c in cells], size=canvas)


def attrs(scene):
    return sorted((o.shape, o.color, o.size) for o in scene.objects)


def only(scene, **desc):
    found = [o for o in scene.objects if all(getattr(o, k) == v for k, v in desc.items())]
    assert len(found) == 1, (desc, scene.objects)
    return found[0]


def assert_valid(scene):
    objs = scene.objects
    for i, o in enumerate(objs):
        assert fits(o, objs[:i] + objs[i + 1:], scene.size, overlap=False), o


# ------------------------------------------------------------------- round trip

def test_canonical_caption_round_trips_exactly():
    rng = random.Random(0)
    for k in range(400):
        canvas = 256 if k % 4 else 512
        scene = grid_scene(rng, canvas)
        assert on_grid(scene)
        caption = caption_scene(scene)
        back = parse_caption(caption, seed=k, canvas=canvas)
        assert back is not None, caption
        assert back.objects == scene.objects, caption  # same order, attributes and cells


def test_canonical_caption_wording():
    scene = Scene([Obj("circle", "red", "large", *cell_center(0)),
                   Obj("square", "blue", "small", *cell_center(4)),
                   Obj("triangle", "gray", "small", *cell_center(8))])
    assert caption_scene(scene) == ("A large red circle at the top left, a small blue square "
                                    "in the center and a small gray triangle at the bottom right.")
    assert caption_scene(Scene([])) == "An empty image with no shapes."
    assert parse_caption(caption_scene(Scene([]))).objects == []


def test_top_means_large_y():
    top, bottom = cell_center(1), cell_center(7)
    assert top[1] > bottom[1] and top[0] == bottom[0]
    assert cell_of(Obj("circle", "red", "small", *top)) == 1


def test_off_grid_scenes_get_distinct_cells_and_parse():
    rng = random.Random(1)
    for _ in range(50):
        scene = sample_scene(rng, n_min=1, n_max=8)
        back = parse_caption(caption_scene(scene))
        assert back is not None and attrs(back) == attrs(scene)


# ---------------------------------------------------------------- free captions

def test_left_of_relation():
    for seed in range(20):
        s = parse_caption("A red circle to the left of a blue square", seed=seed)
        circle, square = only(s, shape="circle", color="red"), only(s, shape="square", color="blue")
        assert square.x - circle.x > REL_MARGIN
        assert len(s.objects) == 2


@pytest.mark.parametrize("caption,rel", [
    ("A blue square above a red triangle", "above"),
    ("A blue square is below the red triangle.", "below"),
    ("A blue square on top of a red triangle", "above"),
    ("A blue square under a red triangle", "below"),
    ("A blue square right of a red triangle", "right"),
    ("A blue square on the left side of a red triangle", "left"),
])
def test_relations(caption, rel):
    for seed in range(10):
        s = parse_caption(caption, seed=seed)
        a, b = only(s, shape="square", color="blue"), only(s, shape="triangle", color="red")
        assert relation(a, rel, b) is True, (caption, s.objects)


def test_inverse_relations_and_pronouns():
    s = parse_caption("Above the square there is a red circle.")
    assert relation(only(s, shape="circle"), "above", only(s, shape="square")) is True
    s = parse_caption("A red circle with a blue square above it")
    assert relation(only(s, shape="square"), "above", only(s, shape="circle")) is True
    s = parse_caption("A red circle, and to the left of it a blue square.")
    assert relation(only(s, shape="square"), "left", only(s, shape="circle")) is True


def test_counts_sizes_colours():
    s = parse_caption("Two small green triangles and a large yellow circle")
    assert attrs(s) == [("circle", "yellow", "large"), ("triangle", "green", "small"),
                        ("triangle", "green", "small")]
    s = parse_caption("An image with three circles")
    assert [o.shape for o in s.objects] == ["circle"] * 3
    s = parse_caption("4 big grey discs")
    assert attrs(s) == [("circle", "gray", "large")] * 4
    s = parse_caption("Some squares")
    assert len(s.objects) in (2, 3) and {o.shape for o in s.objects} == {"square"}


def test_generic_nouns_do_not_inflate_other_counts():
    # "two circles and a red object": the red object must not be a circle, the circles
    # must not be red, whatever the seed.
    for seed in range(30):
        s = parse_caption("Two circles and a red object", seed=seed)
        assert sum(o.shape == "circle" for o in s.objects) == 2
        assert sum(o.color == "red" for o in s.objects) == 1


def test_grid_positions():
    s = parse_caption("A yellow triangle on the right side")
    assert s.objects[0].x > 2 * 256 / 3
    s = parse_caption("A red circle in the top-left corner of the image")
    assert cell_of(s.objects[0]) == 0
    s = parse_caption("A square at the bottom and a circle in the center")
    assert only(s, shape="square").y < 256 / 3 and cell_of(only(s, shape="circle")) == 4
    s = parse_caption("On the left, a green circle.")
    assert s.objects[0].x < 256 / 3
    for seed in range(10):
        s = parse_caption("Three circles at the top", seed=seed)
        assert len(s.objects) == 3 and all(cell_of(o) in (0, 1, 2) for o in s.objects)


def test_ellipsis_predicates_and_reference():
    s = parse_caption("A red and a blue circle")
    assert attrs(s) == [("circle", "blue", s.objects[1].size), ("circle", "red", s.objects[0].size)]
    s = parse_caption("A red circle and a blue one")
    assert sorted(o.shape for o in s.objects) == ["circle", "circle"]
    s = parse_caption("The circle is red and the square is blue.")
    assert only(s, shape="circle").color == "red" and only(s, shape="square").color == "blue"
    s = parse_caption("A circle and a square. The circle is above the square.")
    assert len(s.objects) == 2
    assert relation(only(s, shape="circle"), "above", only(s, shape="square")) is True


def test_negation():
    for seed in range(30):
        s = parse_caption("No red objects, just a green square", seed=seed)
        assert attrs(s)[0][:2] == ("square", "green") and len(s.objects) == 1
        s = parse_caption("Three shapes but no circles", seed=seed)
        assert len(s.objects) == 3 and all(o.shape != "circle" for o in s.objects)
        s = parse_caption("Four objects and no red or blue squares", seed=seed)
        assert len(s.objects) == 4
        assert not any(o.shape == "square" and o.color in ("red", "blue") for o in s.objects)
        s = parse_caption("The circle is not red.", seed=seed)
        assert only(s, shape="circle").color != "red"
        s = parse_caption("Two squares, no squares on the left", seed=seed)
        assert all(cell_of(o) % 3 != 0 for o in s.objects)
    assert parse_caption("There are no circles").objects == []
    assert parse_caption("An empty white canvas").objects == []
    assert parse_caption("A blank image").objects == []
    assert parse_caption("No red objects, just a red circle") is None  # contradiction


@pytest.mark.parametrize("caption", [
    "Hello world", "A cat on a sofa", "", "   ", "A white circle", "A pink square above a circle",
    "A red star", "More circles than squares", "Three circles, two of which are red",
    "There are three.", "Ten circles", "Two circles at the top left",
    "A circle to the left of a square and the square to the left of the circle",
])
def test_unparsable_or_unsatisfiable(caption):
    assert parse_caption(caption) is None


def test_background_colour_words_are_harmless():
    s = parse_caption("A blue circle on a white background")
    assert attrs(s)[0][:2] == ("circle", "blue") and len(s.objects) == 1


def test_deterministic_given_seed():
    cap = "Three objects and a small triangle on the left"
    a, b = parse_caption(cap, seed=3), parse_caption(cap, seed=3)
    assert a.to_json() == b.to_json()
    assert len({parse_caption(cap, seed=k).to_json() for k in range(10)}) > 1
    for k in range(10):
        assert_valid(parse_caption(cap, seed=k))


# ------------------------------------------------------------------- LLM layout

VALID = json.dumps({"objects": [
    {"shape": "circle", "color": "red", "size": "large", "box": [0.1, 0.4, 0.27, 0.57]},
    {"shape": "square", "color": "blue", "size": "small", "box": [0.7, 0.45, 0.79, 0.54]}]})


def test_parse_layout_json_fences_prose_and_coordinates():
    text = f"Here you go:\n```json\n{VALID}\n```\nAnything else?"
    s = parse_layout_json(text)
    circle, square = s.objects
    assert (circle.shape, circle.color, circle.size) == ("circle", "red", "large")
    assert relation(circle, "left", square) is True
    # Box y is measured from the TOP: a box near y=0 lands at a large scene y.
    top = parse_layout_json('{"objects": [{"shape": "triangle", "color": "green", '
                            '"size": "small", "box": [0.45, 0.02, 0.54, 0.11]}]}')
    assert top.objects[0].y > 200


def test_parse_layout_json_repairs():
    # Trailing commas, capitals, synonyms, size from the box, pixel boxes, overlap.
    text = ('{"objects": [{"shape": "Circle", "color": "grey", "box": [0.1, 0.1, 0.28, 0.28]},'
            ' {"shape": "squares", "color": "red", "size": "small", "box": [30, 30, 50, 50]},]}')
    s = parse_layout_json(text)
    assert [(o.shape, o.color, o.size) for o in s.objects] == [
        ("circle", "gray", "large"), ("square", "red", "small")]
    assert_valid(s)
    # Boxes outside the canvas are clamped in.
    s = parse_layout_json('[{"shape": "circle", "color": "red", "size": "large", '
                          '"box": [-0.5, 1.2, -0.1, 1.5]}]')
    assert_valid(s)
    assert parse_layout_json('{"objects": []}').objects == []


@pytest.mark.parametrize("text", [
    "no json here", "{}", '{"objects": "none"}',
    # One undrawable object rejects the whole layout (dropping it would change answers).
    '{"objects": [{"shape": "circle", "color": "pink", "size": "small", "box": [0, 0, 0.1, 0.1]},'
    ' {"shape": "square", "color": "red", "size": "small", "box": [0.5, 0.5, 0.6, 0.6]}]}',
    '{"objects": [{"shape": "star", "color": "red", "size": "small", "box": [0, 0, 0.1, 0.1]}]}',
    '{"objects": [{"shape": "circle", "color": "red", "size": "medium", "box": [0, 0, 0.1, 0.1]}]}',
    '{"objects": [{"shape": "circle", "color": "red", "size": "small"}]}',
    '{"objects": [{"shape": "circle", "color": "red", "size": "small", "box": [0, 0, "x", 1]}]}',
])
def test_parse_layout_json_rejects(text):
    assert parse_layout_json(text) is None


class Scripted:
    def __init__(self, replies):
        self.replies, self.calls = replies, []

    def __call__(self, prompts, n):
        self.calls.append((list(prompts), n))
        return [list(self.replies[:n]) for _ in prompts]


def test_llm_layout_takes_first_valid_candidate():
    llm = Scripted(["I cannot draw that.", VALID, '{"objects": []}'])
    layout = LLMLayout(llm, candidates=3)
    (scene,) = layout(["A big red ball left of a small blue box"])
    assert [o.shape for o in scene.objects] == ["circle", "square"]
    prompts, n = llm.calls[0]
    assert n == 3
    assert prompts[0].endswith("Caption: A big red ball left of a small blue box\nLayout:")
    assert prompts[0].startswith(LAYOUT_PROMPT[:40])
    assert layout.stats == {"parsed": 1}


def test_llm_layout_all_junk_is_dropped():
    layout = LLMLayout(Scripted(["junk", "```json\n{broken\n```"]), candidates=2)
    assert layout(["x", "y"]) == [None, None]
    assert layout.stats["dropped"] == 2
    assert layout([]) == []


def test_caption_to_scene_rules_first_then_llm():
    llm = Scripted([VALID])
    layout = LLMLayout(llm, candidates=1)
    s = caption_to_scene("A green triangle", llm_layout=layout)
    assert s.objects[0].shape == "triangle" and not llm.calls
    s = caption_to_scene("A big red ball left of a small blue box", llm_layout=layout)
    assert s is not None and len(llm.calls) == 1
    assert caption_to_scene("A cat on a sofa") is None
    got = captions_to_scenes(["A circle", "a cat", "a dog"], llm_layout=layout)
    assert all(g is not None for g in got)
    assert len(llm.calls) == 2 and len(llm.calls[1][0]) == 2  # one batched call for the misses


def test_prompt_examples_are_valid_layouts():
    for line in LAYOUT_PROMPT.splitlines():
        if line.startswith("Layout: "):
            assert parse_layout_json(line[len("Layout: "):]) is not None, line
    assert "{caption}" not in layout_prompt("A red circle")
