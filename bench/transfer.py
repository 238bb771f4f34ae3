"""Transfer: the starting policy against trained adapters on questions no run trained on.

Issue 24 asks that on question wordings and datasets a run did not train on, the trained
adapter do no worse than the starting policy. This measures it with `vprl eval`, run as
a user runs it, on:

- `original`: the config's held-out questions as the runs evaluated them (the yardstick);
- `reworded`: the same questions in other words (`envs.data.rewording`: the same images,
  specs and answers; shapes data only);
- each `--data` folder or file (any dataset `vprl eval --data` reads, e.g. one you
  imported with `vprl data import`), its `--split`.

For the starting policy (no adapter) and each run's published adapter (`best/adapter`)
it prints accuracy and logical accuracy with 95% bootstrap intervals, and trained minus
start paired by question (resampled over the seeds too), overall and per question family,
beside the one-line program `simple_query(<question>)` (what the tools answer alone).
Programs come from the model, prompt (without shots: the prompt a run starts with), tools,
metric and decoding of the config's held-out evaluation (greedy: `vprl eval --temperature 0`).

    python bench/transfer.py --config configs/shapes_search_cpu.yaml \\
        --runs curves/lib4/runs/lib4-s0 curves/lib4/runs/lib4-s1 curves/lib4/runs/lib4-s2 --out curves/transfer

Each evaluation is saved as OUT/<set>/<policy>.json (`vprl eval --out`), and one already
there is read back, so an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from train.curves import METRICS, bootstrap_mean  # noqa: E402

START = "start"


def write_sets(cfg, questions: int | None, out: Path) -> list[tuple[str, str, str]]:
    """The config's first held-out questions as they are and reworded, each a `save_to_disk`
    folder (written once): (name, folder, split) per set."""
    import datasets

    from envs.data.cli import save_atomically
    from envs.data.rewording import reworded
    from envs.data.shapes import features
    from train.setup import load_data

    sets = [(name, str(out / name / "data"), "validation") for name in ("original", "reworded")]
    if all(Path(folder).is_dir() for _, folder, _ in sets):
        return sets
    _, validation = load_data(cfg, progress=False)
    rows = [validation[i] for i in range(min(len(validation), questions or cfg.eval_questions or len(validation)))]
    if not rows or not all(r.get("spec") for r in rows):
        raise ValueError(f"{cfg.data.name}: rewording needs shapes questions (a `spec` column); pass --data "
                         "and --no-reworded for other data")
    rows = [{k: r[k] for k in features()} for r in rows]
    for (name, folder, _), version in zip(sets, (rows, reworded(rows, seed=cfg.data.seed))):
        save_atomically(datasets.DatasetDict({"validation": datasets.Dataset.from_list(version, features=features())}),
                        Path(folder))
    return sets


def evaluate(cfg, data: str, split: str, adapter: Path | None, out: Path, questions: int | None) -> list[dict]:
    """`vprl eval`'s per-question choices for one policy on one set (cached in `out`), with
    the model, prompt, tools, metric and decoding the runs' held-out evaluation had."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "train.cli", "eval", "--data", data, "--split", split, "--out", str(out),
               "--temperature", str(cfg.generation.eval_temperature), "--prompt", cfg.env.prompt,
               "--max-new-tokens", str(cfg.generation.max_new_tokens), "--metric", cfg.data.metric,
               "--counterfactuals", str(cfg.eval_counterfactuals), "--backend", cfg.env.backend]
        cmd += [a for k, v in cfg.env.backend_kwargs.items() for a in ("--backend-arg", f"{k}={v}")]
        cmd += ["--adapter", str(adapter)] if adapter else ["--model", cfg.model]
        cmd += ["--questions", str(questions)] if questions else []
        print(f"$ vprl {' '.join(cmd[3:])}", flush=True)
        proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"vprl eval failed on {data} ({adapter or 'no adapter'}): "
                               f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(out.read_text())["choices"]


def one_line(cfg, data: str, split: str, questions: int | None, out: Path) -> list[dict]:
    """The one-line program `simple_query(<question>)` on one set (cached in `out`): how much
    of a set the tools answer alone, in whatever words it is asked."""
    if not out.exists():
        from bench.program_baselines import evaluate_all
        from train.eval_cli import load_rows

        records = evaluate_all(["one_line"], load_rows(data, split, questions, metric=cfg.data.metric), cfg)["one_line"]
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")  # an interrupted sweep must not read half a file back
        tmp.write_text(json.dumps({"choices": records}, default=str))
        tmp.replace(out)
    return json.loads(out.read_text())["choices"]


