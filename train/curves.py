"""Learning curves from runs' per-question held-out records, with bootstrap intervals.

Each run writes `runs/<name>/eval/<point>.jsonl` (see `train.heldout`): one line per
held-out question with its accuracy and logical accuracy, for the starting policy
(`base`) and after every iteration (`iter_000`, ...). A curve point is the mean over
seeds and questions; its 95% interval comes from a two-level bootstrap that resamples
the seeds and, independently, the questions (the same questions for every seed, so
per-question difficulty is shared across seeds as it is in the data).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

BASE = "base"
METRICS = ("accuracy", "logical_accuracy")


def bootstrap_mean(values, replicates: int = 2000, level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high) of a seeds x questions matrix, resampling seeds and questions.

    values: array-like of shape (seeds, questions); NaN entries (a question a metric
    does not apply to) are left out of every mean. A vector counts as one seed.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.size == 0:
        raise ValueError(f"bootstrap_mean needs a non-empty seeds x questions matrix, got shape {x.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    mean = float(np.nanmean(x))
    s, q = x.shape
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, s, size=(replicates, s))
    questions = rng.integers(0, q, size=(replicates, q))
    ok = ~np.isnan(x)
    filled = np.where(ok, x, 0.0)
    # For replicate b: sum over picked seeds i and picked questions j of x[i, j], done as
    # (counts of seeds) @ x @ (counts of questions) to keep memory at replicates x q.
    seed_counts = np.stack([np.bincount(r, minlength=s) for r in seeds]).astype(float)
    question_counts = np.stack([np.bincount(r, minlength=q) for r in questions]).astype(float)
    totals = np.einsum("bs,sq,bq->b", seed_counts, filled, question_counts)
    counts = np.einsum("bs,sq,bq->b", seed_counts, ok.astype(float), question_counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = totals / counts
    stats = stats[~np.isnan(stats)]
    alpha = (1 - level) / 2
    low, high = (np.quantile(stats, [alpha, 1 - alpha]) if stats.size else (float("nan"), float("nan")))
    return mean, float(low), float(high)


def read_run(run_dir: str | Path) -> dict:
    """One run's points {name: records} in curve order (base, iter_000, ...), `final`: the
    point of the adapter it published (`best/`), which early stopping may have kept from
    an earlier iteration, and `finished`: whether it published one (a run still going, or
    cut off, has not)."""
    run_dir = Path(run_dir)
    folder = run_dir / "eval"
    if not folder.is_dir():
        raise FileNotFoundError(f"{run_dir} has no eval/ records; was it run with eval_questions > 0?")
    names = sorted(p.stem for p in folder.glob("*.jsonl"))
    names = ([BASE] if BASE in names else []) + [n for n in names if n != BASE]
    points = {n: [json.loads(line) for line in (folder / f"{n}.jsonl").read_text().splitlines() if line.strip()]
              for n in names}
    final = names[-1] if names else None
    meta = run_dir / "best" / "best.json"
    finished = meta.exists()
    if finished:
        best = json.loads(meta.read_text()).get("iteration")
        name = BASE if best is None or best < 0 else f"iter_{best:03d}"
        final = name if name in points else final
    return {"points": points, "final": final, "finished": finished}


def matrix(runs: list[dict], point: str, metric: str) -> np.ndarray:
    """seeds x questions for one point (by question id). A run without that point (it
    stopped early) contributes its published adapter's records: what it ended with.
    Pass only runs that reached the point or finished (`reached`)."""
    rows = []
    for run in runs:
        name = point if point in run["points"] else run["final"]
        rows.append({r["id"]: r.get(metric) for r in run["points"][name]})
    ids = sorted(set.intersection(*(set(r) for r in rows))) if rows else []
    if rows and any(len(r) != len(ids) for r in rows):
        raise ValueError(f"runs evaluated different held-out questions at {point}; compare runs of one data config")
    return np.array([[np.nan if r[i] is None else float(r[i]) for i in ids] for r in rows], dtype=float)


def reached(runs: list[dict], point: str) -> list[dict]:
    """The runs a point is measured on: those that evaluated it, and finished runs that
    stopped before it (they count with their published adapter). A run that has not
    finished (still going, or cut off) counts only where it got to."""
    if point == "final":
        return [r for r in runs if r["finished"]]
    return [r for r in runs if point in r["points"] or r["finished"]]


def curve(run_dirs: list[str | Path], replicates: int = 2000, seed: int = 0) -> list[dict]:
    """Per point (base, iter_000, ..., then `final`: each run's published adapter) and
    metric: (mean, low, high) over seeds and questions, and the gain over the base point
    with its own paired interval (the same seeds and questions resampled for both);
    `seeds`: how many runs the point is measured on."""
    runs = [read_run(d) for d in run_dirs]
    names = list(max((r["points"] for r in runs), key=len)) + ["final"]
    out = []
    for point in names:
        on = reached(runs, point)
        if not on:
            continue
        row = {"point": point, "seeds": len(on)}
        for metric in METRICS:
            m = matrix(on, point, metric)
            if m.size == 0 or np.isnan(m).all():
                continue
            row[metric] = bootstrap_mean(m, replicates, seed=seed)
            if point != BASE and all(BASE in r["points"] for r in on):
                row[f"{metric}_gain"] = bootstrap_mean(m - matrix(on, BASE, metric), replicates, seed=seed)
        out.append(row)
    return out


def versus(run_dirs: list[str | Path], reference_dirs: list[str | Path], point: str = "final",
           replicates: int = 2000, seed: int = 0) -> dict:
    """One arm against a reference arm at one point: the difference per metric, paired by
    seed (run_dirs[i] with reference_dirs[i]) and by question, with a bootstrap interval
    that resamples the pairs and the questions together. Only pairs in which both runs
    reached the point count (`seeds`); {} when none did. An ablation's verdict is this
    interval, not the gap between two arms' separate intervals."""
    pairs = [(read_run(a), read_run(b)) for a, b in zip(run_dirs, reference_dirs, strict=True)]
    pairs = [(a, b) for a, b in pairs if reached([a], point) and reached([b], point)]
    if not pairs:
        return {}
    out = {"point": point, "seeds": len(pairs)}
    runs = [a for a, _ in pairs] + [b for _, b in pairs]
    for metric in METRICS:
        # One matrix over both arms: the same question columns for each, and arms evaluated
        # on different questions are refused by matrix's own check.
        m = matrix(runs, point, metric)
        diff = m[:len(pairs)] - m[len(pairs):]
        if not np.isnan(diff).all():
            out[metric] = bootstrap_mean(diff, replicates, seed=seed)
    return out
