"""Counterfactual scenes and logical accuracy.

ViUniT found by hand that a third of "correct" programs were right for the wrong
reasons.  Because a shapes question has a spec that can be answered on any scene, we
can measure this automatically: perturb the scene where it matters (recolour, reshape,
move across, remove the queried object, add a look-alike), keep only scenes where the
question stays well defined, and score the program on all of them.
"""
from __future__ import annotations

import random

from envs.data.scene import Obj, Scene, as_random, fits, place, sample_scene
from envs.data.spec import REL_MARGIN, answer_spec, coerce, matches, well_defined
from envs.data.vocab import ATTRIBUTES, NUMBER_WORDS

# Round-robin order: the three perturbations the issue names come first.
KINDS = ("recolor", "move", "remove", "requery", "reshape", "lookalike", "resize", "add")
# Where the answer hangs on positions, moving things is the informative perturbation.
SPATIAL_SCHEDULE = ("move", "requery", "recolor", "move", "remove", "move", "reshape",
                    "lookalike", "move", "resize", "add")


def spec_descs(spec: dict) -> list[dict]:
    found = [spec[k] for k in ("obj", "a", "b") if k in spec]
    for c in spec.get("claims", ()):
        found += [c[k] for k in ("obj", "a", "b") if k in c]
    return found


def _allows_overlap(scene: Scene) -> bool:
    objs = scene.objects
    return any(not fits(o, objs[:i] + objs[i + 1:], scene.size, False) for i, o in enumerate(objs))


def _with(scene: Scene, objects: list[Obj]) -> Scene:
    s = scene.copy()
    s.objects = [Obj(**vars(o)) for o in objects]
    return s


def _edit(scene: Scene, i: int, rng: random.Random, overlap: bool, relocate: bool = True,
          **changes) -> Scene | None:
    """Change object ``i``; when it no longer fits, move it elsewhere (relocate) or give up."""
    objs = [Obj(**vars(o)) for o in scene.objects]
    new = Obj(**{**vars(objs[i]), **changes})
    rest = objs[:i] + objs[i + 1:]
    if not fits(new, rest, scene.size, overlap):
        new = place(new, rest, rng, scene.size, overlap) if relocate else None
        if new is None:
            return None
    objs[i] = new
    return _with(scene, objs)


def _across(scene: Scene, i: int, j: int, axis: int, rng: random.Random,
            overlap: bool) -> Scene | None:
    """Object i moved to a random free spot on the other side of object j (axis 0: x)."""
    o, p = scene.objects[i], scene.objects[j]
    gap = 2 * REL_MARGIN * scene.size / 256
    lo, hi = ((p.x, o.x) if axis == 0 else (p.y, o.y))
    span = (lo + gap, scene.size) if hi < lo else (0, lo - gap)
    region = (span[0], 0, span[1], scene.size) if axis == 0 else (0, span[0], scene.size, span[1])
    rest = scene.objects[:i] + scene.objects[i + 1:]
    moved = place(o, rest, rng, scene.size, overlap, region=region)
    return None if moved is None else _with(scene, rest[:i] + [moved] + rest[i:])


def _swap_places(scene: Scene, i: int, j: int, overlap: bool) -> Scene | None:
    objs = [Obj(**vars(o)) for o in scene.objects]
    a, b = objs[i], objs[j]
    (a.x, a.y), (b.x, b.y) = (b.x, b.y), (a.x, a.y)
    ok = all(fits(o, objs[:k] + objs[k + 1:], scene.size, overlap) for k, o in enumerate(objs))
    return _with(scene, objs) if ok else None


def _other(rng: random.Random, attr: str, value: str) -> str:
    return rng.choice([v for v in ATTRIBUTES[attr] if v != value])


