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



class DataError(ValueError):
    """A dataset that cannot be used as given; the message is one line naming the fix."""


@dataclass(frozen=True)
class Hints:
    """How an entry point spells the options an error tells the user to change: the
    Python API says ``columns={'question': ...}``, a config ``data.columns.question=...``,
    the CLI ``--columns question=...``."""

    columns: str = "columns={{'{field}': '<column>'}}"
    image_root: str = "image_root=DIR"
    split: str = "split=..."
    max_bad_fraction: str = "max_bad_fraction"

    def column(self, field: str) -> str:
        return self.columns.format(field=field)


PYTHON_HINTS = Hints()


class MissingSource(DataError, FileNotFoundError):
    """A local dataset path that does not exist."""


def fix_for(reason: str | None, hints: Hints = PYTHON_HINTS) -> str:
    """What to do about the most common reason rows were skipped."""
    return {
        "missing_image": f"point {hints.column('image')} at the image column, or set "
                         f"{hints.image_root} to the folder its file names are relative to",
        "empty_question": f"point {hints.column('question')} at the question column",
        "missing_answer": f"use a labelled split, or point {hints.column('answer')} at the answers",
        "unreadable_image": "re-extract or delete the corrupt image files",
    }.get(reason, "fix the data")


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


def load_vqa(source: str | os.PathLike | datasets.Dataset | datasets.DatasetDict,
             split: str | None = None, preset: str | None = None,
             columns: Mapping[str, str | Sequence[str]] | None = None,
             subsample: int | str | Mapping[str, int] | None = None,
             max_bad_fraction: float = 0.05, seed: int = 0, *, metric: str | None = None,
             image_root: str | os.PathLike | None = None, cache_dir: str | None = None,
             keep: Sequence[str] = (), name: str | None = None, hints: Hints = PYTHON_HINTS,
             ) -> tuple[datasets.Dataset, LoadReport]:
    """Load ``source`` as a VQA dataset in our columns, with a report of the skipped rows.

    source: a ``save_to_disk`` folder; a parquet, json or csv file; a folder of such files
        or of images; a Hub name, which ``datasets.load_dataset`` takes from its cache
        or downloads unless HF_HUB_OFFLINE=1; or a Dataset / DatasetDict already opened
        with ``open_source``.
    columns: our field -> source column (dotted for struct fields: "types.detailed");
        overrides the preset's choice.
    subsample: N rows (balanced over groups when there is a group column), a dict with
        ``per_group``, ``top_groups``, ``total``, or "paper" for the preset's published rule.
    max_bad_fraction: past this fraction of malformed rows, raise instead of skipping.
    metric: a rewards.metrics name stored in a ``metric`` column; defaults to the
        preset's, else to the source's own ``metric`` column when it has one.
    image_root: folder for image columns holding file names, ids or URLs (never fetched);
        defaults to the folder of a data file, so paths relative to it resolve.
    keep: source columns copied through unchanged when present (the shapes set's spec).
    name: how the report names the source (default: ``str(source)``).
    hints: how the caller spells the options error messages tell the user to change.
    Every problem raises ``DataError`` with one line naming the fix.
    """
    spec = get_preset(preset) if preset else None
    label = name or str(source)
    report = LoadReport(source=label, split=split, preset=spec and spec.name,
                        metric=metric or (spec and spec.metric))
    opened = source if isinstance(source, (datasets.Dataset, datasets.DatasetDict)) else \
        open_source(source, spec, cache_dir, split)
    ds = _undecoded(pick_split(opened, split, report, hints))
    if image_root is None and not isinstance(source, (datasets.Dataset, datasets.DatasetDict)):
        path = Path(source).expanduser()
        image_root = path.parent if path.is_file() else path if path.is_dir() else None
    fields = dict(spec.fields if spec else DEFAULT_FIELDS)
    for field_name, cols in (columns or {}).items():
        if field_name not in fields and field_name not in DEFAULT_FIELDS:
            raise DataError(f"{hints.column(field_name)}: unknown field {field_name!r}; "
                            f"fields are {', '.join(fields)}")
        fields[field_name] = (cols,) if isinstance(cols, str) else tuple(cols)
    if not report.metric and "metric" in ds.column_names:  # an imported set keeps its metric
        fields["metric"] = ("metric",)
    report.columns = _resolve(ds, fields, spec.required if spec else ("question", "image"),
                              hints, label)
    extras = [c for c in dict.fromkeys([*(spec.extras if spec else ()), *keep])
              if c in ds.column_names and c not in report.columns.values()]

    text = Value("string")
    features = {"id": text, "images": datasets.List(POINTER),
                "question": text, "answer": text, "answers": datasets.List(text)}
    features |= {"group": text} if "group" in report.columns else {}
    features |= {"metric": text} if report.metric or "metric" in report.columns else {}
    features |= {c: ds.features[c] for c in extras} | {"_skip": text}
    report.source_rows = len(ds)
    if not len(ds):  # an empty split maps to a dataset without columns: stop here
        _check(report, max_bad_fraction, hints)
    mapper = _RowMapper(ds.features, report.columns, spec, image_root, extras, report.metric)
    rows = ds.map(mapper, batched=True, with_indices=True, remove_columns=ds.column_names,
                  features=Features(features), load_from_cache_file=False,
                  desc="vprl: mapping columns")
    report.candidate_rows = len(rows)
    ok = _tally(rows, report)
    _check(report, max_bad_fraction, hints)

    groups = rows.select(ok)["group"] if "group" in report.columns else None
    try:
        picked = select_subsample(len(ok), groups, subsample_spec(subsample, spec), seed)
    except ValueError as err:
        raise DataError(str(err)) from None
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
    _check(report, max_bad_fraction, hints, final=True)
    return rows, report


