"""Meaning of a question: a JSON-able spec evaluated against any scene graph.

A spec is ``{"family": ..., <arguments>}``; object descriptions ("descs") are dicts with
optional ``color``, ``shape`` and ``size`` keys ({} means "any object").  Evaluation is
three-valued internally: a relation between two objects whose centres are closer than
REL_MARGIN along the axis is neither true nor false, and a question that depends on it
(or on a referent that is missing or not unique) is *undefined* on that scene.
"""
from __future__ import annotations

import json

from envs.data.scene import Obj, Scene

REL_MARGIN = 10  # px on a 256 canvas

FAMILIES = ("existence", "counting", "attribute", "spatial_verify", "spatial_query",
            "count_compare", "choose", "logic", "itm")


class UndefinedQuestion(ValueError):
    """The question has no single right answer on this scene."""


def matches(obj: Obj, desc: dict) -> bool:
    return all(getattr(obj, k) == v for k, v in desc.items() if v is not None)


def select(scene: Scene, desc: dict) -> list[Obj]:
    return [o for o in scene.objects if matches(o, desc)]


def unique(scene: Scene, desc: dict) -> Obj:
    found = select(scene, desc)
    if len(found) != 1:
        raise UndefinedQuestion(f"{len(found)} objects match {desc}, need exactly one")
    return found[0]


def relation(a: Obj, rel: str, b: Obj, canvas: int = 256) -> bool | None:
    """True/False when clearly so, None inside the ambiguity margin."""
    if rel in ("left", "right"):
        d = b.x - a.x if rel == "left" else a.x - b.x
    elif rel in ("above", "below"):
        d = a.y - b.y if rel == "above" else b.y - a.y
    else:
        raise ValueError(f"unknown relation {rel!r}")
    m = REL_MARGIN * canvas / 256
    return True if d >= m else False if d <= -m else None


def _and(values) -> bool | None:
    values = list(values)
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(values) -> bool | None:
    values = list(values)
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _exists_rel(scene: Scene, a: dict, rel: str, b: dict) -> bool | None:
    vals = [relation(x, rel, y, scene.size) for x in select(scene, a) for y in select(scene, b)
            if x is not y]
    return _or(vals)


def _claim(scene: Scene, c: dict) -> bool | None:
    kind = c["kind"]
    if kind == "exist":
        return bool(select(scene, c["obj"]))
    if kind == "count":
        return len(select(scene, c["obj"])) == c["n"]
    if kind == "rel":
        return _exists_rel(scene, c["a"], c["rel"], c["b"])
    raise ValueError(f"unknown itm claim kind {kind!r}")


def _yesno(v: bool | None, spec: dict) -> str:
    if v is None:
        raise UndefinedQuestion(f"ambiguous on this scene: {spec}")
    return "yes" if v else "no"


def coerce(spec, scene) -> tuple[dict, Scene]:
    """Accept the dataset's JSON columns as well as parsed values."""
    spec = json.loads(spec) if isinstance(spec, str) else spec
    scene = scene if isinstance(scene, Scene) else Scene.from_json(scene)
    return spec, scene


def answer_spec(spec: dict, scene: Scene) -> str:
    """The ground-truth answer of ``spec`` on ``scene``; raises UndefinedQuestion.
    Both may also be given as the dataset's JSON strings."""
    spec, scene = coerce(spec, scene)
    f = spec["family"]
    if f == "existence":
        return _yesno(bool(select(scene, spec["obj"])), spec)
    if f == "counting":
        return str(len(select(scene, spec["obj"])))
    if f == "attribute":
        return getattr(unique(scene, spec["obj"]), spec["attr"])
    if f == "choose":
        value = getattr(unique(scene, spec["obj"]), spec["attr"])
        if value not in spec["options"]:
            raise UndefinedQuestion(f"{value!r} is none of the options {spec['options']}")
        return value
    if f == "spatial_verify":
        a, b = unique(scene, spec["a"]), unique(scene, spec["b"])
        if a is b:
            raise UndefinedQuestion("both descriptions pick the same object")
        return _yesno(relation(a, spec["rel"], b, scene.size), spec)
    if f == "spatial_query":
        b = unique(scene, spec["b"])
        cands = [o for o in select(scene, spec["a"]) if o is not b]
        vals = [relation(o, spec["rel"], b, scene.size) for o in cands]
        hits = [o for o, v in zip(cands, vals) if v]
        if None in vals or len(hits) != 1:
            raise UndefinedQuestion(f"{len(hits)} clear candidates for {spec}")
        return getattr(hits[0], spec["attr"])
    if f == "count_compare":
        na, nb = len(select(scene, spec["a"])), len(select(scene, spec["b"]))
        op = spec["op"]
        return _yesno(na > nb if op == "more" else na < nb if op == "fewer" else na == nb, spec)
    if f == "logic":
        ea, eb = bool(select(scene, spec["a"])), bool(select(scene, spec["b"]))
        return _yesno(ea and eb if spec["op"] == "and" else ea or eb, spec)
    if f == "itm":
        return _yesno(_and(_claim(scene, c) for c in spec["claims"]), spec)
    raise ValueError(f"unknown question family {f!r}; known: {', '.join(FAMILIES)}")


def well_defined(spec: dict, scene: Scene) -> bool:
    try:
        answer_spec(spec, scene)
    except UndefinedQuestion:
        return False
    return True
