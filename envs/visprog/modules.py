"""The script modules, implemented on the ImagePatch API of any tool backend.

``make_modules(api)`` returns ``LOC``, ``CROP``, ``VQA``, ... bound to the namespace
``envs.tools.build_namespace`` built (shapes-cv, hf, or a tool host), so a script asks
the same perception a Python program asks.  Values a script passes around:

- an image: an ``ImagePatch`` (the input image arrives as an array and is wrapped once);
- boxes: a list of ``(left, lower, right, upper)`` tuples in pixels of the full image,
  origin bottom-left, in the order the backend ranks them (hf: detector score; shapes-cv
  has no scores and lists objects left to right);
- an image array: a list of ImagePatches; answers are strings, COUNT an int.

VisProg's conventions: ``CROP`` takes the first box only, enlarged 1.5x about its centre
and clipped to the image being cropped (no box: the whole image); ``CROP_LEFTOF`` and
friends split at the first box's centre; ``LOC`` with TOP/BOTTOM/LEFT/RIGHT gives the
half-image box.  A crop with no area left raises an error (a runtime_error for the script).
"""
from __future__ import annotations

import numpy as np

from envs.visprog.evaluator import evaluate
from envs.visprog.language import HALVES

EXPAND = 1.5


def expand_box(box, factor: float = EXPAND) -> tuple:
    """``box`` scaled by ``factor`` about its centre (not yet clipped)."""
    left, lower, right, upper = box
    cx, cy = (left + right) / 2, (lower + upper) / 2
    hw, hh = factor * (right - left) / 2, factor * (upper - lower) / 2
    return (int(round(cx - hw)), int(round(cy - hh)), int(round(cx + hw)), int(round(cy + hh)))


def half_box(bounds, side: str) -> tuple:
    """The TOP/BOTTOM/LEFT/RIGHT half of ``bounds`` (left, lower, right, upper)."""
    left, lower, right, upper = bounds
    mx, my = (left + right) // 2, (lower + upper) // 2
    return {"TOP": (left, my, right, upper), "BOTTOM": (left, lower, right, my),
            "LEFT": (left, lower, mx, upper), "RIGHT": (mx, lower, right, upper)}[side]


def side_region(bounds, box, side: str) -> tuple:
    """The part of ``bounds`` on ``side`` of ``box``'s centre (CROP_LEFTOF and friends)."""
    left, lower, right, upper = bounds
    cx, cy = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
    return {"LEFTOF": (left, lower, cx, upper), "RIGHTOF": (cx, lower, right, upper),
            "ABOVE": (left, cy, right, upper), "BELOW": (left, lower, right, cy)}[side]


def _kind(value) -> str:
    if isinstance(value, list):
        if value and isinstance(value[0], tuple):
            return "boxes"
        return "a list"
    return type(value).__name__


def make_modules(api: dict) -> dict:
    ImagePatch, ImageObject = api["ImagePatch"], api["ImageObject"]
    held: list = []  # [(input array, its ImagePatch)]: the input is hashed once per run

    def patch_of(image, module: str) -> "ImagePatch":
        if isinstance(image, ImagePatch):
            return image
        if isinstance(image, np.ndarray) or hasattr(image, "convert"):
            if held and held[0][0] is image:
                return held[0][1]
            patch = ImagePatch(image)
            held[:] = [(image, patch)]
            return patch
        what = "an image array: use CROP_EACH's crops with VQA" if isinstance(image, list) \
            else _kind(image)
        raise TypeError(f"{module}: image must be an image (IMAGE or a CROP output), got {what}")

    def boxes_of(box, module: str) -> list:
        if isinstance(box, list) and all(isinstance(b, tuple) and len(b) == 4 for b in box):
            return box
        raise TypeError(f"{module}: box must be the boxes LOC returned (BOX0, ...), got "
                        f"{_kind(box)}")

    def region(patch, box):
        left, lower, right, upper = box
        # ImagePatch.crop takes coordinates relative to the patch and clips to it.
        return patch.crop(left - patch.left, lower - patch.lower, right - patch.left,
                          upper - patch.lower)

    def bounds(patch) -> tuple:
        return (patch.left, patch.lower, patch.right, patch.upper)

    def LOC(*, image, object):
        patch = patch_of(image, "LOC")
        if not isinstance(object, str) or not object.strip():
            raise TypeError("LOC: object must be a non-empty text, e.g. object='red circle'")
        if object.strip().upper() in HALVES:
            return [half_box(bounds(patch), object.strip().upper())]
        return [(p.left, p.lower, p.right, p.upper) for p in patch.find(object)]

    def COUNT(*, box):
        return len(boxes_of(box, "COUNT"))

    def CROP(*, image, box):
        patch, boxes = patch_of(image, "CROP"), boxes_of(box, "CROP")
        return region(patch, expand_box(boxes[0])) if boxes else patch

    def side_crop(side: str):
        def crop(*, image, box):
            name = f"CROP_{side}"
            patch, boxes = patch_of(image, name), boxes_of(box, name)
            return region(patch, side_region(bounds(patch), boxes[0], side)) \
                if boxes else patch
        crop.__name__ = f"CROP_{side}"
        return crop

    def CROP_EACH(*, image, box, k=None):
        patch, boxes = patch_of(image, "CROP_EACH"), boxes_of(box, "CROP_EACH")
        if k is not None:
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise TypeError(f"CROP_EACH: k must be a positive whole number, got {k!r}")
            boxes = boxes[:k]
        return [region(patch, expand_box(b)) for b in boxes]

    def VQA(*, image, question):
        if not isinstance(question, str):
            raise TypeError("VQA: question must be a text, e.g. question='What color is it?'")
        if isinstance(image, list) and all(isinstance(p, ImagePatch) for p in image):
            return [p.simple_query(question) for p in image]
        return patch_of(image, "VQA").simple_query(question)

    def CAP(*, image):
        return ImageObject(patch_of(image, "CAP")).describe()

    def EVAL(*, expr, **variables):
        return evaluate(expr, variables)

    def RESULT(*, var):
        return var

    modules = {"LOC": LOC, "COUNT": COUNT, "CROP": CROP, "CROP_EACH": CROP_EACH, "VQA": VQA,
               "CAP": CAP, "EVAL": EVAL, "RESULT": RESULT}
    for side in ("LEFTOF", "RIGHTOF", "ABOVE", "BELOW"):
        modules[f"CROP_{side}"] = side_crop(side)
    return modules