def open_source(source, spec: Preset | None = None, cache_dir: str | None = None,
                split: str | None = None) -> datasets.Dataset | datasets.DatasetDict:
    """The dataset at ``source`` as ``datasets`` opens it, every split; a Hub name is
    asked for ``split`` only, so the other splits are not downloaded."""
    path = Path(source).expanduser()
    try:
        if any((path / f).exists() for f in ("dataset_info.json", "dataset_dict.json")):
            return datasets.load_from_disk(str(path))
        if path.exists():  # data files or images: the packaged builders infer the format
            where, files = (path, None) if path.is_dir() else (path.parent, path.name)
            return datasets.load_dataset(str(where), data_files=files, cache_dir=cache_dir)
    except Exception as err:  # whatever the builder raises, the files are not a dataset
        detail = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
        raise DataError(f"{source} could not be read as a dataset ({type(err).__name__}: "
                        f"{detail}); point at an image folder with metadata.jsonl or "
                        "metadata.csv, a parquet/json/csv file, or a saved Dataset") from None
    if str(source).startswith((".", "/", "~")) or str(source).count("/") > 1:
        raise MissingSource(f"dataset path {source} does not exist")
    config = spec.hub_config if spec and str(source) == spec.hub else None
    try:
        return datasets.load_dataset(str(source), config, split=split, cache_dir=cache_dir)
    except Exception as err:  # the Hub or the cache said no: say what to do instead
        raise DataError(f"could not load {source!r} as a local path or Hub dataset "
                        f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
                        "; pass a local folder or file, or make the Hub copy available") from err


def splits_of(opened) -> list[str]:
    """Split names of an opened source; a bare Dataset is one split named "train"."""
    return list(opened) if isinstance(opened, datasets.DatasetDict) else ["train"]


def pick_split(opened, split: str | None, report: LoadReport,
               hints: Hints = PYTHON_HINTS) -> datasets.Dataset:
    if isinstance(opened, datasets.Dataset):
        return opened
    names = list(opened)
    split = names[0] if split is None and len(names) == 1 else split
    if split not in names:
        raise DataError(f"{report.source} has no split {split!r}: choose a split with "
                        f"{hints.split}; available: {', '.join(names)}")
    report.split = split
    return opened[split]


def _undecoded(ds: datasets.Dataset) -> datasets.Dataset:
    # Keep the encoded bytes: the first pass must not decode every image in the source.
    for name, feat in ds.features.items():
        if isinstance(feat, datasets.Image):
            ds = ds.cast_column(name, datasets.Image(decode=False))
        elif isinstance(feat, datasets.List) and isinstance(feat.feature, datasets.Image):
            ds = ds.cast_column(name, datasets.List(datasets.Image(decode=False)))
    return ds


def _resolve(ds, fields: Mapping[str, tuple[str, ...]], required, hints: Hints = PYTHON_HINTS,
             label: str = "the source") -> dict[str, str]:
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
        if set(ds.column_names) <= {"image", "label"}:  # an image folder without metadata
            raise DataError(f"{label} has images but no {', '.join(missing)}: put a "
                            "metadata.jsonl or metadata.csv next to the images with a file_name "
                            "column and one column per field (question, answer)")
        raise DataError(f"{label} has no column for {', '.join(missing)} (it has "
                        f"{', '.join(ds.column_names)}); map it with "
                        f"{' and '.join(hints.column(m) for m in missing)}")
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
        if self.metric or "metric" in self.columns:
            out["metric"] = self.metric or to_text(row.get("metric"))
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


def _check(report: LoadReport, max_bad_fraction: float, hints: Hints = PYTHON_HINTS,
           final: bool = False) -> None:
    where = f"{report.source}" + (f" [{report.split}]" if report.split else "")
    if not report.candidate_rows:
        raise DataError(f"{where} has no rows; check the source, or choose another split "
                        f"with {hints.split}")
    if report.bad_fraction > max_bad_fraction or (final and not report.kept):
        worst = max(report.skipped, key=report.skipped.get) if report.skipped else None
        raise DataError(
            f"{report.bad_fraction:.1%} of rows from {where} are malformed "
            f"({report.counts()}), above {hints.max_bad_fraction}={max_bad_fraction}; "
            f"{fix_for(worst, hints)}, or raise {hints.max_bad_fraction}")
