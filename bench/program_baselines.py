"""Fixed programs on the held-out set, measured exactly as a run measures its policy.

A trained adapter is worth what it adds over programs nobody had to learn. This runs, on a
config's held-out questions (the first `eval_questions` validation rows, the rows a run
evaluates), through the run's own evaluation (`train.heldout`: the same sandbox, metric and
counterfactual scenes for logical accuracy):

- `one_line`: `return ImagePatch(image).simple_query(<question>)`, the program issue 24
  asks the trained policy to match;
- `reference` (shapes only, an oracle: it reads the `spec` column): the generator's own
  program for each question, the ceiling of the tools;

and prints each with its 95% bootstrap interval over questions, per question family, beside
the best constant answer. With `--against RUN ...` (a run folder per seed, e.g. a
`bench/learning_curve.py` sweep) it also prints each trained arm's published adapter and its
difference from each fixed program, paired by question (and resampled over the seeds too),
which is the test of "at or above the one-line program".

    python bench/program_baselines.py --config configs/shapes_search_cpu.yaml
    python bench/program_baselines.py --config configs/shapes_search_cpu.yaml \\
        --against curves/lib4/runs/lib4-s0 curves/lib4/runs/lib4-s1 curves/lib4/runs/lib4-s2

The records go to OUT/<program>/eval/base.jsonl (`--out`, default: nothing written), in the
format `vprl report` and `bench/learning_curve.py` read. Nothing here trains; it reads labels
to score, as every evaluation does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.program_support import ONE_LINE  # noqa: E402
from train.curves import METRICS, bootstrap_mean, read_run  # noqa: E402


class FixedPrograms:
    """A generator whose every completion is a whole program chosen per prompt: the
    evaluation then runs it as it runs a policy's program."""

    def __init__(self, programs: list[str]):
        self.programs = programs

    def generate(self, prompts, n=1, **_):
        from policies.sampling import Sample

        return [Sample(i, [], [], self.programs[i]) for i in range(len(prompts)) for _ in range(n)]


def program_for(name: str, row: dict) -> str:
    if name == "one_line":
        return ONE_LINE.format(question=row["question"])
    from envs.data.programs import reference_program

    spec = row["spec"]
    return reference_program(json.loads(spec) if isinstance(spec, str) else spec)


def evaluate(name: str, rows: list[dict], cfg, executor, cache: dict) -> list[dict]:
    """One EvalRecord (as a dict) per row, for the fixed program `name`."""
    from dataclasses import asdict

    from train.heldout import question_records
    from train.rollout import collect

    programs = [program_for(name, r) for r in rows]
    rollouts = collect(rows, [""] * len(rows), FixedPrograms(programs), 1, executor, metric=cfg.data.metric,
                       progress=True, desc=name)
    records, _ = question_records(rollouts, rows, executor, cfg, cache)
    return [asdict(r) for r in records]


def evaluate_all(names, rows: list[dict], cfg) -> dict[str, list[dict]]:
    """`evaluate` for each fixed program, in one sandbox opened with the config's tools."""
    from envs.execution import Executor
    from envs.tools import open_backend

    tools = open_backend(cfg.env.backend, cfg.env.backend_kwargs)
    cache, out = {}, {}
    with Executor(timeout_s=cfg.env.timeout_s, memory_mb=cfg.env.memory_mb, workers=cfg.env.workers,
                  backend=tools.spec) as ex:
        for name in names:
            out[name] = evaluate(name, rows, cfg, ex, cache)
    tools.close()
    return out


def column(records: list[dict], metric: str) -> dict:
    return {r["id"]: np.nan if r.get(metric) is None else float(r[metric]) for r in records}


