"""The ImagePatch API: coordinates, crops, errors, memoisation and isolation."""
import numpy as np
import pytest
from PIL import Image

from envs.data.render import render
from envs.data.scene import Obj, Scene
from envs.tools import (Backend, available_backends, build_namespace, get_backend,
                        register_backend)

SCENE = Scene([Obj("square", "red", "small", 50.0, 200.0),
               Obj("circle", "blue", "large", 180.0, 60.0),
               Obj("triangle", "green", "large", 190.0, 225.0)])
IMG = np.asarray(render(SCENE))


@pytest.fixture
def ns():
    return build_namespace("shapes-cv")


def test_namespace_names(ns):
    for name in ("ImagePatch", "ImageObject", "bool_to_yesno", "best_image_match", "llm_query",
                 "distance", "coerce_to_numeric", "math", "List"):
        assert name in ns
    assert ns["bool_to_yesno"](True) == "yes" and ns["bool_to_yesno"](0) == "no"
    assert "shapes-cv" in available_backends()


def test_full_patch_and_bottom_left_origin(ns):
    p = ns["ImagePatch"](IMG)
    assert (p.left, p.lower, p.right, p.upper) == (0, 0, 256, 256)
    assert (p.width, p.height, p.area) == (256, 256, 256 * 256)
    sq = p.find("red square")[0]
    assert (sq.left, sq.lower, sq.right, sq.upper) == (38, 188, 62, 212)
    assert (sq.horizontal_center, sq.vertical_center) == (50.0, 200.0)
    assert sq.cropped_image.shape == (24, 24, 3)
    assert np.all(sq.cropped_image == IMG[256 - 212:256 - 188, 38:62])
    assert sq.category == "red square"
    circle = p.find("circle")[0]
    assert circle.vertical_center < sq.vertical_center  # the circle is lower in the picture


def test_constructor_crop_is_relative_and_clipped(ns):
    ImagePatch = ns["ImagePatch"]
    bottom = ImagePatch(IMG, 0, 0, 128, 64)
    assert np.array_equal(bottom.cropped_image, IMG[192:256, 0:128])
    inner = ImagePatch(bottom, 10, 10, 20, 30)  # relative to the patch it is cut from
    assert (inner.left, inner.lower, inner.right, inner.upper) == (10, 10, 20, 30)
    assert (bottom.crop(100, 0, 500, 64).right) == 128
    assert ImagePatch(Image.fromarray(IMG)).width == 256
    assert ImagePatch(np.concatenate([IMG, IMG[..., :1]], -1)).height == 256
    with pytest.raises(TypeError, match="expected an image"):
        ImagePatch("not an image")


def test_directional_crops(ns):
    p = ns["ImagePatch"](IMG)
    sq = p.find("red square")[0]
    box = (sq.left, sq.lower, sq.right, sq.upper)
    assert (p.crop_left_of_bbox(*box).right, p.crop_left_of_bbox(*box).left) == (38, 0)
    assert p.crop_right_of_bbox(*box).left == 62
    assert p.crop_above_bbox(*box).lower == 212 and p.crop_above_bbox(*box).upper == 256
    below = p.crop_below_bbox(*box)
    assert (below.lower, below.upper) == (0, 188)
    assert {q.simple_query("What shape is this?") for q in below.find("object")} == {"circle"}
    assert below.exists("circle") and not p.crop_right_of_bbox(*box).exists("red square")
    assert p.overlaps_with(*box) and not p.crop_left_of_bbox(*box).overlaps_with(100, 0, 120, 20)


def test_zero_area_crops_raise_clear_errors(ns):
    ImagePatch = ns["ImagePatch"]
    with pytest.raises(ValueError, match="zero-area"):
        ImagePatch(IMG, 10, 10, 10, 20)
    with pytest.raises(ValueError, match="zero-area"):
        ImagePatch(IMG, 300, 0, 400, 10)  # entirely outside the image
    p = ImagePatch(IMG)
    with pytest.raises(ValueError, match="crop_left_of_bbox: zero-area"):
        p.crop_left_of_bbox(0, 0, 10, 10)
    with pytest.raises(ValueError, match="crop_above_bbox: zero-area"):
        p.crop_above_bbox(0, 0, 10, 256)


