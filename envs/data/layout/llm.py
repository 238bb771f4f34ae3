"""Captions the rules refuse, laid out by an LLM as JSON boxes.

As in LM-guided layout-to-image generation, ``LLMLayout`` prompts an LLM with
``LAYOUT_PROMPT`` for a JSON layout and ``parse_layout_json`` turns the reply into a
Scene, rejecting any layout with an object the world cannot draw.
``captions_to_scenes`` / ``caption_to_scene`` are the entry points of the image
generator: rules first (``parse_caption``), the LLM only for what they refuse.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Callable

from envs.data.scene import EDGE, Obj, Scene, fits
from envs.data.vocab import half_extent
from envs.data.layout.lexicon import COLOR_WORDS, SHAPE_WORDS, SIZE_WORDS
from envs.data.layout.parser import parse_caption


# ----------------------------------------------------------------------- LLM layout

LAYOUT_PROMPT = """\
You draw layouts for captions of synthetic images: flat shapes on a plain background.
Every object has a shape (circle, square or triangle), a color (red, orange, yellow,
green, cyan, blue, purple or gray), a size (small or large) and a box [x0, y0, x1, y1]
in fractions of the image width and height, origin at the TOP-LEFT corner, y growing
downward.  A small object's box is about 0.09 wide, a large one about 0.17.  Boxes must
not overlap.  Reply with one JSON object and nothing else.

Caption: A large red circle to the left of a small blue square.
Layout: {"objects": [{"shape": "circle", "color": "red", "size": "large", "box": [0.15, 0.42, 0.32, 0.59]}, {"shape": "square", "color": "blue", "size": "small", "box": [0.65, 0.46, 0.74, 0.55]}]}

Caption: Two green triangles near the top and a yellow square below them.
Layout: {"objects": [{"shape": "triangle", "color": "green", "size": "small", "box": [0.2, 0.1, 0.29, 0.19]}, {"shape": "triangle", "color": "green", "size": "large", "box": [0.6, 0.08, 0.77, 0.25]}, {"shape": "square", "color": "yellow", "size": "small", "box": [0.45, 0.7, 0.54, 0.79]}]}

Caption: An empty canvas.
Layout: {"objects": []}

Caption: A purple circle in the middle, with three small squares in a row along the bottom.
Layout: {"objects": [{"shape": "circle", "color": "purple", "size": "large", "box": [0.41, 0.41, 0.58, 0.58]}, {"shape": "square", "color": "orange", "size": "small", "box": [0.15, 0.82, 0.24, 0.91]}, {"shape": "square", "color": "gray", "size": "small", "box": [0.45, 0.82, 0.54, 0.91]}, {"shape": "square", "color": "cyan", "size": "small", "box": [0.75, 0.82, 0.84, 0.91]}]}

