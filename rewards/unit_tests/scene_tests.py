"""The "scene" unit-test source: verified candidates for shapes-world questions.

ViUniT asks an LLM for (caption, expected answer) pairs and trusts its answers.  In the
shapes world a question carries a spec that can be answered on any scene, so we can do
better: sample scenes related to the question (its referents planted, their presence,
count, attributes and positions varied, plus look-alikes and distractors, as the
counterfactual generator does), answer the spec on each, and caption the scene.
Objects sit on the 3x3 grid, one per cell, so the canonical caption is exact: the
layout parser turns it back into the same objects and the same answer.
"""
from __future__ import annotations

import json
import random

from envs.data.counterfactual import spec_descs
from envs.data.scene import Obj, Scene, as_random
from envs.data.spec import answer_spec, matches, well_defined
from envs.data.vocab import ATTRIBUTES
from envs.data.layout import caption_scene, cell_center
from rewards.unit_tests.types import UnitTest

__all__ = ["scene_candidates", "related_scene"]

MAX_SCENE_OBJECTS = 7  # captions stay readable; leaves free cells for moves
# Families whose descriptions must pick out exactly one object to be answerable.
_UNIQUE = {"attribute": ("obj",), "choose": ("obj",), "spatial_verify": ("a", "b"),
           "spatial_query": ("b",)}


def _fill(desc: dict, rng: random.Random, avoid=(), escape: float = 0.0, **fixed) -> Obj:
    """An object matching ``desc`` (and ``fixed``), its other attributes random but,
    within a few tries, matching none of ``avoid`` that it is not bound to match; with
    probability ``escape`` the first draw is kept anyway."""
    desc = {**desc, **fixed}
    avoid = [d for d in avoid if d and not d.items() <= desc.items()]
    for _ in range(8):
        attrs = {k: desc.get(k) or rng.choice(v) for k, v in ATTRIBUTES.items()}
        obj = Obj(attrs["shape"], attrs["color"], attrs["size"], 0.0, 0.0)
        if not any(matches(obj, d) for d in avoid) or rng.random() < escape:
            break
    return obj


def _lookalike(desc: dict, rng: random.Random, avoid) -> Obj:
    """All but one of the description's attributes: the near miss a sloppy program takes."""
    k = rng.choice(sorted(desc))
    wrong = rng.choice([v for v in ATTRIBUTES[k] if v != desc[k]])
    return _fill({**desc, k: wrong}, rng, avoid)


def _how_many(family: str, role: str, rng: random.Random) -> int:
    if role in _UNIQUE.get(family, ()):
        return 1 if rng.random() < 0.9 else rng.choice((0, 2))
    if family == "spatial_query":  # role "a": the candidates around the anchor
        return rng.choice((1, 1, 2))
    if family == "counting":
        return rng.randint(0, 4)
    if family == "count_compare":
        return rng.randint(0, 3)
    return rng.choice((0, 0, 1, 1, 2))  # existence, logic, itm claims: both answers


def _planted(spec: dict, rng: random.Random, unique: list[dict]) -> list[Obj]:
    family = spec["family"]
    objs: list[Obj] = []
    if family == "itm":
        for c in spec["claims"]:
            if c["kind"] == "rel":
                for role in ("a", "b"):
                    n = 1 if rng.random() < 0.8 else rng.choice((0, 2))
                    objs += [_fill(c[role], rng) for _ in range(n)]
            else:
                n = c["n"] + rng.choice((-1, 0, 0, 1)) if c["kind"] == "count" \
                    else _how_many(family, "obj", rng)
                objs += [_fill(c["obj"], rng) for _ in range(max(0, n))]
        return objs
    for role in ("obj", "a", "b"):
        if role not in spec:
            continue
        fixed = {}
        if family == "choose" and role == "obj" and rng.random() < 0.9:
            fixed = {spec["attr"]: rng.choice(spec["options"])}  # other values are undefined
        # A referent that also fits another must-be-unique description spoils it.
        avoid = [d for d in unique if d is not spec[role]]
        objs += [_fill(spec[role], rng, avoid, **fixed)
                 for _ in range(_how_many(family, role, rng))]
    return objs


def _objects(spec: dict, rng: random.Random) -> list[Obj]:
    """The referents (planted), look-alikes and distractors of one scene, unplaced."""
    descs = spec_descs(spec)
    unique = [spec[r] for r in _UNIQUE.get(spec["family"], ())]
    objs = _planted(spec, rng, unique)
    named = [d for d in descs if d]
    if named:
        objs += [_lookalike(rng.choice(named), rng, unique)
                 for _ in range(rng.choice((0, 0, 1, 2)))]
    # Distractors mostly match no description, so the planted counts set the answer.
    objs += [_fill({}, rng, descs, escape=0.0 if unique else 0.15)
             for _ in range(rng.choice((0, 1, 1, 2, 3)))]
    return objs[:MAX_SCENE_OBJECTS]


def _relations(spec: dict) -> list[tuple[dict, str, dict]]:
    if spec["family"] in ("spatial_verify", "spatial_query"):
        return [(spec["a"], spec["rel"], spec["b"])]
    return [(c["a"], c["rel"], c["b"]) for c in spec.get("claims", ()) if c["kind"] == "rel"]


