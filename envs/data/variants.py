"""Shape scenes that vary what our renderer keeps fixed, to test perception beyond it.

``render`` in render.py draws every scene the same way: 256 pixels, one background, the
eight palette colours, no anti-aliasing, objects kept off the border.  A detector tuned on
those images alone can learn the renderer instead of the shapes.  ``VariantScene`` keeps
the layout of a sampled ``Scene`` and changes one thing at a time: image size, background
colour, anti-aliasing, border contact, object scale, colours outside the palette (any
RGB, named by its basic colour term) and rectangles.  ``bench/bench_perception.py`` and
the shapes-cv tests read their detection rates.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw

from envs.data.scene import Scene, sample_scene
from envs.data.vocab import BACKGROUND, COLORS, HALF_EXTENT, REFERENCE_CANVAS

# Colours named by the basic colour terms, several shades each: the foreign datasets'
# objects (and the backgrounds of the background variation) are drawn from these.
TERM_SHADES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "black": ((0, 0, 0), (30, 30, 30), (25, 20, 35)),
    "white": ((255, 255, 255), (235, 235, 235), (250, 245, 235)),
    "gray": ((128, 128, 128), (100, 100, 100), (160, 160, 160)),
    "brown": ((139, 69, 19), (150, 100, 50), (110, 60, 30)),
    "red": ((255, 0, 0), (200, 20, 30), (215, 35, 35)),
    "orange": ((255, 165, 0), (250, 130, 30), (240, 120, 20)),
    "yellow": ((255, 255, 0), (240, 220, 40), (250, 230, 80)),
    "green": ((0, 128, 0), (40, 160, 60), (50, 205, 50)),
    "teal": ((0, 128, 128), (20, 110, 120), (0, 140, 130)),
    "cyan": ((0, 255, 255), (40, 205, 215), (80, 220, 230)),
    "blue": ((0, 0, 255), (40, 70, 215), (30, 60, 180)),
    "purple": ((128, 0, 128), (140, 50, 190), (120, 40, 160)),
    "pink": ((255, 192, 203), (255, 105, 180), (240, 140, 190)),
}


@dataclass
class Shape:
    """One object: its true shape and colour term, its RGB, its box on the canvas
    (left, lower, right, upper; bottom-left origin; floats in canvas pixels)."""

    shape: str
    color: str
    rgb: tuple[int, int, int]
    box: tuple[float, float, float, float]
    size: str = ""


@dataclass
class VariantScene:
    shapes: list[Shape]
    canvas: int = REFERENCE_CANVAS
    background: tuple[int, int, int] = BACKGROUND
    antialias: int = 1                 # supersampling factor; 1 draws hard edges
    extra: dict = field(default_factory=dict)

    def boxes(self, size: int) -> list[tuple[float, float, float, float]]:
        s = size / self.canvas
        return [tuple(v * s for v in o.box) for o in self.shapes]

    def render(self, size: int | None = None) -> np.ndarray:
        """HxWx3 uint8 at ``size`` pixels (the canvas when None)."""
        size = self.canvas if size is None else int(size)
        k = max(1, int(self.antialias))
        big = size * k
        s = big / self.canvas
        img = Image.new("RGB", (big, big), tuple(self.background))
        draw = ImageDraw.Draw(img)
        for o in self.shapes:
            x0, y0, x1, y1 = (v * s for v in o.box)
            left, right = round(x0), round(x1) - 1  # PIL boxes are inclusive
            top, bottom = round(big - y1), round(big - y0) - 1
            if o.shape == "circle":
                draw.ellipse([left, top, right, bottom], fill=o.rgb)
            elif o.shape in ("square", "rectangle"):
                draw.rectangle([left, top, right, bottom], fill=o.rgb)
            elif o.shape == "triangle":
                draw.polygon([(left, bottom), (right, bottom), ((left + right) / 2, top)],
                             fill=o.rgb)
            else:
                raise ValueError(f"unknown shape {o.shape!r}")
        if k > 1:  # area averaging: edge pixels mix object and background colours
            img = img.resize((size, size), Image.BOX)
        return np.asarray(img)


def from_scene(scene: Scene) -> VariantScene:
    """A sampled shapes scene as it is rendered by render.py (clean scenes only)."""
    shapes = []
    for o in scene.objects:
        r = HALF_EXTENT[o.size] * scene.size / REFERENCE_CANVAS
        shapes.append(Shape(o.shape, o.color, COLORS[o.color], (o.x - r, o.y - r, o.x + r,
                                                                  o.y + r), o.size))
    return VariantScene(shapes, canvas=scene.size)


def scaled(scene: VariantScene, side: float) -> VariantScene:
    """Every object drawn ``side`` canvas pixels wide (small ones) about its own centre;
    large ones keep their ratio to the small ones."""
    small = 2 * HALF_EXTENT["small"]
    out = []
    for o in scene.shapes:
        cx, cy = (o.box[0] + o.box[2]) / 2, (o.box[1] + o.box[3]) / 2
        half = (o.box[2] - o.box[0]) / 2 * side / small
        out.append(Shape(o.shape, o.color, o.rgb, (cx - half, cy - half, cx + half, cy + half),
                         o.size))
    return VariantScene(out, scene.canvas, scene.background, scene.antialias, scene.extra)


def touching_border(scene: VariantScene, rng: random.Random) -> VariantScene:
    """Objects moved flush against the nearest canvas edge where that keeps them apart."""
    placed: list[Shape] = []
    c = scene.canvas
    for o in scene.shapes:
        x0, y0, x1, y1 = o.box
        dists = {"left": x0, "right": c - x1, "lower": y0, "upper": c - y1}
        edge = min(dists, key=dists.get)
        dx = -x0 if edge == "left" else c - x1 if edge == "right" else 0.0
        dy = -y0 if edge == "lower" else c - y1 if edge == "upper" else 0.0
        box = (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
        if any(_gap(box, p.box) < 6 for p in placed + scene.shapes if p is not o):
            box = o.box
        placed.append(Shape(o.shape, o.color, o.rgb, box, o.size))
    return VariantScene(placed, c, scene.background, scene.antialias, scene.extra)


def _gap(a, b) -> float:
    return max(a[0] - b[2], b[0] - a[2], a[1] - b[3], b[1] - a[3])


def recoloured(scene: VariantScene, rng: random.Random, terms=tuple(TERM_SHADES)) -> VariantScene:
    """Each object in a random shade of a random basic colour term that differs from
    the background's."""
    out = []
    for o in scene.shapes:
        while True:
            term = rng.choice(terms)
            rgb = rng.choice(TERM_SHADES[term])
            if _dist(rgb, scene.background) > 60:
                break
        out.append(Shape(o.shape, term, rgb, o.box, o.size))
    return VariantScene(out, scene.canvas, scene.background, scene.antialias, scene.extra)


