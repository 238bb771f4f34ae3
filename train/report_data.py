"""Reading a finished (or running) run folder for `vprl report`: no W&B needed.

A run folder holds `config.yaml`, `metrics.jsonl` (one line per iteration), `best/best.json`,
`tables/iter_NNN/<table>.jsonl` with images in `tables/media/`, `train.log`, and where the
run evaluated its starting policy, `eval/base.json` (its metrics) and `eval/<point>.jsonl`
(one line per held-out question: `base`, `iter_000`, ...).

Iteration t's rollout metrics (`reward/*`, `rollout/*`) score the adapter that sampled
them, i.e. the policy after t updates; its `eval/*` metrics score the policy after t + 1
updates. Plots put both on one axis, "updates", where 0 is the starting policy.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml


class ReportError(ValueError):
    """A run folder that cannot be read; one line naming the fix."""


# Keys measured on the policy that *sampled* the iteration (before its update).
ROLLOUT_PREFIXES = ("reward/", "rewards/", "rollout/", "refine/")


def updates_of(key: str, iteration: int) -> int:
    """How many updates the policy that a metric measures has had."""
    return iteration if key.startswith(ROLLOUT_PREFIXES) else iteration + 1


@dataclass
class Run:
    path: Path
    name: str
    config: dict
    metrics: list[dict]
    best: dict | None = None
    warnings: list[str] = field(default_factory=list)
    base: dict = field(default_factory=dict)  # the starting policy's held-out metrics, if evaluated

    def series(self, key: str) -> list[tuple[int, float]]:
        """(updates, value) points of one metric, finite values only, in order."""
        points = {}
        for m in [{"iteration": -1, **self.base}] + self.metrics:
            value = m.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                points[updates_of(key, int(m["iteration"]))] = float(value)
        return sorted(points.items())

    def keys(self, prefix: str = "", suffix: str = "") -> list[str]:
        seen = {}
        for m in self.metrics:
            for k in m:
                if k.startswith(prefix) and k.endswith(suffix):
                    seen[k] = None
        return list(seen)

    @property
    def iterations(self) -> list[int]:
        return [int(m["iteration"]) for m in self.metrics if int(m["iteration"]) >= 0]

    @property
    def best_updates(self) -> int | None:
        """The best adapter as a number of updates (best.json's iteration -1 is the starting policy)."""
        if self.best and isinstance(self.best.get("iteration"), int):
            return self.best["iteration"] + 1
        return None

    def table(self, iteration: int, name: str) -> list[dict]:
        return _jsonl(self.path / "tables" / f"iter_{iteration:03d}" / f"{name}.jsonl")

    def answers(self, point: str) -> list[dict]:
        """Held-out answers of a point (`base`, `iter_000`, ...): the per-question records
        train/heldout.py writes to `eval/<point>.jsonl` (question `family`, `accuracy`, ...)."""
        return _jsonl(self.path / "eval" / f"{point}.jsonl")

    def table_names(self, iteration: int) -> list[str]:
        root = self.path / "tables" / f"iter_{iteration:03d}"
        return sorted(str(p.relative_to(root))[: -len(".jsonl")] for p in root.rglob("*.jsonl")) if root.is_dir() else []

    def image_bytes(self, cell) -> bytes | None:
        """A table cell `{"image": "media/<hash>.png"}` as PNG bytes (None if it is not one)."""
        if isinstance(cell, dict) and isinstance(cell.get("image"), str):
            path = (self.path / "tables" / cell["image"]).resolve()
            if path.is_file() and (self.path / "tables").resolve() in path.parents:
                return path.read_bytes()
        return None


def load_run(path: str | Path) -> Run:
    path = Path(path)
    if not path.is_dir():
        raise ReportError(f"run folder {str(path)!r} does not exist; pass runs/<run_name>")
    metrics_file = path / "metrics.jsonl"
    if not metrics_file.is_file() and not (path / "config.yaml").is_file():
        raise ReportError(f"{str(path)!r} is not a run folder (no metrics.jsonl or config.yaml); pass runs/<run_name>")
    metrics = []
    if metrics_file.is_file():
        for i, line in enumerate(metrics_file.read_text().splitlines()):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise ReportError(f"{metrics_file}:{i + 1} is not JSON; the file is damaged") from None
            if isinstance(row, dict) and isinstance(row.get("iteration"), int):
                metrics.append(row)
    config = {}
    if (path / "config.yaml").is_file():
        config = yaml.safe_load((path / "config.yaml").read_text()) or {}
    best = None
    if (path / "best" / "best.json").is_file():
        best = json.loads((path / "best" / "best.json").read_text())
    warnings = []
    if (path / "train.log").is_file():
        warnings = [line for line in (path / "train.log").read_text(errors="replace").splitlines()
                    if line.lower().startswith(("warning", "error")) or "Warning:" in line]
    base = {}
    if (path / "eval" / "base.json").is_file():
        base = {k: v for k, v in json.loads((path / "eval" / "base.json").read_text()).items() if k.startswith("eval/")}
    # Named by its folder, as the user passed it: copies and renamed runs stay apart.
    return Run(path=path, name=path.resolve().name, config=config, metrics=metrics, best=best,
               warnings=warnings, base=base)


def stop_decision(run: Run) -> str:
    """The early-stopping decision in words."""
    es = run.config.get("early_stopping", {})
    planned = run.config.get("iterations")
    done = len(run.iterations)
    if not done:
        return "no iteration completed yet"
    last = run.metrics[-1]
    declines = last.get("early_stopping/declines")
    best = run.best_updates
    best_text = ("the starting policy" if best == 0 else f"the policy after {best} update(s)") if best is not None else "not published yet"
    monitor = es.get("monitor", "reward/mean")
    if run.best and run.best.get("stopped_early"):
        text = (f"stopped early after iteration {done}: {monitor} declined {declines} time(s) in a row "
                f"(patience {es.get('patience')}, min_delta {es.get('min_delta')})")
    elif run.best is not None:
        text = f"ran all {done} iteration(s); {monitor} did not decline {es.get('patience')} times in a row"
        if es.get("enabled") is False:
            text = f"ran all {done} iteration(s) (early stopping off)"
    else:
        text = f"{done} of {planned} iteration(s) completed; the run has not finished"
    return f"{text}. Best adapter (best/adapter): {best_text}."


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill: the rest is still worth showing
            continue
    return rows