def _spread_cells(objs: list[Obj], rels, rng: random.Random) -> dict[int, int]:
    """Distinct random cells; two objects a relation compares are kept off a shared
    column (left/right) or row (above/below) when a free cell allows, because there the
    relation is ambiguous and the question undefined."""
    apart = [[set() for _ in objs] for _ in range(2)]  # per axis: who may not share a line
    for a, rel, b in rels:
        axis = 0 if rel in ("left", "right") else 1
        for i, o in enumerate(objs):
            for j, p in enumerate(objs):
                if i != j and matches(o, a) and matches(p, b):
                    apart[axis][i].add(j)
                    apart[axis][j].add(i)
    cells: dict[int, int] = {}
    for i in rng.sample(range(len(objs)), len(objs)):
        free = [c for c in range(9) if c not in cells.values()]
        clear = [c for c in free
                 if not any(c % 3 == cells[j] % 3 for j in apart[0][i] if j in cells)
                 and not any(c // 3 == cells[j] // 3 for j in apart[1][i] if j in cells)]
        cells[i] = rng.choice(clear or free)
    return cells


def _query_cells(objs: list[Obj], spec: dict, rng: random.Random) -> dict[int, int] | None:
    """Cells for spatial_query: exactly one candidate on the asked side of the anchor,
    the other candidates on the far side, none in line with it (else: None)."""
    anchors = [i for i, o in enumerate(objs) if matches(o, spec["b"])]
    if len(anchors) != 1:
        return None
    b = anchors[0]
    cands = [i for i, o in enumerate(objs) if i != b and matches(o, spec["a"])]
    if not cands:
        return None
    rel = spec["rel"]
    line = (lambda c: c % 3) if rel in ("left", "right") else (lambda c: c // 3)
    sign = -1 if rel in ("left", "above") else 1  # asked side: smaller column / row index
    spots = [k for k in (0, 1, 2) if 0 <= k + sign <= 2 and (len(cands) == 1 or 0 <= k - sign <= 2)]
    if not spots:
        return None
    k = rng.choice(spots)
    bcell = rng.choice([c for c in range(9) if line(c) == k])
    near = [c for c in range(9) if (line(c) - k) * sign > 0]
    far = [c for c in range(9) if (line(c) - k) * sign < 0]
    if len(cands) - 1 > len(far):
        return None
    rng.shuffle(cands)
    cells = {b: bcell, cands[0]: rng.choice(near)}
    for i, c in zip(cands[1:], rng.sample(far, len(cands) - 1)):
        cells[i] = c
    rest = [c for c in range(9) if c not in cells.values()]
    others = [i for i in range(len(objs)) if i not in cells]
    if len(others) > len(rest):
        return None
    cells.update(zip(others, rng.sample(rest, len(others))))
    return cells


def _on_grid(objs: list[Obj], cells: dict[int, int], canvas: int) -> Scene:
    """Listed in reading order, like their caption."""
    placed = []
    for i in sorted(cells, key=cells.get):
        x, y = cell_center(cells[i], canvas)
        placed.append(Obj(objs[i].shape, objs[i].color, objs[i].size, x, y))
    return Scene(placed, size=canvas)


def related_scene(spec: dict, rng: random.Random, canvas: int = 256) -> Scene | None:
    """One on-grid scene built around the spec's descriptions, on which the spec is well
    defined, or None.  Where the answer hangs on positions a few placements are tried."""
    objs = _objects(spec, rng)
    rels = _relations(spec)
    for _ in range(3 if rels else 1):
        cells = _query_cells(objs, spec, rng) if spec["family"] == "spatial_query" else None
        scene = _on_grid(objs, cells or _spread_cells(objs, rels, rng), canvas)
        if well_defined(spec, scene):
            return scene
    return None


def scene_candidates(spec: dict | str, m: int = 20, rng=0, canvas: int = 256) -> list[UnitTest]:
    """Up to ``m`` verified unit tests for the question ``spec``.

    Each is UnitTest(canonical caption, answer_spec on the scene, source="scene",
    scene=scene JSON), captions distinct.  Answers are spread evenly: the candidates are
    drawn round-robin over the answers found (so a yes/no question gets both whenever
    the spec allows it, a counting question several counts).  Fewer than ``m`` only
    for specs that few grid scenes answer.
    """
    spec = json.loads(spec) if isinstance(spec, str) else spec
    rng = as_random(rng)
    by_answer: dict[str, list[tuple[str, Scene]]] = {}
    seen: set[str] = set()
    found = 0
    for _ in range(10 * m + 40):
        if found >= 2 * m:  # enough to balance the answers
            break
        scene = related_scene(spec, rng, canvas)
        if scene is None:
            continue
        caption = caption_scene(scene)
        if caption in seen:
            continue
        seen.add(caption)
        by_answer.setdefault(answer_spec(spec, scene), []).append((caption, scene))
        found += 1
    picked: list[UnitTest] = []
    queues = list(by_answer.items())
    rng.shuffle(queues)
    while len(picked) < m and any(q for _, q in queues):
        for answer, q in queues:
            if q and len(picked) < m:
                caption, scene = q.pop(0)
                # Serialised only when picked: asdict is the slowest step of the loop.
                picked.append(UnitTest(caption, answer, source="scene", scene=scene.to_json()))
    return picked
