"""`vprl data import` and `vprl data check`: your own VQA files, in our format or checked.

    vprl data import SRC --out DIR [--columns question=prompt,answer=label] [--image-root DIR]
    vprl data check DIR [--columns ...]

``import`` reads SRC the way training reads ``data.name: files`` and writes our
canonical DatasetDict (id, image, question, answer, answers, metric; train and
validation at least) to DIR, atomically: a failure leaves DIR as it was.  ``check`` loads
what training would load and prints the load report, without training.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envs.cliargs import OneLineParser, UsageError, number


def parse_columns(values: list[str] | None) -> dict[str, str]:
    """``["question=prompt,answer=label", "image=file"]`` -> {"question": "prompt", ...}."""
    out: dict[str, str] = {}
    for value in values or []:
        for item in filter(None, (v.strip() for v in value.split(","))):
            ours, sep, theirs = item.partition("=")
            if not sep or not ours.strip() or not theirs.strip():
                raise UsageError(f"--columns {item!r}: write OUR_FIELD=THEIR_COLUMN, e.g. "
                                 "--columns question=prompt,answer=label")
            out[ours.strip()] = theirs.strip()
    return out


def _add_source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--columns", action="append", metavar="FIELD=COLUMN",
                   help="map our fields (question, answer, answers, image, id, group) to your "
                        "column names, e.g. question=prompt,answer=label (repeatable)")
    p.add_argument("--image-root", default=None, metavar="DIR",
                   help="folder that image file names are relative to (default: the source's)")
    p.add_argument("--preset", default=None, help="read a published dataset's schema "
                   "(gqa, vqav2, chartqa, ...; see envs/data/presets.py)")
    p.add_argument("--metric", default=None, help="answer metric stored with every row "
                   "(default: the preset's, the source's own metric column, else gqa_accuracy)")
    p.add_argument("--val-size", dest="val_size", type=number(int, at_least=1), default=64, metavar="N",
                   help="rows held out for validation when the source has one split, at most "
                        "a fifth of it (64, as data.validation_size)")
    p.add_argument("--seed", type=int, default=0, help="seed of that split (0, as data.seed)")
    p.add_argument("--max-bad-fraction", dest="max_bad_fraction", type=number(float, at_least=0, at_most=1),
                   default=0.05, metavar="F", help="malformed rows allowed before refusing (0.05)")


def build_parser(command: str) -> argparse.ArgumentParser:
    if command == "import":
        p = OneLineParser(prog="vprl data import", description="Convert a VQA dataset on disk "
                          "(an image folder with metadata.jsonl/.csv, a parquet/json/csv file, or "
                          "a saved Dataset/DatasetDict) into our DatasetDict: columns id, image, "
                          "question, answer, answers, metric; splits as in the source, or train "
                          "and validation by a seeded split.")
        p.add_argument("source", help="dataset folder or file")
        p.add_argument("--out", required=True, type=Path, help="output folder")
        p.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    else:
        p = OneLineParser(prog="vprl data check", description="Load a dataset exactly as "
                          "training with data.name=files would, print what was kept and "
                          "skipped, and exit 0 when it can be trained on (2 with the fix).")
        p.add_argument("source", help="dataset folder or file")
        p.add_argument("--train-split", default="train", help="data.train_split (train)")
        p.add_argument("--eval-split", default="validation", help="data.eval_split (validation)")
    _add_source_options(p)
    return p


def _load(args, want):
    from envs.data.files import CLI_HINTS, load_splits
    from envs.data.hf import DataError

    if not Path(args.source).expanduser().exists():
        raise UsageError(f"{args.source} does not exist; pass a dataset folder or file")
    try:
        return load_splits(args.source, want, columns=parse_columns(args.columns),
                           image_root=args.image_root, metric=args.metric, preset=args.preset,
                           seed=args.seed, eval_size=args.val_size,
                           max_bad_fraction=args.max_bad_fraction, hints=CLI_HINTS,
                           **({"train_split": args.train_split, "eval_split": args.eval_split}
                              if want else {}))
    except (DataError, ValueError) as err:
        raise UsageError(str(err).strip().splitlines()[0]) from None


def main(argv: list[str] | None = None, command: str = "import") -> int:
    prog = f"vprl data {command}"
    try:
        args = build_parser(command).parse_args(argv)
        if command == "import":
            from envs.data.cli import check_out, save_atomically

            out = args.out.expanduser().resolve()
            check_out(out, args.overwrite)
            loaded = _load(args, None)
        else:
            loaded = _load(args, (args.train_split, args.eval_split))
    except UsageError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    except SystemExit as err:  # --help
        return int(err.code or 0)
    for line in loaded.lines():
        print(line)
    counts = ", ".join(f"{name} {len(ds)}" for name, ds in loaded.rows.items())
    if command == "import":
        import datasets

        out.parent.mkdir(parents=True, exist_ok=True)
        save_atomically(datasets.DatasetDict(loaded.rows), out)
        print(f"wrote {counts} questions to {out} (metric {loaded.metric}); train on it with "
              f"data.name=files data.path={out}")
    else:
        print(f"ok: {counts} questions (metric {loaded.metric}); train with: "
              + " ".join(_overrides(args)))
    return 0


def _overrides(args) -> list[str]:
    """The config overrides that make training read the source as this check did."""
    out = ["data.name=files", f"data.path={args.source}"]
    out += [f"data.columns.{k}={v}" for k, v in parse_columns(args.columns).items()]
    for key, value, default in (("image_root", args.image_root, None),
                                ("metric", args.metric, None),
                                ("train_split", args.train_split, "train"),
                                ("eval_split", args.eval_split, "validation"),
                                ("validation_size", args.val_size, 64), ("seed", args.seed, 0),
                                ("max_bad_fraction", args.max_bad_fraction, 0.05)):
        if value != default:
            out.append(f"data.{key}={value}")
    return out