def _targeted(spec: dict, scene: Scene, rng: random.Random, overlap: bool) -> dict[str, list]:
    descs = spec_descs(spec)
    queried = [i for i, o in enumerate(scene.objects) if any(matches(o, d) for d in descs)]
    others = [i for i in range(len(scene.objects)) if i not in queried]
    out: dict[str, list] = {k: [] for k in KINDS}
    n = scene.size
    for i in queried:
        o = scene.objects[i]
        out["recolor"].append(_edit(scene, i, rng, overlap, color=_other(rng, "color", o.color)))
        out["reshape"].append(_edit(scene, i, rng, overlap, shape=_other(rng, "shape", o.shape)))
        out["resize"].append(_edit(scene, i, rng, overlap, size=_other(rng, "size", o.size)))
        if len(scene.objects) > 1:
            out["remove"].append(_with(scene, scene.objects[:i] + scene.objects[i + 1:]))
        # Across the other queried objects (flips left/right, above/below) and the canvas.
        for j in queried:
            if j != i:
                p = scene.objects[j]
                out["move"].append(_edit(scene, i, rng, overlap, False, x=2 * p.x - o.x))
                out["move"].append(_edit(scene, i, rng, overlap, False, y=2 * p.y - o.y))
                out["move"].append(_across(scene, i, j, 0, rng, overlap))
                out["move"].append(_across(scene, i, j, 1, rng, overlap))
                out["move"].append(_swap_places(scene, i, j, overlap))
        out["move"].append(_edit(scene, i, rng, overlap, False, x=float(n) - o.x))
        out["move"].append(_edit(scene, i, rng, overlap, False, y=float(n) - o.y))
    if "attr" in spec:  # change exactly what is asked about, keeping the referent
        attr, target = spec["attr"], spec.get("obj", spec.get("a"))
        for i, o in enumerate(scene.objects):
            if matches(o, target):
                values = [v for v in spec.get("options", ATTRIBUTES[attr]) if v != getattr(o, attr)]
                if values:
                    change = {attr: rng.choice(values)}
                    out["requery"].append(_edit(scene, i, rng, overlap, **change))
    for d in descs:
        # A distractor that shares all but one attribute with a description.
        for i in others:
            changes = dict(d)
            if changes:
                k = rng.choice(sorted(changes))
                changes[k] = _other(rng, k, changes[k])
            out["lookalike"].append(_edit(scene, i, rng, overlap, **changes))
        new = Obj(**{**vars(Obj("circle", "red", "small", 0.0, 0.0)),
                     **{k: rng.choice(v) for k, v in ATTRIBUTES.items()}, **d})
        placed = place(new, scene.objects, rng, n, overlap)
        if placed is not None:
            out["add"].append(_with(scene, scene.objects + [placed]))
    return out


def counterfactual_scenes(spec: dict, scene: Scene, m: int, rng) -> list[Scene]:
    """Up to ``m`` distinct scenes, all different from ``scene``, on which ``spec`` is
    well defined: targeted perturbations first (round-robin over KINDS), then fresh
    random scenes with the same clutter.  Fewer than ``m`` only for specs so narrow that
    ~100*m attempts do not find enough."""
    spec, scene = coerce(spec, scene)
    rng = as_random(rng)
    overlap = _allows_overlap(scene)
    pools = _targeted(spec, scene, rng, overlap)
    seen = {scene.to_json()}
    picked: list[Scene] = []

    def take(s: Scene | None) -> None:
        if s is not None and len(picked) < m and well_defined(spec, s):
            key = s.to_json()
            if key not in seen:
                seen.add(key)
                picked.append(s)

    for pool in pools.values():
        rng.shuffle(pool)
    spatial = spec["family"].startswith("spatial") or any(
        c.get("kind") == "rel" for c in spec.get("claims", ()))
    schedule = SPATIAL_SCHEDULE if spatial else KINDS
    while len(picked) < m and any(pools.values()):
        for kind in schedule:
            if pools[kind]:
                take(pools[kind].pop())
    n_max = max(2, len(scene.objects) + 1)
    for _ in range(100 * m):
        if len(picked) >= m:
            break
        fresh = sample_scene(rng, n_min=1, n_max=min(8, n_max), overlap=overlap)
        fresh.clutter, fresh.noise, fresh.noise_seed = scene.clutter, scene.noise, scene.noise_seed
        # Random scenes rarely contain a unique referent; plant one half of the time.
        descs = spec_descs(spec)
        if descs and rng.random() < 0.5:
            d = rng.choice(descs)
            kept = [o for o in fresh.objects if not matches(o, d)]
            new = Obj(**{**vars(fresh.objects[0]), **d})
            placed = place(new, kept, rng, scene.size, overlap)
            if placed is not None:
                fresh.objects = kept + [placed]
        take(fresh)
    return picked


