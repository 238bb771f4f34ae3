"""`vprl export RUN --out DIR [--merge] [--push-to-hub REPO]`: a trained policy for others.

    vprl export runs/my-run --merge --out my-model      # AutoModelForCausalLM.from_pretrained("my-model")
    vprl export runs/my-run --out my-adapter            # the LoRA adapter and a model card

RUN is a run folder (its best adapter, or the latest iteration of an unfinished run) or
an adapter folder. Exit 0 on success, 2 for bad input, 1 when the push itself fails.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envs.cliargs import OneLineParser, UsageError


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="vprl export", description="Export a trained policy: the LoRA adapter "
                      "with a model card naming its real base model and the run's metrics, or "
                      "(--merge) the base model with the adapter merged in, loadable with "
                      "transformers alone. Optionally push it to the Hugging Face Hub.")
    p.add_argument("run", help="run folder (runs/NAME) or adapter folder")
    p.add_argument("--out", required=True, help="output folder (replaced atomically)")
    p.add_argument("--merge", action="store_true", help="merge the adapter into the base weights")
    p.add_argument("--model", default=None, help="base model (default: the one the adapter records)")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                   help="weights of a merged model (float32)")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    p.add_argument("--push-to-hub", dest="push_to_hub", metavar="REPO", default=None,
                   help="also upload to this Hub model repo (needs a token and network)")
    p.add_argument("--private", action="store_true", help="create the Hub repo as private")
    return p


def main(argv: list[str] | None = None) -> int:
    from envs.data.cli import check_out
    from policies.adapters import AdapterError
    from policies.export import ExportError, export, push
    from policies.model import ModelError

    try:
        args = build_parser().parse_args(argv)
        check_out(Path(args.out).expanduser(), args.overwrite)
        out = export(args.run, args.out, merge=args.merge, model=args.model, dtype=args.dtype)
        print(f"wrote {'the merged model' if args.merge else 'the adapter'} and a model card to {out}")
        if args.push_to_hub:
            print(f"pushed to {push(out, args.push_to_hub, args.private)}")
    except (UsageError, ExportError, AdapterError, ModelError) as err:
        print(f"vprl export: error: {err}", file=sys.stderr)
        return 2
    except ConnectionError as err:
        print(f"vprl export: error: {err}", file=sys.stderr)
        return 1
    except SystemExit as err:  # --help
        return int(err.code or 0)
    return 0
