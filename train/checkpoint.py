"""Per-iteration checkpoints that survive `kill -9`.

Layout of `runs/<name>/`:
    config.yaml          the resolved config
    metrics.jsonl        one line per completed iteration (rebuilt from checkpoints on resume)
    iterations/iter_NNN/ adapter/ (peft), optimizer.pt, rng.pt, pool.json, metrics.json, state.json
    best/                the best iteration's adapter, written when the run ends or stops early

An iteration's folder is written under a temporary name and renamed into place last, so
a folder either holds a whole iteration or does not exist.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import numpy as np
import torch

from policies.adapters import make_portable

ITER_DIR = "iterations"


def metrics_json(metrics: dict) -> dict:
    """NaN and inf are not JSON: they are written as null."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in metrics.items()}


def iteration_dir(run_dir: Path, iteration: int) -> Path:
    return run_dir / ITER_DIR / f"iter_{iteration:03d}"


def completed_iterations(run_dir: Path) -> list[int]:
    root = run_dir / ITER_DIR
    if not root.is_dir():
        return []
    done = []
    for d in root.iterdir():
        if d.name.startswith("iter_") and d.name[5:].isdigit() and (d / "state.json").exists():
            done.append(int(d.name[5:]))
    return sorted(done)


def rng_state() -> dict:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def save_iteration(run_dir: Path, iteration: int, model, optimizer, metrics: dict, state: dict,
                   pool: list | None = None, extra_rng: dict | None = None) -> Path:
    final = iteration_dir(run_dir, iteration)
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp / "adapter")
    make_portable(tmp / "adapter")  # the base by a name other machines resolve, not a cache path
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save({**rng_state(), **(extra_rng or {})}, tmp / "rng.pt")
    (tmp / "pool.json").write_text(json.dumps(pool or []))
    (tmp / "metrics.json").write_text(json.dumps(metrics_json(metrics)))
    # state.json last: its presence marks the folder complete even before the rename.
    (tmp / "state.json").write_text(json.dumps({"iteration": iteration, **state}))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final


def load_iteration(run_dir: Path, iteration: int) -> dict:
    d = iteration_dir(run_dir, iteration)
    return {
        "dir": d,
        "adapter": d / "adapter",
        "optimizer": torch.load(d / "optimizer.pt", weights_only=False),
        "rng": torch.load(d / "rng.pt", weights_only=False),
        "pool": json.loads((d / "pool.json").read_text()),
        "metrics": json.loads((d / "metrics.json").read_text()),
        "state": json.loads((d / "state.json").read_text()),
    }


def rebuild_metrics(run_dir: Path, iterations: list[int]) -> None:
    """Rewrite metrics.jsonl from the checkpoints, so after a kill each completed
    iteration appears exactly once and a half-logged one not at all."""
    lines = [(iteration_dir(run_dir, i) / "metrics.json").read_text().strip() for i in iterations]
    tmp = run_dir / "metrics.jsonl.tmp"
    tmp.write_text("".join(line + "\n" for line in lines))
    tmp.replace(run_dir / "metrics.jsonl")


def clean_partial(run_dir: Path) -> None:
    root = run_dir / ITER_DIR
    if root.is_dir():
        for d in root.glob("*.tmp"):
            shutil.rmtree(d, ignore_errors=True)


def publish_best(run_dir: Path, source_adapter: Path, info: dict) -> Path:
    best = run_dir / "best"
    tmp = run_dir / "best.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source_adapter, tmp / "adapter")
    (tmp / "best.json").write_text(json.dumps(info, indent=2))
    shutil.rmtree(best, ignore_errors=True)
    tmp.rename(best)
    return best
