"""Sampling GQA-style questions about a scene, with their spec and answer.

Each sampler returns a spec that is well defined on the scene (or None when the scene
cannot support that family); the answer always comes from ``answer_spec``, so the text,
the spec and the label cannot drift apart.
"""
from __future__ import annotations

import itertools
import random

from envs.data.scene import Obj, Scene, as_random
from envs.data.spec import FAMILIES, answer_spec, relation, select, well_defined
from envs.data.vocab import ATTRIBUTES, NUMBER_WORDS, RELATION_PHRASE, RELATIONS

KEYS = ("size", "color", "shape")
OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above"}


def phrase(desc: dict, plural: bool = False, noun: str = "object") -> str:
    words = [desc[k] for k in ("size", "color") if desc.get(k)]
    words.append(desc.get("shape") or noun)
    text = " ".join(words)
    return text + "s" if plural else text


def article(text: str) -> str:
    return ("an " if text[0] in "aeiou" else "a ") + text


def desc_of(obj: Obj, keys) -> dict:
    return {k: getattr(obj, k) for k in KEYS if k in keys}


def _subsets(exclude: str | None = None):
    keys = [k for k in KEYS if k != exclude]
    return [set(c) for n in range(len(keys) + 1) for c in itertools.combinations(keys, n)]


def unique_desc(rng: random.Random, scene: Scene, obj: Obj, exclude: str | None = None,
                ok=lambda d: True) -> dict | None:
    """A description picking out ``obj`` alone, usually a shortest one."""
    found = [desc_of(obj, s) for s in _subsets(exclude)]
    found = [d for d in found if select(scene, d) == [obj] and ok(d)]
    if not found:
        return None
    shortest = min(len(d) for d in found)
    pool = [d for d in found if len(d) == shortest] if rng.random() < 0.7 else found
    return rng.choice(pool)


def some_desc(rng: random.Random, scene: Scene, present: bool | None = None) -> dict | None:
    """A 1-3 attribute description that matches something (present=True), nothing
    (False) or is drawn from the scene without constraint (None)."""
    for _ in range(30):
        n = rng.choice((1, 2, 2, 3))
        keys = rng.sample(KEYS, n)
        if present is False or (present is None and rng.random() < 0.3):
            d = {k: rng.choice(ATTRIBUTES[k]) for k in keys}
        else:
            d = desc_of(rng.choice(scene.objects), keys)
        if present is None or bool(select(scene, d)) == present:
            return d
    return None


def _noun(rng: random.Random) -> str:
    return "shape" if rng.random() < 0.25 else "object"


def q_existence(rng, scene):
    d = some_desc(rng, scene, present=rng.random() < 0.5)
    if d is None:
        return None
    n = _noun(rng)
    text = (f"Is there {article(phrase(d, noun=n))}?" if rng.random() < 0.7
            else f"Are there any {phrase(d, True, n)}?")
    return {"family": "existence", "obj": d}, text


def q_counting(rng, scene):
    d = {} if rng.random() < 0.15 else some_desc(rng, scene)
    if d is None:
        return None
    n = _noun(rng)
    tail = "are there?" if rng.random() < 0.7 else "are in the image?"
    return {"family": "counting", "obj": d}, f"How many {phrase(d, True, n)} {tail}"


def _referent(rng, scene, exclude):
    obj = rng.choice(scene.objects)
    return obj, unique_desc(rng, scene, obj, exclude=exclude)


def q_attribute(rng, scene):
    attr = rng.choice(KEYS)
    obj, d = _referent(rng, scene, attr)
    if d is None:
        return None
    noun = "object" if attr == "shape" else _noun(rng)  # not "What shape is the shape?"
    text = f"What {attr} is the {phrase(d, noun=noun)}?"
    return {"family": "attribute", "attr": attr, "obj": d}, text


def q_choose(rng, scene):
    attr = rng.choice(KEYS)
    obj, d = _referent(rng, scene, attr)
    if d is None:
        return None
    value = getattr(obj, attr)
    options = [value, rng.choice([v for v in ATTRIBUTES[attr] if v != value])]
    rng.shuffle(options)
    o1, o2 = (article(o) for o in options) if attr == "shape" else options
    noun = "object" if attr == "shape" else _noun(rng)
    return ({"family": "choose", "attr": attr, "obj": d, "options": options},
            f"Is the {phrase(d, noun=noun)} {o1} or {o2}?")


def q_spatial_verify(rng, scene):
    if len(scene.objects) < 2:
        return None
    a, b = rng.sample(scene.objects, 2)
    rel = rng.choice(RELATIONS)
    if relation(a, rel, b, scene.size) is None:
        return None
    da, db = unique_desc(rng, scene, a), unique_desc(rng, scene, b)
    if da is None or db is None or not da or not db:
        return None
    spec = {"family": "spatial_verify", "a": da, "rel": rel, "b": db}
    return spec, f"Is the {phrase(da)} {RELATION_PHRASE[rel]} the {phrase(db)}?"


def q_spatial_query(rng, scene):
    if len(scene.objects) < 2:
        return None
    b = rng.choice(scene.objects)
    db = unique_desc(rng, scene, b, ok=bool)
    rel, attr = rng.choice(RELATIONS), rng.choice(KEYS)
    hits = [o for o in scene.objects if o is not b and relation(o, rel, b, scene.size)]
    if db is None or not hits:
        return None
    target = rng.choice(hits)
    for keys in sorted(_subsets(attr), key=len):
        spec = {"family": "spatial_query", "attr": attr, "a": desc_of(target, keys),
                "rel": rel, "b": db}
        if well_defined(spec, scene):
            n = "object" if attr == "shape" else _noun(rng)
            return spec, (f"What {attr} is the {phrase(spec['a'], noun=n)} "
                          f"{RELATION_PHRASE[rel]} the {phrase(db)}?")
    return None


