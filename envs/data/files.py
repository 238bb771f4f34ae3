"""Any VQA dataset from files, in our columns and splits, checked before anything trains.

Every entry point reads a dataset on disk through ``load_splits``: training
(``data.name: files`` and the presets), ``vprl data import`` / ``vprl data check`` and
``vprl eval --data``.  A source is an image folder with ``metadata.jsonl`` or
``metadata.csv``, a parquet/json/csv file, or a saved ``Dataset`` / ``DatasetDict``;
``columns`` maps our fields to its column names.  A source with one split (an image
folder, a single file, a bare Dataset) is divided by a seeded shuffle, so the held-out
rows are the same in every run with that seed.
"""
from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import datasets

from envs.data.hf import (PYTHON_HINTS, DataError, Hints, LoadReport, load_vqa, open_source,
                          splits_of)
from envs.data.presets import get_preset

# Columns of the synthetic shapes set that logical accuracy reads: kept when present.
SHAPES_COLUMNS = ("family", "scene", "spec")
# Exact match after the VQA answer normalisation: the metric when nothing names one.
DEFAULT_METRIC = "gqa_accuracy"

CONFIG_HINTS = Hints(columns="data.columns.{field}=<column>", image_root="data.image_root",
                     split="data.train_split / data.eval_split",
                     max_bad_fraction="data.max_bad_fraction")
CLI_HINTS = Hints(columns="--columns {field}=<column>", image_root="--image-root DIR",
                  split="--split", max_bad_fraction="--max-bad-fraction")


@dataclass
class Splits:
    """The loaded splits, the report of each load, and how held-out rows were made."""

    rows: dict[str, datasets.Dataset]
    reports: list[LoadReport] = field(default_factory=list)
    note: str = ""

    @property
    def metric(self) -> str:
        """The metric every row names (the first one when rows differ)."""
        for ds in self.rows.values():
            if "metric" in ds.column_names and len(ds):
                return ds[0]["metric"]
        return DEFAULT_METRIC

    def lines(self) -> list[str]:
        """What the load did, for the log: one line per load, then the split note."""
        return [str(r) for r in self.reports] + ([self.note] if self.note else [])


def load_splits(source: str | os.PathLike, want: Sequence[str] | None = ("train", "validation"),
                *, train_split: str = "train", eval_split: str = "validation",
                columns: Mapping[str, str] | None = None, image_root=None,
                metric: str | None = None, preset: str | None = None, seed: int = 0,
                eval_size: int = 64, max_bad_fraction: float = 0.05, subsample=None,
                cache_dir: str | None = None, hints: Hints = PYTHON_HINTS) -> Splits:
    """Load the splits ``want`` of ``source`` (every split when None) in our columns.

    When the source has every wanted split, each is loaded as it is.  When it has one
    split, that split is loaded once and divided by ``seed``: ``eval_split`` takes
    ``eval_size`` rows (at most a fifth of them) and ``train_split`` the rest.
    metric: the rewards.metrics name stored in each row's ``metric`` column; defaults
    to the preset's, then to the source's own ``metric`` column, then gqa_accuracy.
    Raises DataError (one line naming the fix, spelled as ``hints`` say) for a missing
    path, unknown columns or splits, an empty split, or too many malformed rows.
    """
    from rewards.metrics import REFERENCE_COLUMN as METRICS  # per-question metrics

    if metric is not None and metric not in METRICS:
        raise DataError(f"metric {metric!r} is unknown; known: {', '.join(sorted(METRICS))}")
    if eval_size < 1:
        raise DataError(f"the held-out split needs at least 1 row, got eval_size={eval_size}")
    spec = get_preset(preset) if preset else None
    label = str(source)
    opened = open_source(source, spec, cache_dir)
    names = splits_of(opened)
    first = opened if isinstance(opened, datasets.Dataset) else opened[names[0]]
    own = "metric" in first.column_names
    metric = metric or (spec.metric if spec else None) or (None if own else DEFAULT_METRIC)
    common = dict(preset=preset, columns=columns, image_root=image_root, metric=metric,
                  subsample=subsample, max_bad_fraction=max_bad_fraction, seed=seed,
                  keep=SHAPES_COLUMNS, name=label, hints=hints)
    if image_root is None and os.path.exists(os.path.expanduser(source)):
        # File names in a data file are relative to its folder (or the dataset's own).
        path = os.path.abspath(os.path.expanduser(source))
        common["image_root"] = path if os.path.isdir(path) else os.path.dirname(path)

    wanted = list(want) if want else names
    out = Splits({})
    if all(w in names for w in wanted) and not (want is None and len(names) == 1):
        for name in wanted:
            rows, report = load_vqa(opened, split=name if len(names) > 1 else None, **common)
            report.split = name
            out.rows[name], out.reports = rows, out.reports + [report]
    elif len(names) == 1:
        stray = [w for w in wanted if w not in (train_split, eval_split)]
        if stray:
            raise DataError(f"{label} has one split, divided into {train_split!r} and "
                            f"{eval_split!r}; there is no {stray[0]!r}: choose one of them with "
                            f"{hints.split}")
        rows, report = load_vqa(opened, split=None, **common)
        train, held = seeded_split(rows, eval_size, seed, label)
        out.rows = {train_split: train, eval_split: held}
        out.rows = {w: out.rows[w] for w in (wanted if want else (train_split, eval_split))}
        out.reports = [report]
        out.note = (f"{label} has one split: {len(held)} of {len(rows)} rows held out as "
                    f"{eval_split!r} by seed {seed}, {len(train)} left for {train_split!r}")
    else:
        missing = next(w for w in wanted if w not in names)
        raise DataError(f"{label} has no split {missing!r} (it has {', '.join(names)}); "
                        f"choose one with {hints.split}")
    _check_metrics(out, hints)
    return out


def seeded_split(rows: datasets.Dataset, eval_size: int, seed: int,
                 label: str = "the dataset") -> tuple[datasets.Dataset, datasets.Dataset]:
    """(train, held-out): ``eval_size`` rows, at most a fifth, drawn by ``seed``."""
    n = len(rows)
    if n < 2:
        raise DataError(f"{label} has {n} usable row(s); holding out an evaluation split "
                        "needs at least 2")
    k = min(eval_size, max(1, n // 5))
    order = list(range(n))
    random.Random(f"vprl-split:{seed}").shuffle(order)
    return rows.select(sorted(order[k:])), rows.select(sorted(order[:k]))


def _check_metrics(splits: Splits, hints: Hints) -> None:
    from rewards.metrics import REFERENCE_COLUMN as METRICS  # per-question metrics

    for name, ds in splits.rows.items():
        if "metric" not in ds.column_names:
            continue
        unknown = sorted(set(ds["metric"]) - set(METRICS))
        if unknown:
            raise DataError(f"{name} rows name the unknown metric {unknown[0]!r} in their "
                            f"metric column; known: {', '.join(sorted(METRICS))} (or set the "
                            "metric for every row)")