def test_image_object_and_helpers(ns):
    obj = ns["ImageObject"](IMG)
    assert obj.describe() == ("a small red square, a large blue circle and a large green "
                              "triangle, from left to right")
    assert obj.answer("How many large objects are there?") == "2"
    p = ns["ImagePatch"](IMG)
    patches = p.find("object")
    best = ns["best_image_match"](patches, ["blue circle"])
    assert best.simple_query("What color is this?") == "blue"
    assert ns["best_image_match"](patches, ["green triangle"], return_index=True) == 2
    assert ns["best_image_match"]([], ["x"]) is None
    a, b = patches[0], patches[1]
    assert ns["distance"](a, b) > 0 and ns["distance"](a, a) == -1.0
    assert ns["distance"](3, 5) == 2
    assert ns["coerce_to_numeric"]("about 3 apples") == 3
    assert p.best_text_match(["red square", "yellow circle"]) == "red square"


def test_llm_query_needs_a_configured_llm(ns):
    with pytest.raises(RuntimeError, match="llm_query needs a text LLM backend"):
        ns["llm_query"]("Is a cat an animal?")
    assert build_namespace(llm=lambda q: "yes")["llm_query"]("Is a cat an animal?") == "yes"


def test_tool_argument_errors(ns):
    p = ns["ImagePatch"](IMG)
    with pytest.raises(TypeError, match="must be a string"):
        p.find(["circle"])


class CountingBackend(Backend):
    name = "counting-test"
    calls = 0

    def find(self, view, phrase):
        CountingBackend.calls += 1
        return ((0, 0, 10, 10),)


def test_calls_are_memoised_per_image_and_call():
    register_backend("counting-test", CountingBackend, overwrite=True)
    ImagePatch = build_namespace("counting-test")["ImagePatch"]
    img = np.full((32, 32, 3), 7, np.uint8)
    ImagePatch(img).find("thing")
    ImagePatch(img.copy()).find("thing")            # same pixels -> cached
    ImagePatch(img, 0, 0, 16, 16).find("thing")     # another crop -> new call
    img2 = img.copy()
    img2[0, 0] = 9
    ImagePatch(img2).find("thing")                  # other pixels -> new call
    assert CountingBackend.calls == 3


def test_programs_cannot_affect_each_other():
    first = build_namespace()
    first["ImagePatch"].find = lambda self, name: []
    first["bool_to_yesno"] = None
    second = build_namespace()
    assert second["ImagePatch"](IMG).find("red square")
    assert second["ImagePatch"] is not first["ImagePatch"]
    p = second["ImagePatch"](IMG)
    p.left, p.right = 200, 256      # editing attributes does not change what the tools see
    assert p.exists("red square")
    with pytest.raises(ValueError):  # nor can a program paint over the shared image
        p.cropped_image[0, 0] = 0


def test_registry_errors():
    with pytest.raises(ValueError, match="available: .*shapes-cv"):
        get_backend("no-such-backend")
    with pytest.raises(ValueError, match="already registered"):
        register_backend("shapes-cv", object)


def test_tools_need_no_imports_after_the_first_namespace():
    """Sandbox workers forbid imports once warmed up by one build_namespace call."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent('''
        import builtins, sys, numpy as np
        from envs.data.render import render
        from envs.data.scene import Obj, Scene
        from envs.tools import build_namespace
        img = np.asarray(render(Scene([Obj("circle", "red", "large", 60.0, 60.0)])))
        build_namespace("shapes-cv")
        real = builtins.__import__
        def locked(name, *a, **k):
            if name not in sys.modules:
                raise ImportError("import after lockdown: " + name)
            return real(name, *a, **k)
        builtins.__import__ = locked
        ns = build_namespace("shapes-cv")
        p = ns["ImagePatch"](img)
        assert [q.simple_query("What color is this?") for q in p.find("object")] == ["red"]
        assert p.verify_property("circle", "large") and ns["ImageObject"](img).describe()
        p.crop_left_of_bbox(100, 0, 120, 10).simple_query("How many circles are there?")
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