def with_rectangles(scene: VariantScene, rng: random.Random, share: float = 0.5) -> VariantScene:
    """Some squares stretched into rectangles (aspect 1.5-2.5), about their centres."""
    out = []
    for o in scene.shapes:
        if o.shape == "square" and rng.random() < share:
            x0, y0, x1, y1 = o.box
            w, h = x1 - x0, y1 - y0
            aspect = rng.uniform(1.5, 2.5)
            if rng.random() < 0.5:
                w2, h2 = w * np.sqrt(aspect), h / np.sqrt(aspect)
            else:
                w2, h2 = w / np.sqrt(aspect), h * np.sqrt(aspect)
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            box = (cx - w2 / 2, cy - h2 / 2, cx + w2 / 2, cy + h2 / 2)
            if all(_gap(box, p.box) >= 4 for p in scene.shapes if p is not o) and \
                    box[0] >= 0 and box[1] >= 0 and box[2] <= scene.canvas and box[3] <= scene.canvas:
                o = Shape("rectangle", o.color, o.rgb, box, o.size)
        out.append(o)
    return VariantScene(out, scene.canvas, scene.background, scene.antialias, scene.extra)


def near_background(rgb, rng: random.Random, distance: float = 40.0) -> tuple[int, int, int]:
    """A flat background ``distance`` RGB units away from ``rgb`` (an object's colour)."""
    for _ in range(100):
        d = np.array([rng.gauss(0, 1) for _ in range(3)])
        cand = np.round(np.array(rgb) + distance * d / np.linalg.norm(d))
        if (cand >= 0).all() and (cand <= 255).all():
            return tuple(int(v) for v in cand)
    return tuple(int(v) for v in np.clip(np.array(rgb) + distance / np.sqrt(3), 0, 255))


def _dist(a, b) -> float:
    return float(np.linalg.norm(np.array(a, float) - np.array(b, float)))


def sample(rng: random.Random, **kwargs) -> VariantScene:
    """A clean shapes scene (``sample_scene`` arguments) ready to be varied."""
    return from_scene(sample_scene(rng, **kwargs))


def single_shape(rng: random.Random, size: int = 64, min_side: float = 6.0,
                 max_side: float = 40.0) -> VariantScene:
    """One shape on a flat coloured background, as in the small public shapes VQA sets:
    a random basic colour term on a random other one, anti-aliased, 64 pixels."""
    bg_term = rng.choice(tuple(TERM_SHADES))
    background = rng.choice(TERM_SHADES[bg_term])
    shape = rng.choice(("circle", "square", "rectangle", "triangle"))
    side = rng.uniform(min_side, max_side)
    w = h = side
    if shape == "rectangle":
        aspect = rng.uniform(1.5, 2.5)
        w, h = (side, side / aspect) if rng.random() < 0.5 else (side / aspect, side)
        w, h = max(w, min_side), max(h, min_side)
    x0, y0 = rng.uniform(1, size - w - 1), rng.uniform(1, size - h - 1)
    scene = VariantScene([Shape(shape, "", (0, 0, 0), (x0, y0, x0 + w, y0 + h))], size,
                         background, antialias=4, extra={"background_term": bg_term})
    return recoloured(scene, rng)
