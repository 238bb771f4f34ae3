"""Placing a parsed shapes caption on the 3x3 grid.

The rule parser (``parser``) turns a caption into mentions (what, how many, which
cells, what is negated) and pairwise relations; this module chooses the attributes the
caption leaves open and searches for distinct cells that satisfy every constraint.
"""
from __future__ import annotations

import itertools
import random

from envs.data.scene import Obj, Scene, fits
from envs.data.vocab import COLORS, SHAPES, SIZES
from envs.data.layout.grid import MAX_OBJECTS, cell_center

_COMBOS = list(itertools.product(SHAPES, COLORS, SIZES))


def _matches(combo: tuple, desc: dict) -> bool:
    shape, color, size = combo
    return all({"shape": shape, "color": color, "size": size}[k] == v for k, v in desc.items())


def _holds(rel: str, a: int, b: int) -> bool:
    (ra, ca), (rb, cb) = divmod(a, 3), divmod(b, 3)
    return {"left": ca < cb, "right": ca > cb, "above": ra < rb, "below": ra > rb}[rel]


def place(p, rng: random.Random, canvas: int) -> Scene | None:
    """A scene for a parsed caption (``p.mentions``, ``p.relations``, ``p.empty``), or
    None when its counts, negations, positions and relations cannot all hold."""
    positives = [(i, m) for i, m in enumerate(p.mentions) if not m.negated]
    negatives = [m for m in p.mentions if m.negated]
    if not positives:
        return Scene([], size=canvas) if (p.empty or negatives) else None
    counts = {i: (m.count if m.count is not None else rng.randint(2, 3)) for i, m in positives}
    if sum(counts.values()) > MAX_OBJECTS:
        return None
    everywhere = [m.desc for m in negatives if len(m.cells) == 9]
    somewhere = [(m.desc, m.cells) for m in negatives if len(m.cells) < 9]

    # Attributes first: fill what the caption leaves open at random, never creating an
    # object it negates and, when possible, no extra match for another mention (so
    # "two circles and a red object" keeps two circles and one red object).
    objects: list[tuple[int, tuple]] = []
    for i, m in positives:
        allowed = [c for c in _COMBOS if _matches(c, m.desc)
                   and not any(_matches(c, {k: v}) for k, v in m.exclude)
                   and not any(_matches(c, d) for d in everywhere)]
        if not allowed:
            return None
        others = [o.desc for j, o in positives if j != i and not o.desc.items() <= m.desc.items()]
        preferred = [c for c in allowed if not any(_matches(c, d) for d in others)] or allowed
        objects += [(i, rng.choice(preferred)) for _ in range(counts[i])]

    domains = []
    for i, combo in objects:
        cells = set(p.mentions[i].cells)
        for d, banned in somewhere:
            if _matches(combo, d):
                cells -= banned
        domains.append(sorted(cells))
        rng.shuffle(domains[-1])
    constraints: list[list[tuple[int, str, bool]]] = [[] for _ in objects]
    for a, rel, b in p.relations:
        for u, (i, _) in enumerate(objects):
            for v, (j, _) in enumerate(objects):
                if i == a and j == b:
                    constraints[u].append((v, rel, True))   # u rel v
                    constraints[v].append((u, rel, False))  # v is the object of rel
    cells = _search(domains, constraints)
    if cells is None:
        return None
    placed: list[Obj] = []
    for (_, (shape, color, size)), cell in zip(objects, cells):
        x, y = cell_center(cell, canvas)
        o = Obj(shape, color, size, x, y)
        if not fits(o, placed, canvas, overlap=False):
            return None  # only on canvases too small for the grid
        placed.append(o)
    return Scene(placed, size=canvas)


def _search(domains: list[list[int]], constraints, budget: int = 20000) -> list[int] | None:
    """Distinct cells satisfying the relations: backtracking, smallest domains first."""
    order = sorted(range(len(domains)), key=lambda k: len(domains[k]))
    got: dict[int, int] = {}
    steps = [0]

    def ok(u: int, cell: int) -> bool:
        for v, rel, subject in constraints[u]:
            if v in got and not (_holds(rel, cell, got[v]) if subject
                                 else _holds(rel, got[v], cell)):
                return False
        return True

    def go(k: int) -> bool:
        if k == len(order):
            return True
        u = order[k]
        used = set(got.values())
        for cell in domains[u]:
            steps[0] += 1
            if steps[0] > budget:
                return False
            if cell not in used and ok(u, cell):
                got[u] = cell
                if go(k + 1):
                    return True
                del got[u]
        return False

    return [got[u] for u in range(len(domains))] if go(0) else None