def _nested(da: dict | None, db: dict | None) -> bool:
    """True when either description is missing or one is a special case of the other
    ("large triangle" vs "large green triangle"), which makes and/or/compare trivial."""
    if da is None or db is None:
        return True
    return da.items() <= db.items() or db.items() <= da.items()


def q_count_compare(rng, scene):
    da, db = some_desc(rng, scene), some_desc(rng, scene)
    if _nested(da, db):
        return None
    op = rng.choice(("more", "fewer", "same"))
    pa, pb = phrase(da, True), phrase(db, True)
    text = {"more": f"Are there more {pa} than {pb}?",
            "fewer": f"Are there fewer {pa} than {pb}?",
            "same": f"Are there the same number of {pa} and {pb}?"}[op]
    return {"family": "count_compare", "op": op, "a": da, "b": db}, text


def q_logic(rng, scene):
    op = rng.choice(("and", "or"))
    # Bias presence so both answers are common: "and" needs both, "or" needs neither.
    p = 0.75 if op == "and" else 0.3
    da = some_desc(rng, scene, present=rng.random() < p)
    db = some_desc(rng, scene, present=rng.random() < p)
    if _nested(da, db):
        return None
    a, b = article(phrase(da)), article(phrase(db))
    text = (f"Is there both {a} and {b}?" if op == "and" else f"Is there either {a} or {b}?")
    return {"family": "logic", "op": op, "a": da, "b": db}, text


def _caption(c: dict) -> str:
    if c["kind"] == "rel":
        return f"{article(phrase(c['a']))} is {RELATION_PHRASE[c['rel']]} {article(phrase(c['b']))}"
    if c["kind"] == "count":
        n = c["n"]
        return (f"there is exactly one {phrase(c['obj'])}" if n == 1 else
                f"there are {NUMBER_WORDS[n]} {phrase(c['obj'], True)}")
    return f"there is {article(phrase(c['obj']))}"


def _true_claim(rng, scene):
    kind = rng.choice(("rel", "rel", "count", "exist"))
    if kind == "rel" and len(scene.objects) >= 2:
        a, b = rng.sample(scene.objects, 2)
        rel = rng.choice(RELATIONS)
        if relation(a, rel, b, scene.size):
            keys = rng.choice(([["color", "shape"]] * 3) + [["shape"], ["color"]])
            return {"kind": "rel", "a": desc_of(a, keys), "rel": rel, "b": desc_of(b, keys)}
        return None
    d = some_desc(rng, scene, present=True)
    if d is None:
        return None
    if kind == "count":
        return {"kind": "count", "obj": d, "n": len(select(scene, d))}
    return {"kind": "exist", "obj": d}


def _perturb(rng, c: dict) -> dict:
    """SugarCREPE-style hard negatives: swap or replace an attribute, flip a relation."""
    c = {k: (dict(v) if isinstance(v, dict) else v) for k, v in c.items()}
    if c["kind"] == "rel":
        move = rng.choice(("flip", "swap", "replace"))
        if move == "flip":
            c["rel"] = OPPOSITE[c["rel"]]
            return c
        if move == "swap" and c["a"] != c["b"]:
            c["a"], c["b"] = c["b"], c["a"]
            return c
        target = c[rng.choice("ab")]
    elif c["kind"] == "count":
        c["n"] = max(1, c["n"] + rng.choice((-1, 1)))
        return c
    else:
        target = c["obj"]
    k = rng.choice(sorted(target))
    target[k] = rng.choice([v for v in ATTRIBUTES[k] if v != target[k]])
    return c


def q_itm(rng, scene):
    claims = [c for c in (_true_claim(rng, scene) for _ in range(rng.choice((1, 1, 2)))) if c]
    if not claims:
        return None
    if rng.random() < 0.5:
        i = rng.randrange(len(claims))
        claims[i] = _perturb(rng, claims[i])
    caption = " and ".join(_caption(c) for c in claims)
    caption = caption[0].upper() + caption[1:] + "."
    return {"family": "itm", "claims": claims, "text": caption}, \
        f'Verify image matches text="{caption}"'


SAMPLERS = {
    "existence": q_existence, "counting": q_counting, "attribute": q_attribute,
    "spatial_verify": q_spatial_verify, "spatial_query": q_spatial_query,
    "count_compare": q_count_compare, "choose": q_choose, "logic": q_logic, "itm": q_itm,
}
assert set(SAMPLERS) == set(FAMILIES)


def sample_question(rng, scene: Scene, families=None) -> dict:
    """dict(question, answer, answers, family, spec) for a random family in ``families``."""
    rng = as_random(rng)
    names = list(families or FAMILIES)
    unknown = set(names) - set(SAMPLERS)
    if unknown:
        raise ValueError(f"unknown question families {sorted(unknown)}; "
                         f"known: {', '.join(FAMILIES)}")
    # Pick the family first so hard-to-satisfy families keep their share, and for yes/no
    # families aim at a random target answer so both answers are equally common.
    for _ in range(20):
        family = rng.choice(names)
        target = rng.choice(("yes", "no"))
        fallback = None
        for _ in range(20):
            got = SAMPLERS[family](rng, scene)
            if got is None or not well_defined(got[0], scene):
                continue
            answer = answer_spec(got[0], scene)
            fallback = fallback or (got, answer)
            if answer not in ("yes", "no") or answer == target:
                fallback = (got, answer)
                break
        if fallback is not None:
            (spec, text), answer = fallback
            return {"question": text, "answer": answer, "answers": [answer],
                    "family": spec["family"], "spec": spec}
    raise ValueError(f"could not sample a well-defined {names} question on this scene")
