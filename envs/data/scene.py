"""Scene graphs of the shapes world and how they are sampled.

Coordinates: ``Obj.x`` and ``Obj.y`` are the centre of the object's bounding box in
pixels of a ``Scene.size`` canvas, with the origin at the BOTTOM-LEFT corner and y
pointing up -- the same frame as ``ImagePatch.left/lower/right/upper`` -- so "above"
means a larger y both in the scene graph and in the tools.
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field

import numpy as np

from envs.data.vocab import COLORS, SHAPES, SIZES, half_extent

EDGE = 4       # px kept free along the canvas border
GAP = 6        # px between bounding boxes when overlap is off
VISIBLE = 0.6  # with overlap on, centres stay >= VISIBLE * (r1 + r2) apart


@dataclass
class Obj:
    shape: str
    color: str
    size: str
    x: float
    y: float

    def box(self, canvas: int) -> tuple[float, float, float, float]:
        """(left, lower, right, upper), bottom-left origin."""
        r = half_extent(self.size, canvas)
        return (self.x - r, self.y - r, self.x + r, self.y + r)


@dataclass
class Scene:
    objects: list[Obj]
    size: int = 256
    # Distractor strokes and dots (dicts, see sample_clutter) and pixel-noise strength:
    # rendering is a pure function of the scene, so all randomness is stored here.
    clutter: list[dict] = field(default_factory=list)
    noise: float = 0.0
    noise_seed: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | dict) -> "Scene":
        d = json.loads(text) if isinstance(text, str) else dict(text)
        d["objects"] = [Obj(**o) for o in d.get("objects", [])]
        return cls(**d)

    def copy(self) -> "Scene":
        return Scene.from_json(self.to_json())


def as_random(rng) -> random.Random:
    """Accept random.Random, numpy Generator or an int seed."""
    if isinstance(rng, random.Random):
        return rng
    if isinstance(rng, np.random.Generator):
        return random.Random(int(rng.integers(0, 2**63 - 1)))
    return random.Random(rng)


def fits(obj: Obj, others: list[Obj], canvas: int, overlap: bool) -> bool:
    r = half_extent(obj.size, canvas)
    if not (EDGE + r <= obj.x <= canvas - EDGE - r and EDGE + r <= obj.y <= canvas - EDGE - r):
        return False
    for o in others:
        ro = half_extent(o.size, canvas)
        if overlap:
            if (obj.x - o.x) ** 2 + (obj.y - o.y) ** 2 < (VISIBLE * (r + ro)) ** 2:
                return False
        elif abs(obj.x - o.x) < r + ro + GAP and abs(obj.y - o.y) < r + ro + GAP:
            return False
    return True


def place(obj: Obj, others: list[Obj], rng: random.Random, canvas: int, overlap: bool,
          tries: int = 200, region: tuple[float, float, float, float] | None = None) -> Obj | None:
    """Move ``obj`` to a random free spot (optionally inside region=(x0, y0, x1, y1)).

    With overlap on, half of the placements are drawn next to an existing object so
    that overlaps actually happen rather than only being allowed.
    """
    r = half_extent(obj.size, canvas)
    x0, y0, x1, y1 = region or (0, 0, canvas, canvas)
    lo_x, hi_x = max(EDGE + r, int(x0)), min(canvas - EDGE - r, int(x1))
    lo_y, hi_y = max(EDGE + r, int(y0)), min(canvas - EDGE - r, int(y1))
    if lo_x > hi_x or lo_y > hi_y:
        return None
    for _ in range(tries):
        if overlap and others and rng.random() < 0.5:
            o = rng.choice(others)
            d = (0.6 + 0.4 * rng.random()) * (r + half_extent(o.size, canvas))
            ang = rng.random() * 6.283185307179586
            x, y = round(o.x + d * np.cos(ang)), round(o.y + d * np.sin(ang))
            if not (lo_x <= x <= hi_x and lo_y <= y <= hi_y):
                continue
        else:
            x, y = rng.randint(lo_x, hi_x), rng.randint(lo_y, hi_y)
        cand = Obj(obj.shape, obj.color, obj.size, float(x), float(y))
        if fits(cand, others, canvas, overlap):
            return cand
    return None


def random_obj(rng: random.Random) -> Obj:
    return Obj(rng.choice(SHAPES), rng.choice(tuple(COLORS)), rng.choice(SIZES), 0.0, 0.0)


def sample_clutter(rng: random.Random, clutter: float, canvas: int) -> list[dict]:
    """Thin strokes and specks in object colours: they touch and cross objects."""
    items: list[dict] = []
    colors = tuple(COLORS)
    for _ in range(round(10 * clutter)):
        xy = [rng.uniform(0, canvas) for _ in range(4)]
        items.append({"kind": "line", "xy": xy, "width": rng.randint(1, 3),
                      "color": rng.choice(colors)})
    for _ in range(round(30 * clutter)):
        items.append({"kind": "dot", "xy": [rng.uniform(0, canvas), rng.uniform(0, canvas)],
                      "r": rng.randint(1, 3), "color": rng.choice(colors)})
    return items


def sample_scene(rng, n_min: int = 2, n_max: int = 8, overlap: bool = False,
                 clutter: float = 0.0, size: int = 256) -> Scene:
    """A random scene of n_min..n_max objects; clutter in [0, 1] adds strokes and noise."""
    if not 1 <= n_min <= n_max:
        raise ValueError(f"need 1 <= n_min <= n_max, got n_min={n_min}, n_max={n_max}")
    if not 0.0 <= clutter <= 1.0:
        raise ValueError(f"clutter must be in [0, 1], got {clutter}")
    rng = as_random(rng)
    n = rng.randint(n_min, n_max)
    objects: list[Obj] = []
    while len(objects) < n:
        placed = place(random_obj(rng), objects, rng, size, overlap)
        if placed is None:  # canvas full: a smaller scene is still a valid scene
            if len(objects) >= n_min:
                break
            objects.clear()
            continue
        objects.append(placed)
    return Scene(objects=objects, size=size, clutter=sample_clutter(rng, clutter, size),
                 noise=round(14.0 * clutter, 3), noise_seed=rng.randrange(2**31))
