"""The ImagePatch API (ViUniT Listing 1, after ViperGPT) bound to a perception backend.

``make_api(backend)`` builds fresh classes and functions for every program, so a program
that monkey-patches ``ImagePatch`` changes nothing for the next one.  The state a patch
computes with (image, crop box, image hash) lives in a closure-held table rather than on
the instance, so editing ``patch.left`` or private attributes cannot feed the shared
memo table a wrong answer for another program.

Coordinates: pixels of the full image, origin at the bottom-left, ``left < right`` and
``lower < upper`` (ViperGPT's convention).
"""
from __future__ import annotations

import math
import re
import weakref
from typing import Dict, List, Optional, Tuple, Union

import numpy as np
from PIL import Image

from envs.common.images import image_digest, rgb_array
from envs.common.lru import LRU
from envs.tools.backend import Backend, View

_MEMO = LRU(max_items=20000)


def frozen_array(image) -> np.ndarray:
    """A read-only HxWx3 uint8 copy of a numpy array or PIL image.

    The copy lives in an immutable ``bytes`` buffer: numpy refuses to make such an array
    writeable again, so no program can change the pixels a cached tool result was
    computed from (results are memoised by the image's digest).  Paths and encoded bytes
    are refused: a program must not make its tools read files."""
    if not isinstance(image, (Image.Image, np.ndarray)):
        raise TypeError(f"expected an image (HxWx3 numpy array or PIL image), got "
                        f"{type(image).__name__}")
    arr = rgb_array(image, cast=True)
    return np.frombuffer(arr.tobytes(), dtype=np.uint8).reshape(arr.shape)