Caption: {caption}
Layout:"""

MAX_LAYOUT_OBJECTS = 12


def layout_prompt(caption: str) -> str:
    return LAYOUT_PROMPT.replace("{caption}", " ".join(caption.split()))


def _json_candidates(text: str):
    """Every JSON value embedded in ``text`` (code fences and prose around it allowed)."""
    text = re.sub(r"```[a-zA-Z]*", "", text)
    for variant in (text, re.sub(r",\s*([}\]])", r"\1", text).replace("'", '"')):
        dec = json.JSONDecoder()
        for m in re.finditer(r"[\[{]", variant):
            try:
                yield dec.raw_decode(variant, m.start())[0]
            except ValueError:
                continue


def _vocab(value, table: dict) -> str | None:
    if not isinstance(value, str):
        return None
    return table.get(value.strip().lower())


def _layout_object(item, canvas: int) -> Obj | None:
    """One JSON object -> Obj centred on its box, or None when it is not drawable."""
    if not isinstance(item, dict):
        return None
    shape = _vocab(item.get("shape"), SHAPE_WORDS)
    color = _vocab(item.get("color", item.get("colour")), COLOR_WORDS)
    box = item.get("box", item.get("bbox"))
    if shape is None or color is None or not isinstance(box, (list, tuple)) or len(box) != 4:
        return None
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        return None
    # Fractions as asked; a reply in pixels of this canvas is tolerated.
    scale = 1.0 if max(x0, y0, x1, y1) <= 1.0 else float(canvas)
    x0, x1 = sorted((min(max(x0 / scale, 0.0), 1.0), min(max(x1 / scale, 0.0), 1.0)))
    y0, y1 = sorted((min(max(y0 / scale, 0.0), 1.0), min(max(y1 / scale, 0.0), 1.0)))
    size = _vocab(item.get("size"), SIZE_WORDS)
    if size is None:
        if item.get("size") is not None:
            return None  # e.g. "medium": not drawable
        half = max(x1 - x0, y1 - y0) * canvas / 2
        cut = (half_extent("small", canvas) + half_extent("large", canvas)) / 2
        size = "large" if half >= cut else "small"
    r = half_extent(size, canvas)
    lo, hi = EDGE + r, canvas - EDGE - r
    x = min(max((x0 + x1) / 2 * canvas, lo), hi)
    y = min(max((1.0 - (y0 + y1) / 2) * canvas, lo), hi)  # flip to the bottom-left origin
    return Obj(shape, color, size, float(round(x)), float(round(y)))


def _nearest_free(obj: Obj, placed: list[Obj], canvas: int) -> Obj | None:
    """``obj`` if it fits, else the closest free spot on rings around it."""
    if fits(obj, placed, canvas, overlap=False):
        return obj
    step = max(2, canvas // 64)
    for radius in range(step, canvas, step):
        for k in range(24):
            a = k * 2 * math.pi / 24
            cand = Obj(obj.shape, obj.color, obj.size, float(round(obj.x + radius * math.cos(a))),
                       float(round(obj.y + radius * math.sin(a))))
            if fits(cand, placed, canvas, overlap=False):
                return cand
    return None


def parse_layout_json(text: str, canvas: int = 256) -> Scene | None:
    """The first ``{"objects": [...]}`` (or bare list of objects) in an LLM reply, as a
    Scene.  Boxes are clamped into the canvas and overlapping objects nudged to the
    nearest free spot.  The WHOLE layout is rejected (None) when any object has a shape,
    colour or size outside the vocabulary or lacks a box: dropping that object would
    silently change the answer the caption implies."""
    for data in _json_candidates(text):
        items = data.get("objects") if isinstance(data, dict) else data
        if not isinstance(items, list) or len(items) > MAX_LAYOUT_OBJECTS:
            continue
        if isinstance(data, list) and not all(isinstance(x, dict) for x in data):
            continue
        placed: list[Obj] = []
        for item in items:
            obj = _layout_object(item, canvas)
            if obj is None:
                return None
            obj = _nearest_free(obj, placed, canvas)
            if obj is None:
                return None
            placed.append(obj)
        return Scene(placed, size=canvas)
    return None


class LLMLayout:
    """Caption -> Scene by asking an LLM for a JSON layout.

    ``complete(prompts, n) -> list[list[str]]`` samples n continuations per prompt; the
    first of ``candidates`` continuations that parses to a valid scene wins, and a
    caption with none gets None.  ``stats`` counts "parsed" and "dropped" captions.
    """

    def __init__(self, complete: Callable[[list[str], int], list[list[str]]],
                 candidates: int = 5, canvas: int = 256):
        self.complete = complete
        self.candidates = candidates
        self.canvas = canvas
        self.stats: Counter = Counter()

    def __call__(self, captions: list[str]) -> list[Scene | None]:
        if not captions:
            return []
        replies = self.complete([layout_prompt(c) for c in captions], self.candidates)
        out: list[Scene | None] = []
        for texts in replies:
            scene = next((s for s in (parse_layout_json(t, self.canvas) for t in texts)
                          if s is not None), None)
            self.stats["parsed" if scene is not None else "dropped"] += 1
            out.append(scene)
        return out


def captions_to_scenes(captions: list[str], seed: int = 0, llm_layout=None,
                       canvas: int = 256) -> list[Scene | None]:
    """Rules first; the captions they refuse go to ``llm_layout`` in one batch."""
    scenes = [parse_caption(c, seed, canvas) for c in captions]
    missing = [i for i, s in enumerate(scenes) if s is None]
    if llm_layout is not None and missing:
        for i, s in zip(missing, llm_layout([captions[i] for i in missing])):
            scenes[i] = s
    return scenes


def caption_to_scene(caption: str, seed: int = 0, llm_layout=None,
                     canvas: int = 256) -> Scene | None:
    return captions_to_scenes([caption], seed, llm_layout, canvas)[0]