def fmt(stat) -> str:
    mean, low, high = (100 * x for x in stat)
    return f"{mean:5.1f} [{low:5.1f}, {high:5.1f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="the run's config: its data, tools and held-out questions")
    ap.add_argument("--set", nargs="*", default=[], metavar="key=value", help="config overrides, as the runs had "
                    "them (bench/learning_curve.py --set)")
    ap.add_argument("--questions", type=int, default=None, help="the first Q held-out questions (the config's "
                    "eval_questions)")
    ap.add_argument("--programs", nargs="+", default=["one_line", "reference"], choices=("one_line", "reference"))
    ap.add_argument("--against", nargs="*", default=[], metavar="RUN", help="trained runs (one per seed) whose "
                    "published adapters are compared with each fixed program, paired by question")
    ap.add_argument("--out", type=Path, default=None, help="write OUT/<program>/eval/base.jsonl")
    ap.add_argument("--replicates", type=int, default=2000)
    args = ap.parse_args(argv)

    from train.config import ConfigError, load_config
    from train.heldout import constant_baseline
    from train.setup import load_data

    try:
        cfg = load_config(args.config, args.set)
        runs = [read_run(d) for d in args.against]
    except (ConfigError, FileNotFoundError) as e:
        sys.exit(f"program_baselines: error: {e}")
    _, validation = load_data(cfg, progress=False)
    rows = list(validation)[: cfg.eval_questions if args.questions is None else args.questions]
    if not rows:
        sys.exit(f"program_baselines: error: {args.config} has no held-out questions; set --questions")
    if "reference" in args.programs and not all(r.get("spec") for r in rows):
        sys.exit("program_baselines: error: `reference` needs the shapes `spec` column; pass --programs one_line")
    if any(not r["finished"] for r in runs):
        sys.exit("program_baselines: error: a run in --against has not published an adapter (best/best.json)")

    fixed = evaluate_all(args.programs, rows, cfg)

    answer, constant = constant_baseline(rows, cfg.data.metric)
    print(f"\n{len(rows)} held-out questions of {args.config}; best constant answer {answer!r}: {100 * constant:.1f}%")
    print(f"{'':24} {'accuracy':>22} {'logical accuracy':>22}")
    for name, records in fixed.items():
        cells = [fmt(bootstrap_mean([list(column(records, m).values())], args.replicates)) for m in METRICS]
        print(f"{name + (' (oracle)' if name == 'reference' else ''):24} {cells[0]:>22} {cells[1]:>22}")
    ids = [r["id"] for r in next(iter(fixed.values()))]
    if runs:
        trained = [{m: column(run["points"][run["final"]], m) for m in METRICS} for run in runs]
        missing = [i for i in ids if any(i not in t["accuracy"] for t in trained)]
        if missing:
            sys.exit(f"program_baselines: error: the runs were not evaluated on question {missing[0]!r}; "
                     "pass the config and --questions they ran with")
        mats = {m: np.array([[t[m][i] for i in ids] for t in trained]) for m in METRICS}
        cells = [fmt(bootstrap_mean(mats[m], args.replicates)) for m in METRICS]
        print(f"{f'trained ({len(runs)} seeds)':24} {cells[0]:>22} {cells[1]:>22}")
        for name, records in fixed.items():
            cells = []
            for m in METRICS:
                values = column(records, m)
                base = np.array([values[i] for i in ids])
                cells.append(fmt(bootstrap_mean(mats[m] - base[None, :], args.replicates)))
            print(f"{'trained - ' + name:24} {cells[0]:>22} {cells[1]:>22}")

    print("\nper family (accuracy, questions right):")
    families = defaultdict(list)
    for k, r in enumerate(next(iter(fixed.values()))):
        families[r.get("family") or "-"].append(k)
    names = list(fixed) + (["trained (mean)"] if runs else [])
    print(f"{'family':20} {'n':>4} " + " ".join(f"{n:>15}" for n in names))
    for fam, ks in sorted(families.items()):
        cells = [f"{sum(fixed[n][k]['accuracy'] or 0 for k in ks):>15.0f}" for n in fixed]
        if runs:
            cells.append(f"{np.nansum(mats['accuracy'][:, ks]) / len(runs):>15.1f}")
        print(f"{fam:20} {len(ks):>4} " + " ".join(cells))

    if args.out:
        for name, records in fixed.items():
            folder = args.out / name / "eval"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "base.jsonl").write_text("".join(json.dumps(r, default=str) + "\n" for r in records))
        print(f"\nrecords: {args.out}/<program>/eval/base.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