def fmt(stat) -> str:
    mean, low, high = (100 * x for x in stat)
    return f"{mean:5.1f} [{low:5.1f}, {high:5.1f}]"


def values(choices: list[dict], metric: str, order: list | None) -> np.ndarray:
    """One value per question, in `order` (the questions' ids; None: as listed, for a set without ids)."""
    if order is None:
        order, keyed = list(range(len(choices))), dict(enumerate(choices))
    else:
        keyed = {c["id"]: c for c in choices}
    got = [keyed[key].get(metric) for key in order]
    return np.array([np.nan if v is None else float(v) for v in got])


def report(name: str, start: list[dict], trained: list[list[dict]], line: list[dict], replicates: int) -> None:
    print(f"\n{name}: {len(start)} questions; the starting policy and {len(trained)} trained adapter(s)")
    print(f"{'':18} {'accuracy':>22} {'logical accuracy':>22}")
    order = [c.get("id") for c in start]
    order = None if None in order else order
    base = {m: values(start, m, order) for m in METRICS}
    mats = {m: np.array([values(t, m, order) for t in trained]) for m in METRICS}
    fixed = {m: values(line, m, order) for m in METRICS}
    rows = [("start", [base[m][None, :] for m in METRICS]), ("trained", [mats[m] for m in METRICS]),
            ("trained - start", [mats[m] - base[m][None, :] for m in METRICS]),
            ("one line", [fixed[m][None, :] for m in METRICS])]
    for label, cells in rows:
        print(f"{label:18} " + " ".join(f"{fmt(bootstrap_mean(c, replicates)) if np.isfinite(c).any() else '-':>22}"
                                        for c in cells))
    families = defaultdict(list)
    for k, c in enumerate(start):
        families[c.get("family") or "-"].append(k)
    if len(families) > 1:
        print("per family (accuracy: questions right; trained: mean of the adapters)")
        print(f"{'family':18} {'n':>4} {'start':>8} {'trained':>8} {'one line':>9}")
        for fam, ks in sorted(families.items()):
            print(f"{fam:18} {len(ks):>4} {np.nansum(base['accuracy'][ks]):>8.0f} "
                  f"{np.nansum(mats['accuracy'][:, ks]) / len(trained):>8.1f} {np.nansum(fixed['accuracy'][ks]):>9.0f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="the runs' config: its held-out questions are reworded")
    ap.add_argument("--set", nargs="*", default=[], metavar="key=value", help="config overrides, as the runs had them")
    ap.add_argument("--runs", nargs="+", required=True, metavar="RUN", help="trained runs (one per seed), each "
                    "with a published adapter (best/adapter)")
    ap.add_argument("--data", action="append", default=[], metavar="PATH", help="another dataset to evaluate on "
                    "(repeatable), read as `vprl eval --data` reads it")
    ap.add_argument("--split", default="validation", help="the split of each --data (validation)")
    ap.add_argument("--no-reworded", dest="reworded", action="store_false", help="skip the config's held-out "
                    "questions, original and reworded")
    ap.add_argument("--questions", type=int, default=None, help="the first Q questions of each set "
                    "(reworded: the config's eval_questions)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the reworded data and the evaluations")
    ap.add_argument("--replicates", type=int, default=2000)
    args = ap.parse_args(argv)

    from train.config import ConfigError, load_config

    runs = [Path(r) for r in args.runs]
    missing = [r for r in runs if not (r / "best" / "adapter").is_dir()]
    if missing:
        sys.exit(f"transfer: error: {missing[0]} has not published an adapter (best/adapter); finish or resume it")
    if not args.reworded and not args.data:
        sys.exit("transfer: error: nothing to evaluate: pass --data, or drop --no-reworded")
    sets = []
    try:
        cfg = load_config(args.config, args.set)
        if args.reworded:
            sets += write_sets(cfg, args.questions, args.out)
        sets += [(Path(d).name or "data", d, args.split) for d in args.data]
        for name, data, split in sets:
            start = evaluate(cfg, data, split, None, args.out / name / f"{START}.json", args.questions)
            trained = [evaluate(cfg, data, split, run / "best" / "adapter", args.out / name / f"run{i}-{run.name}.json",
                                args.questions) for i, run in enumerate(runs)]
            line = one_line(cfg, data, split, args.questions, args.out / name / "one_line.json")
            report(name, start, trained, line, args.replicates)
    except (ConfigError, ValueError, RuntimeError) as e:
        sys.exit(f"transfer: error: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
