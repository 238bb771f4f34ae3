"""Benchmark `vprl data shapes`: time to write N questions (issue 4 target: 10,000 in <= 60 s
on 2 cores), plus the shapes-cv tool speed the trainer leans on.

    python bench/bench_data.py [--questions 10000] [--seed 0]
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from envs.data import cli  # noqa: E402
from envs.data.render import render  # noqa: E402
from envs.data.scene import sample_scene  # noqa: E402
from envs.tools import build_namespace  # noqa: E402


def bench_cli(n: int, seed: int) -> float:
    val = test = n // 10
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        rc = cli.main(["--out", f"{tmp}/shapes", "--train", str(n - val - test), "--val", str(val),
                       "--test", str(test), "--seed", str(seed), "--no-progress"])
        elapsed = time.perf_counter() - t
        size_mb = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file()) / 2**20
    if rc != 0:
        raise SystemExit(f"vprl data shapes failed with exit status {rc}")
    print(f"vprl data shapes: {n} questions in {elapsed:.1f} s "
          f"({n / elapsed:.0f} questions/s, {size_mb:.0f} MiB on disk); target <= 60 s: "
          f"{'PASS' if n < 10000 or elapsed <= 60 else 'FAIL'}")
    return elapsed


def bench_tools(n_images: int = 100) -> None:
    rng = random.Random(0)
    images = [np.asarray(render(sample_scene(rng))) for _ in range(n_images)]
    t = time.perf_counter()
    for img in images:  # a typical program: find, then query each patch
        ImagePatch = build_namespace()["ImagePatch"]
        for p in ImagePatch(img).find("circle"):
            p.simple_query("What color is this?")
    cold = (time.perf_counter() - t) / n_images
    t = time.perf_counter()
    for img in images:  # the same program again: the memo table answers
        ImagePatch = build_namespace()["ImagePatch"]
        for p in ImagePatch(img).find("circle"):
            p.simple_query("What color is this?")
    warm = (time.perf_counter() - t) / n_images
    print(f"shapes-cv typical program: {cold * 1e3:.2f} ms cold, {warm * 1e3:.2f} ms memoised")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    bench_cli(args.questions, args.seed)
    bench_tools()


if __name__ == "__main__":
    main()