def _text(value, what: str) -> str:
    """``value`` as an exact ``str``: a subclass could lie in ``__eq__``/``__hash__`` and
    poison the result cache that every later call reads."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    return value if type(value) is str else str.__str__(value)


def bool_to_yesno(bool_answer: bool) -> str:
    return "yes" if bool_answer else "no"


def coerce_to_numeric(string, no_string: bool = False):
    """The first number in ``string`` ("3 apples" -> 3); the string itself if none."""
    if isinstance(string, (int, float)):
        return string
    found = re.search(r"-?\d+(?:\.\d+)?", str(string).replace(",", ""))
    if found is None:
        if no_string:
            raise ValueError(f"no number in {string!r}")
        return string
    value = float(found.group())
    return int(value) if value.is_integer() else value


def make_api(backend: Backend, llm=None) -> dict:
    views: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    def call(view: View, method: str, *args):
        key = (backend.cache_key, view.digest, view.box, method, args)
        return _MEMO.remember(key, lambda: getattr(backend, method)(view, *args))

    def make_view(root, digest, box) -> View:
        left, lower, right, upper = box
        h = root.shape[0]
        return View(root[h - upper:h - lower, left:right], root, box, digest)

    class ImagePatch:
        """A crop of an image with its box (left, lower, right, upper), origin bottom-left.

        ``ImagePatch(image, left, lower, right, upper)`` takes coordinates relative to
        ``image`` (an array, PIL image or another ImagePatch); the attributes
        ``left/lower/right/upper`` of every patch are in the full image's pixels."""

        def __init__(self, image, left=None, lower=None, right=None, upper=None,
                     category=None):
            if isinstance(image, ImagePatch):
                parent = views[image]
                root, digest, (bx0, by0, bx1, by1) = parent.root, parent.digest, parent.box
            else:
                root = frozen_array(image)
                digest = image_digest(root)
                bx0, by0, bx1, by1 = 0, 0, root.shape[1], root.shape[0]
            w, h = bx1 - bx0, by1 - by0
            rel = [0 if left is None else left, 0 if lower is None else lower,
                   w if right is None else right, h if upper is None else upper]
            rel = [int(round(float(v))) for v in rel]
            box = (bx0 + max(0, rel[0]), by0 + max(0, rel[1]),
                   bx0 + min(w, rel[2]), by0 + min(h, rel[3]))
            self._setup(root, digest, box, category, requested=tuple(rel))

        def _setup(self, root, digest, box, category, requested=None, why="ImagePatch"):
            left, lower, right, upper = box
            if right <= left or upper <= lower:
                asked = requested or box
                raise ValueError(
                    f"{why}: zero-area crop (left={asked[0]}, lower={asked[1]}, "
                    f"right={asked[2]}, upper={asked[3]}); a crop needs right > left and "
                    f"upper > lower inside the {root.shape[1]}x{root.shape[0]} image")
            view = make_view(root, digest, box)
            views[self] = view
            self.left, self.lower, self.right, self.upper = box
            self.width, self.height = right - left, upper - lower
            self.horizontal_center = (left + right) / 2
            self.vertical_center = (lower + upper) / 2
            self.category = category
            self.cropped_image = view.image

        @classmethod
        def _child(cls, parent: "ImagePatch", box, category=None, why="crop"):
            patch = cls.__new__(cls)
            view = views[parent]
            patch._setup(view.root, view.digest, tuple(int(v) for v in box), category, why=why)
            return patch

        @property
        def area(self) -> float:
            return self.width * self.height

        def __repr__(self):
            return (f"ImagePatch(left={self.left}, lower={self.lower}, right={self.right}, "
                    f"upper={self.upper}, category={self.category!r})")

        def find(self, object_name: str) -> List["ImagePatch"]:
            v = views[self]
            boxes = call(v, "find", _text(object_name, "find(object_name)"))
            x, y = v.box[0], v.box[1]
            return [ImagePatch._child(self, (x + b[0], y + b[1], x + b[2], y + b[3]), object_name)
                    for b in boxes]

        def exists(self, object_name: str) -> bool:
            return bool(call(views[self], "exists", _text(object_name, "exists(object_name)")))

        def verify_property(self, object_name: str, visual_property: str) -> bool:
            return bool(call(views[self], "verify_property", _text(object_name, "object_name"),
                             _text(visual_property, "visual_property")))

        def simple_query(self, question: Optional[str] = None) -> str:
            q = "What is this?" if question is None else _text(question, "question")
            return str(call(views[self], "simple_query", q))

        def best_text_match(self, option_list: List[str], prefix: Optional[str] = None) -> str:
            opts = [_text(o, "option") for o in option_list]
            if not opts:
                raise ValueError("best_text_match needs at least one option")
            scores = [call(views[self], "match_score", f"{prefix} {o}" if prefix else o)
                      for o in opts]
            return opts[int(np.argmax(scores))]

        def crop(self, left, lower, right, upper) -> "ImagePatch":
            """A crop with coordinates relative to this patch (ViperGPT's crop)."""
            return ImagePatch(self, left, lower, right, upper)

        def _region(self, box, why):
            b = (max(box[0], self.left), max(box[1], self.lower),
                 min(box[2], self.right), min(box[3], self.upper))
            return ImagePatch._child(self, b, why=why)

        def crop_left_of_bbox(self, left, lower, right, upper) -> "ImagePatch":
            """The part of this patch left of the box (full-image coordinates)."""
            return self._region((self.left, self.lower, left, self.upper), "crop_left_of_bbox")

        def crop_right_of_bbox(self, left, lower, right, upper) -> "ImagePatch":
            return self._region((right, self.lower, self.right, self.upper), "crop_right_of_bbox")

        def crop_above_bbox(self, left, lower, right, upper) -> "ImagePatch":
            return self._region((self.left, upper, self.right, self.upper), "crop_above_bbox")

        def crop_below_bbox(self, left, lower, right, upper) -> "ImagePatch":
            return self._region((self.left, self.lower, self.right, lower), "crop_below_bbox")

        def overlaps_with(self, left, lower, right, upper) -> bool:
            return self.left <= right and self.right >= left and \
                self.lower <= upper and self.upper >= lower

    class ImageObject:
        """Holds an image and answers questions about it (seed 002, section 3.2)."""

        def __init__(self, image):
            self._patch = image if isinstance(image, ImagePatch) else ImagePatch(image)

        def answer(self, question: str) -> str:
            return str(call(views[self._patch], "answer", _text(question, "question")))

        def describe(self) -> str:
            return str(call(views[self._patch], "describe"))

    def best_image_match(list_patches: List[ImagePatch], content: List[str],
                         return_index: bool = False) -> Union[ImagePatch, int, None]:
        """The patch most likely to contain the content (mean score over ``content``)."""
        if not list_patches:
            return None
        content = [content] if isinstance(content, str) else list(content)
        scores = [np.mean([call(views[p], "match_score", _text(c, "content")) for c in content])
                  for p in list_patches]
        best = int(np.argmax(scores))
        return best if return_index else list_patches[best]

    def distance(patch_a, patch_b) -> float:
        """Gap between two patches' boxes (negative IoU when they overlap), or |a - b|."""
        if isinstance(patch_a, ImagePatch) and isinstance(patch_b, ImagePatch):
            dx = max(0, patch_a.left - patch_b.right, patch_b.left - patch_a.right)
            dy = max(0, patch_a.lower - patch_b.upper, patch_b.lower - patch_a.upper)
            if dx or dy:
                return math.hypot(dx, dy)
            ix = min(patch_a.right, patch_b.right) - max(patch_a.left, patch_b.left)
            iy = min(patch_a.upper, patch_b.upper) - max(patch_a.lower, patch_b.lower)
            inter = max(0, ix) * max(0, iy)
            union = patch_a.area + patch_b.area - inter
            return -inter / union if union else 0.0
        return abs(patch_a - patch_b)

    def llm_query(question: str, long_answer: bool = True) -> str:
        if llm is not None:
            return str(llm(_text(question, "question")))
        return backend.llm_query(question, long_answer)

    return {"ImagePatch": ImagePatch, "ImageObject": ImageObject, "bool_to_yesno": bool_to_yesno,
            "best_image_match": best_image_match, "distance": distance, "llm_query": llm_query,
            "coerce_to_numeric": coerce_to_numeric, "math": math, "List": List, "Union": Union,
            "Optional": Optional, "Tuple": Tuple, "Dict": Dict}
