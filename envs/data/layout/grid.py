"""The 3x3 grid of the shapes world and the canonical caption written on it.

Captions describe positions coarsely, as one of nine cells (top/middle/bottom x
left/center/right), so a scene whose objects sit on cell centres, one per cell, is
described exactly by ``caption_scene`` and recovered exactly by the rule parser.  This
module holds the grid geometry shared by the caption writer, the parser's layout search
and the visual unit tests.  Grid cells are numbered 0..8 in reading order (0 = top left,
4 = center, 8 = bottom right); scene coordinates keep the project's bottom-left origin,
so "top" is a large y.
"""
from __future__ import annotations

import functools

from envs.data.scene import Obj, Scene

ROWS = ("top", "middle", "bottom")
COLS = ("left", "center", "right")
CELL_PHRASES = ("at the top left", "at the top center", "at the top right",
                "at the middle left", "in the center", "at the middle right",
                "at the bottom left", "at the bottom center", "at the bottom right")
MAX_OBJECTS = 9  # one per cell


# ---------------------------------------------------------------------------- grid

@functools.lru_cache(maxsize=64)
def cell_center(cell: int, canvas: int = 256) -> tuple[float, float]:
    """Centre of a grid cell in scene coordinates (whole pixels, bottom-left origin)."""
    row, col = divmod(cell, 3)
    return float(round(canvas * (2 * col + 1) / 6)), float(round(canvas * (5 - 2 * row) / 6))


def cell_of(obj: Obj, canvas: int = 256) -> int:
    """The cell containing the object's centre."""
    col = min(2, max(0, int(obj.x * 3 / canvas)))
    row = 2 - min(2, max(0, int(obj.y * 3 / canvas)))
    return 3 * row + col


def on_grid(scene: Scene) -> bool:
    """True when every object sits on a distinct cell centre: then the canonical caption
    pins the scene down exactly."""
    cells = [cell_of(o, scene.size) for o in scene.objects]
    return len(set(cells)) == len(cells) and all(
        (o.x, o.y) == cell_center(c, scene.size) for o, c in zip(scene.objects, cells))


def _assign_cells(scene: Scene) -> list[int]:
    """Cells for the caption.  Off-grid scenes get distinct cells greedily by distance so
    that their (approximate) caption still parses."""
    canvas = scene.size
    if on_grid(scene) or len(scene.objects) > MAX_OBJECTS:
        return [cell_of(o, canvas) for o in scene.objects]
    centres = [cell_center(c, canvas) for c in range(9)]
    pairs = sorted(((o.x - cx) ** 2 + (o.y - cy) ** 2, i, c)
                   for i, o in enumerate(scene.objects) for c, (cx, cy) in enumerate(centres))
    cells: dict[int, int] = {}
    for _, i, c in pairs:
        if i not in cells and c not in cells.values():
            cells[i] = c
    return [cells[i] for i in range(len(scene.objects))]


def _article(text: str) -> str:
    return ("an " if text[0] in "aeiou" else "a ") + text


def caption_scene(scene: Scene) -> str:
    """Canonical caption: every object with size, colour, shape and cell, in reading
    order, e.g. "A large red circle at the top left and a small blue square in the
    center."  Exact for ``on_grid`` scenes; clutter and noise are not described."""
    if not scene.objects:
        return "An empty image with no shapes."
    cells = _assign_cells(scene)
    order = sorted(range(len(cells)), key=lambda i: (cells[i], i))
    parts = [f"{_article(f'{o.size} {o.color} {o.shape}')} {CELL_PHRASES[cells[i]]}"
             for i in order for o in [scene.objects[i]]]
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return text[0].upper() + text[1:] + "."
