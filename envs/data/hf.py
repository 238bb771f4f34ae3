"""Load a real VQA dataset through Hugging Face ``datasets`` into our canonical columns.

Two passes keep large sources cheap. The first, over every row, maps the columns, catches
rows with no image, an empty question or no answer, and carries pointers to the images
rather than their bytes. After subsampling, the second reads and decodes only the chosen
images and catches unreadable ones.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from datasets import ClassLabel, Features, Value

from envs.data.hf_images import POINTER, ImageReader, image_ref, point
from envs.data.presets import (DEFAULT_FIELDS, Preset, answer_list, get_preset,
                               majority_answer, select_subsample, subsample_spec, to_text)

log = logging.getLogger(__name__)

FIXES = {
    "missing_image": "point columns={'image': ...} at the image column, or pass image_root",
    "empty_question": "point columns={'question': ...} at the question column",
    "missing_answer": "use a labelled split, or point columns={'answer': ...} at the answers",
    "unreadable_image": "re-extract or delete the corrupt image files",
}


@dataclass
class LoadReport:
    """What happened to the source rows; ``str(report)`` is the one-line log message."""

    source: str
    split: str | None = None
    preset: str | None = None
    metric: str | None = None
    columns: dict[str, str] = field(default_factory=dict)  # our field -> source column
    source_rows: int = 0
    candidate_rows: int = 0  # after expansion into image-text pairings
    image_checked: int = 0   # rows whose images were decoded: the subsample
    kept: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)  # the first few skipped ids, with why

    @property
    def bad_fraction(self) -> float:
        # Exact without subsampling. With it, unreadable images are only seen among the
        # decoded rows, so their rate is applied to the rows that passed the first pass.
        unreadable = self.skipped.get("unreadable_image", 0)
        row_bad = sum(self.skipped.values()) - unreadable
        first = row_bad / self.candidate_rows if self.candidate_rows else 0.0
        return first + (1.0 - first) * (unreadable / self.image_checked if unreadable else 0.0)

    def counts(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.skipped.items())) or "none"

    def __str__(self) -> str:
        return (f"{self.source} [{self.split or '-'}]: kept {self.kept} of {self.candidate_rows}"
                f" rows, skipped {self.counts()} ({self.bad_fraction:.1%})")


def load_vqa(source: str | os.PathLike, split: str | None = None, preset: str | None = None,
             columns: Mapping[str, str | Sequence[str]] | None = None,
             subsample: int | str | Mapping[str, int] | None = None,
             max_bad_fraction: float = 0.05, seed: int = 0, *, metric: str | None = None,
             image_root: str | os.PathLike | None = None, cache_dir: str | None = None,
             ) -> tuple[datasets.Dataset, LoadReport]:
    """Load ``source`` as a VQA dataset in our columns, with a report of the skipped rows.

    source: a ``save_to_disk`` folder; a parquet, json or csv file; a folder of such files
        or of images; or a Hub name, which ``datasets.load_dataset`` takes from its cache
        or downloads unless HF_HUB_OFFLINE=1.
    columns: our field -> source column (dotted for struct fields: "types.detailed");
        overrides the preset's choice.
    subsample: N rows (balanced over groups when there is a group column), a dict with
        ``per_group``, ``top_groups``, ``total``, or "paper" for the preset's published rule.
    max_bad_fraction: past this fraction of malformed rows, raise instead of skipping.
    metric: a rewards.metrics name; defaults to the preset's; stored in a ``metric`` column.
    image_root: folder for image columns holding file names, ids or URLs (never fetched).
    """
    spec = get_preset(preset) if preset else None
    report = LoadReport(source=str(source), split=split, preset=spec and spec.name,
                        metric=metric or (spec and spec.metric))
    ds = _undecoded(_open(source, split, spec, cache_dir, report))
    fields = dict(spec.fields if spec else DEFAULT_FIELDS)
    for name, cols in (columns or {}).items():
        if name not in fields and name not in DEFAULT_FIELDS:
            raise ValueError(f"columns: unknown field {name!r}; fields are {', '.join(fields)}")
        fields[name] = (cols,) if isinstance(cols, str) else tuple(cols)
    report.columns = _resolve(ds, fields, spec.required if spec else ("question", "image"))
    extras = [c for c in (spec.extras if spec else ()) if c in ds.column_names]

    text = Value("string")
    features = {"id": text, "images": datasets.List(POINTER),
                "question": text, "answer": text, "answers": datasets.List(text)}
    features |= {"group": text} if "group" in report.columns else {}
    features |= {"metric": text} if report.metric else {}
    features |= {c: ds.features[c] for c in extras} | {"_skip": text}
    report.source_rows = len(ds)
    mapper = _RowMapper(ds.features, report.columns, spec, image_root, extras, report.metric)
    rows = ds.map(mapper, batched=True, with_indices=True, remove_columns=ds.column_names,
                  features=Features(features), load_from_cache_file=False,
                  desc="vprl: mapping columns")
    report.candidate_rows = len(rows)
    ok = _tally(rows, report)
    _check(report, max_bad_fraction)

    groups = rows.select(ok)["group"] if "group" in report.columns else None
    picked = select_subsample(len(ok), groups, subsample_spec(subsample, spec), seed)
    rows = rows.select([ok[i] for i in picked])
    del features["images"]
    rows = rows.map(ImageReader(ds), batched=True, batch_size=32, remove_columns=["images"],
                    features=Features({"image": datasets.Image(), **features}),
                    load_from_cache_file=False, desc="vprl: checking images")
    report.image_checked = len(rows)
    rows = rows.select(_tally(rows, report)).select_columns(
        ["id", "image"] + [c for c in features if c not in ("id", "_skip")])
    report.kept = len(rows)
    (log.warning if report.skipped else log.info)("%s", report)
    _check(report, max_bad_fraction, final=True)
    return rows, report


def _open(source, split, spec: Preset | None, cache_dir, report: LoadReport):
    path = Path(source).expanduser()
    if any((path / f).exists() for f in ("dataset_info.json", "dataset_dict.json")):
        loaded = datasets.load_from_disk(str(path))
    elif path.exists():  # data files or images: the packaged builders infer the format
        where, files = (path, None) if path.is_dir() else (path.parent, path.name)
        loaded = datasets.load_dataset(str(where), data_files=files, cache_dir=cache_dir)
    elif str(source).startswith((".", "/", "~")) or str(source).count("/") > 1:
        raise FileNotFoundError(f"dataset path {source} does not exist")
    else:
        config = spec.hub_config if spec and str(source) == spec.hub else None
        try:
            loaded = datasets.load_dataset(str(source), config, split=split, cache_dir=cache_dir)
        except Exception as err:  # the Hub or the cache said no: say what to do instead
            raise ValueError(f"could not load {source!r} as a local path or Hub dataset "
                             f"({type(err).__name__}: {err}); pass a local folder or file, "
                             "or make the Hub copy available") from err
    if isinstance(loaded, datasets.Dataset):
        return loaded
    names = list(loaded)
    split = names[0] if split is None and len(names) == 1 else split
    if split not in names:
        raise ValueError(f"choose a split with split=...; available: {', '.join(names)}")
    report.split = split
    return loaded[split]


def _undecoded(ds: datasets.Dataset) -> datasets.Dataset:
    # Keep the encoded bytes: the first pass must not decode every image in the source.
    for name, feat in ds.features.items():
        if isinstance(feat, datasets.Image):
            ds = ds.cast_column(name, datasets.Image(decode=False))
        elif isinstance(feat, datasets.List) and isinstance(feat.feature, datasets.Image):
            ds = ds.cast_column(name, datasets.List(datasets.Image(decode=False)))
    return ds


def _resolve(ds, fields: Mapping[str, tuple[str, ...]], required) -> dict[str, str]:
    def present(col: str) -> bool:
        top, _, rest = col.partition(".")
        feat = ds.features.get(top)
        return col in ds.column_names or bool(rest) and isinstance(feat, dict) and rest in feat

    found = {name: next((c for c in cands if present(c)), None) for name, cands in fields.items()}
    missing = [n for n in required if not found[n]]
    if ("answer" in fields or "answers" in fields) and not (found.get("answer")
                                                            or found.get("answers")):
        missing.append("answer")
    if missing:
        raise ValueError(f"no column for {', '.join(missing)} in {ds.column_names}; map it "
                         f"with columns={{'{missing[0]}': '<column>'}}")
    return {name: col for name, col in found.items() if col}


class _RowMapper:
    """First pass: source batch -> canonical rows, each tagged with a skip reason or ''."""

    def __init__(self, features, columns, spec, image_root, extras, metric):
        self.features, self.columns, self.spec, self.extras, self.metric = (
            features, columns, spec, extras, metric)
        self.image_root = Path(image_root).expanduser() if image_root else None
        self.image_file = spec.image_file if spec else None

    def _get(self, batch, i, index, col):
        top, _, rest = (col, "", "") if col in batch else col.partition(".")
        value, feat = batch[top][i], self.features[top]
        if rest:
            return value.get(rest) if isinstance(value, dict) else None
        if isinstance(feat, ClassLabel) and value is not None:
            return feat.int2str(value)
        return point(value, index, top)

    def __call__(self, batch, indices):
        out = defaultdict(list)
        for i, index in enumerate(indices):
            values = {name: self._get(batch, i, index, col) for name, col in self.columns.items()}
            values["id"] = str(index) if values.get("id") is None else values["id"]
            image = values.get("image")
            rows = (self.spec.expand(values) if self.spec and self.spec.expand else
                    [dict(values, images=list(image) if isinstance(image, list) else [image])])
            for row in rows:
                for key, value in self._canonical(row).items():
                    out[key].append(value)
                for col in self.extras:
                    out[col].append(batch[col][i])
        return out

    def _canonical(self, row) -> dict:
        images = [image_ref(v, self.image_root, self.image_file) for v in row.get("images") or []]
        answers = answer_list(row.get("answers"))
        answer = row.get("answer")  # ChartQA's label is a one-element list
        answer = to_text(answer[0] if isinstance(answer, list) and answer else answer)
        answer = majority_answer(answers) if answer is None else answer
        question = to_text(row.get("question"))
        skip = ("missing_image" if not images or None in images
                else "empty_question" if not question or not question.strip()
                else "missing_answer" if answer is None else "")
        out = {"id": str(row["id"]), "images": [] if skip == "missing_image" else images,
               "question": question, "answer": answer,
               "answers": answers or ([answer] if answer is not None else []), "_skip": skip}
        if "group" in self.columns:
            group = row.get("group")
            out["group"] = "|".join(map(str, group)) if isinstance(group, list) else to_text(group)
        if self.metric:
            out["metric"] = self.metric
        return out


def _tally(rows: datasets.Dataset, report: LoadReport) -> list[int]:
    """Count skip reasons into the report; return the indices of the good rows."""
    good = []
    for i, (skip, row_id) in enumerate(zip(rows["_skip"], rows["id"])):
        if skip:
            reason = skip.split(":", 1)[0]
            report.skipped[reason] = report.skipped.get(reason, 0) + 1
            report.examples += [f"{row_id}: {skip}"][: 5 - len(report.examples)]
        else:
            good.append(i)
    return good


def _check(report: LoadReport, max_bad_fraction: float, final: bool = False) -> None:
    if not report.candidate_rows:
        raise ValueError(f"{report.source} has no rows; check the source and the split")
    if report.bad_fraction > max_bad_fraction or (final and not report.kept):
        worst = max(report.skipped, key=report.skipped.get) if report.skipped else None
        raise ValueError(
            f"{report.bad_fraction:.1%} of rows from {report.source} are malformed "
            f"({report.counts()}), above max_bad_fraction={max_bad_fraction}; "
            f"{FIXES.get(worst, 'fix the data')}, or raise max_bad_fraction")
