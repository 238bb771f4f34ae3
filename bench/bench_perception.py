"""How well shapes-cv perceives scenes our renderer never draws, one variation at a time.

    python bench/bench_perception.py [--scenes 100] [--questions 400] [--seed 0]

Prints one table per variation (image size, background colour, anti-aliasing, border
contact, object scale, colours outside the palette, rectangles): the share of objects
found with a box of IoU >= 0.5 and the right colour term and shape (and size where the
variation keeps the scene's scale), read back through the ImagePatch API as a program
reads them.  Then a single-shape set like the small public shapes VQA datasets (64 px,
one anti-aliased shape of any basic colour on another), and our own shapes dataset:
reference programs answering generated questions, clean and cluttered.  Scenes are
seeded, so two runs (before and after a change) see the same images.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from envs.data import variants as V  # noqa: E402
from envs.tools import build_namespace  # noqa: E402
from envs.tools.ensemble import box_iou as iou  # noqa: E402


def perceive(image: np.ndarray) -> list[tuple]:
    """(box, colour, shape, size) of every object the tools find, as a program sees them."""
    patch = build_namespace("shapes-cv")["ImagePatch"](image)
    return [((p.left, p.lower, p.right, p.upper), p.simple_query("What color is this?"),
             p.simple_query("What shape is this?"), p.simple_query("What size is this?"))
            for p in patch.find("object")]


def score(scene: V.VariantScene, size: int, check_size: bool) -> tuple[int, int]:
    found = perceive(scene.render(size))
    hits = 0
    for o, box in zip(scene.shapes, scene.boxes(size)):
        best = max(found, key=lambda f: iou(f[0], box), default=None)
        ok = best is not None and iou(best[0], box) >= 0.5 and best[1:3] == (o.color, o.shape)
        hits += bool(ok and (not check_size or best[3] == o.size))
    return hits, len(scene.shapes)


def rate(scenes, size=256, check_size=True) -> float:
    hits = total = 0
    for scene in scenes:
        h, t = score(scene, size, check_size)
        hits, total = hits + h, total + t
    return hits / total if total else float("nan")


def base_scenes(n: int, seed: int, **kw) -> list[V.VariantScene]:
    rng = random.Random(f"perception:{seed}")
    return [V.sample(rng, **kw) for _ in range(n)]


def variations(n: int, seed: int) -> dict[str, list[tuple[str, float]]]:
    scenes = base_scenes(n, seed)
    rng = random.Random(seed)
    tables: dict[str, list[tuple[str, float]]] = {}
    tables["image size (px)"] = [(str(s), rate(scenes, s)) for s in (64, 128, 256, 512, 1024)]

    def on(bg):
        return [V.VariantScene(s.shapes, s.canvas, bg) for s in scenes]

    def near(distance):
        out = []
        for s in scenes:
            target = rng.choice(s.shapes).rgb
            out.append(V.VariantScene(s.shapes, s.canvas, V.near_background(target, rng, distance)))
        return out

    def random_flat():
        out = []
        for s in scenes:
            while True:
                bg = tuple(rng.randrange(256) for _ in range(3))
                if min(V._dist(bg, o.rgb) for o in s.shapes) > 60:
                    break
            out.append(V.VariantScene(s.shapes, s.canvas, bg))
        return out

    tables["background"] = [
        ("ours (245,245,240)", rate(scenes)), ("white", rate(on((255, 255, 255)))),
        ("black", rate(on((0, 0, 0)))), ("mid gray (128,128,128)", rate(on((128, 128, 128)))),
        ("navy (20,30,90)", rate(on((20, 30, 90)))), ("random flat", rate(random_flat())),
        ("40 from an object's colour", rate(near(40))),
        ("25 from an object's colour", rate(near(25)))]
    tables["anti-aliasing"] = [
        (f"{k}x supersampling" if k > 1 else "off",
         rate([V.VariantScene(s.shapes, s.canvas, s.background, k) for s in scenes]))
        for k in (1, 2, 4)]
    tables["border contact"] = [
        ("none", rate(scenes)),
        ("flush with the nearest edge", rate([V.touching_border(s, rng) for s in scenes]))]
    tables["object scale (small side, px of 256)"] = [
        (str(side), rate([V.scaled(s, side) for s in scenes], check_size=False))
        for side in (6, 8, 12, 16, 24, 36)]
    tables["colours"] = [
        ("our palette", rate(scenes)),
        ("basic colour terms, random shades",
         rate([V.recoloured(s, rng) for s in scenes], check_size=False)),
        ("basic terms on random backgrounds, anti-aliased",
         rate([_random_bg(V.recoloured(s, rng), rng) for s in scenes], check_size=False))]
    tables["rectangles"] = [  # a stretched small square may reach a large one's extent
        ("squares only", rate(scenes, check_size=False)),
        ("half the squares stretched 1.5-2.5x",
         rate([V.with_rectangles(s, rng) for s in scenes], check_size=False))]
    return tables


def _random_bg(scene: V.VariantScene, rng) -> V.VariantScene:
    term = rng.choice(tuple(V.TERM_SHADES))
    bg = rng.choice(V.TERM_SHADES[term])
    scene = V.VariantScene(scene.shapes, scene.canvas, bg, 4)
    return V.recoloured(scene, rng)


def single_shapes(n: int, seed: int) -> dict[str, float]:
    """64-px images with one anti-aliased shape: colour and shape named right."""
    rng = random.Random(f"single:{seed}")
    colour = shape = both = found_one = 0
    for _ in range(n):
        scene = V.single_shape(rng)
        found = perceive(scene.render())
        o = scene.shapes[0]
        found_one += len(found) == 1
        if found:
            best = max(found, key=lambda f: iou(f[0], scene.boxes(64)[0]))
            colour += best[1] == o.color
            shape += best[2] == o.shape
            both += best[1:3] == (o.color, o.shape)
    return {"exactly one object found": found_one / n, "colour right": colour / n,
            "shape right": shape / n, "colour and shape right": both / n}


def our_dataset(n: int, seed: int) -> dict[str, float]:
    """Reference programs (one correct program per question) on generated shapes
    questions, executed in-process with shapes-cv: the tools' ceiling for a policy."""
    from envs.data.programs import reference_program
    from envs.data.shapes import build_dataset
    from rewards.metrics import gqa_accuracy

    out = {}
    for name, kw in {"clean": {}, "clutter 0.5": {"clutter": 0.5}, "clutter 1.0": {"clutter": 1.0},
                     "overlap": {"overlap": True}}.items():
        ds = build_dataset(train=0, validation=n, test=0, seed=seed + 7, progress=False, **kw)
        ds = ds["validation"]
        right = 0
        for row in ds:
            spec = json.loads(row["spec"])
            ns = build_namespace("shapes-cv")
            exec(reference_program(spec), ns)  # our own reference programs: trusted code
            try:
                answer = str(ns["execute_command"](np.asarray(row["image"].convert("RGB"))))
            except Exception:  # a tool result the program did not expect (e.g. nothing found)
                answer = ""
            right += gqa_accuracy(answer, row["answer"])
        out[name] = right / len(ds)
    return out