def normalize(answer) -> str:
    if answer is None:
        return ""
    a = str(answer).strip().lower().rstrip(".").strip()
    a = {"true": "yes", "false": "no"}.get(a, a)
    if a in NUMBER_WORDS:
        return str(NUMBER_WORDS.index(a))
    for art in ("a ", "an ", "the "):
        if a.startswith(art):
            a = a[len(art):]
    return a


def logical_accuracy(program_answers: list, spec: dict, scenes: list[Scene]) -> float:
    """Fraction of ``scenes`` on which the program's answer equals the ground truth of
    ``spec``.  ``program_answers[i]`` is the program's answer on ``render(scenes[i])``;
    None (a failed run) counts as wrong."""
    scenes = [s if isinstance(s, Scene) else Scene.from_json(s) for s in scenes]
    if len(program_answers) != len(scenes):
        raise ValueError(f"{len(program_answers)} answers for {len(scenes)} scenes")
    if not scenes:
        raise ValueError("logical accuracy needs at least one counterfactual scene")
    hits = sum(normalize(a) == answer_spec(spec, s) for a, s in zip(program_answers, scenes))
    return hits / len(scenes)


def logical_report(original_answer, spec: dict, scene: Scene, cf_answers: list,
                   cf_scenes: list[Scene]) -> dict:
    """accuracy on the original scene, logical_accuracy over the counterfactuals, and
    right_for_wrong_reasons = correct on the original but logical accuracy < 1."""
    spec, scene = coerce(spec, scene)
    acc = float(normalize(original_answer) == answer_spec(spec, scene))
    lacc = logical_accuracy(cf_answers, spec, cf_scenes)
    return {"accuracy": acc, "logical_accuracy": lacc,
            "right_for_wrong_reasons": bool(acc == 1.0 and lacc < 1.0),
            "n_counterfactuals": len(cf_scenes)}


def counterfactual_items(spec: dict, scene: Scene, m: int, rng, size: int = 256) -> list[dict]:
    """Counterfactuals ready for an evaluator: dicts of scene, rendered image, answer."""
    from envs.data.render import render

    return [{"scene": s, "image": render(s, size), "answer": answer_spec(spec, s)}
            for s in counterfactual_scenes(spec, scene, m, rng)]


def logical_eval(spec, scene, answer_fn, m: int = 8, seed: int = 0) -> dict:
    """logical_report for one question, running the program once, batched.

    ``answer_fn(images) -> answers`` runs the program on a list of PIL images (the original
    first) and returns one answer (str, or None for a failed run) per image -- e.g.
    ``lambda ims: [r.answer for r in executor.run([program] * len(ims), ims)]``.
    """
    from envs.data.render import render

    spec, scene = coerce(spec, scene)
    cfs = counterfactual_scenes(spec, scene, m, random.Random(f"vprl-cf:{seed}"))
    answers = list(answer_fn([render(scene, scene.size)] + [render(s, s.size) for s in cfs]))
    if len(answers) != len(cfs) + 1:
        raise ValueError(f"answer_fn returned {len(answers)} answers for {len(cfs) + 1} images")
    return logical_report(answers[0], spec, scene, answers[1:], cfs)
