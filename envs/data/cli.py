"""`vprl data shapes`: write the synthetic shapes VQA DatasetDict to disk, atomically."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envs.cliargs import OneLineParser, UsageError, number

PROG = "vprl data shapes"


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog=PROG, description="Generate the synthetic shapes VQA dataset "
                "(a datasets.DatasetDict loadable with datasets.load_from_disk).")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--train", type=number(int, at_least=0), default=1000, help="train questions (1000)")
    p.add_argument("--val", "--validation", dest="val", type=number(int, at_least=0), default=200,
                   help="validation questions (200)")
    p.add_argument("--test", type=number(int, at_least=0), default=200, help="test questions (200)")
    p.add_argument("--seed", type=int, default=0, help="random seed (0)")
    p.add_argument("--overlap", action="store_true", help="let objects overlap")
    p.add_argument("--clutter", type=number(float, at_least=0, at_most=1), default=0.0,
                   help="distractor strokes, specks and noise, 0..1 (0)")
    p.add_argument("--families", default=None,
                   help="comma-separated question families (default: all)")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def check_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise UsageError(f"--out {out} is not empty; pass --overwrite to replace it")


def write(args) -> Path:
    import datasets

    from envs.data.shapes import FAMILIES, build_dataset

    families = None
    if args.families:
        families = [f.strip() for f in args.families.split(",") if f.strip()]
        bad = sorted(set(families) - set(FAMILIES))
        if bad:
            raise UsageError(f"unknown families {bad}; known: {', '.join(FAMILIES)}")
    out = args.out.resolve()
    check_out(out, args.overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    quiet = args.no_progress and datasets.is_progress_bar_enabled()
    if quiet:
        datasets.disable_progress_bars()
    try:
        dd = build_dataset(train=args.train, validation=args.val, test=args.test,
                           seed=args.seed, overlap=args.overlap, clutter=args.clutter,
                           families=families, progress=not args.no_progress)
        save_atomically(dd, out)
    finally:
        if quiet:
            datasets.enable_progress_bars()
    return out


def save_atomically(dd, out: Path) -> None:
    """Save a DatasetDict to ``out`` whole or not at all (envs.atomic.replace_folder)."""
    from envs.atomic import replace_folder

    # One shard per split: an empty split saved with the default sharding cannot be loaded back.
    replace_folder(out, lambda tmp: dd.save_to_disk(str(tmp), num_shards={name: 1 for name in dd}))


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        out = write(args)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:  # --help
        return int(e.code or 0)
    n = args.train + args.val + args.test
    print(f"wrote {n} questions to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