def speed(n: int, seed: int) -> float:
    """Milliseconds per image for what a typical program asks: find every object, then
    its colour and shape, an existence test and a count (memo tables emptied first)."""
    from envs.data.render import render
    from envs.data.scene import sample_scene
    from envs.tools import api, shapes_cv

    rng = random.Random(f"speed:{seed}")
    images = [np.asarray(render(sample_scene(rng, clutter=0.5 * (i % 2)))) for i in range(n)]
    for table in (api._MEMO, shapes_cv._SEGMENTS, shapes_cv._BACKGROUNDS, shapes_cv._SCENES):
        table.clear()
    t = time.perf_counter()
    for image in images:
        patch = build_namespace("shapes-cv")["ImagePatch"](image)
        for p in patch.find("object"):
            p.simple_query("What color is this?"), p.simple_query("What shape is this?")
        patch.exists("red circle"), patch.simple_query("How many squares are there?")
    return (time.perf_counter() - t) / n * 1000


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenes", type=int, default=100, help="scenes per cell (100)")
    p.add_argument("--single", type=int, default=400, help="single-shape images (400)")
    p.add_argument("--questions", type=int, default=400, help="questions per shapes split (400)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="also write the figures here")
    args = p.parse_args(argv)
    t0 = time.time()
    figures = {"variations": variations(args.scenes, args.seed),
               "single_shape_64px": single_shapes(args.single, args.seed),
               "shapes_dataset_reference_programs": our_dataset(args.questions, args.seed),
               "ms_per_image": speed(60, args.seed)}
    for title, rows in figures["variations"].items():
        print(f"\n| {title} | detection |\n|---|---|")
        for label, r in rows:
            print(f"| {label} | {r:.1%} |")
    print("\n| single shape, 64 px | share |\n|---|---|")
    for k, v in figures["single_shape_64px"].items():
        print(f"| {k} | {v:.1%} |")
    print("\n| our shapes questions, reference programs | accuracy |\n|---|---|")
    for k, v in figures["shapes_dataset_reference_programs"].items():
        print(f"| {k} | {v:.1%} |")
    print(f"\nfind + per-object queries: {figures['ms_per_image']:.1f} ms per 256-px image")
    print(f"({time.time() - t0:.0f} s; {args.scenes} scenes per cell)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
