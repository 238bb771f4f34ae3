"""Learning curves: held-out accuracy and logical accuracy per iteration, over seeds.

Runs each arm (a config, optionally with overrides) for N iterations with each seed,
through `train/iterate.py`, then writes a Markdown table, a PNG plot and the numbers as
JSON. Every point is the mean over seeds and held-out questions with a 95% bootstrap
interval that resamples both; the first point is the starting policy (before any
update), and `final` is the adapter each run published (early stopping may keep an
earlier one). Gains are paired differences from the base point, with their own interval.

    python bench/learning_curve.py configs/shapes_rwr_cpu.yaml --iterations 3 --seeds 0 1 2 --out curves/rwr
    python bench/learning_curve.py --arm "lr1e-3=configs/shapes_rwr_cpu.yaml optim.lr=1e-3" \\
        --arm "lr2e-4=configs/shapes_rwr_cpu.yaml" --iterations 2 --seeds 0 --eval-questions 96 --out curves/lr \\
        --against lr2e-4

With `--against LABEL` (an ablation), every other arm is also compared with that arm:
the difference of its published adapters (`final`) and of its last iteration, paired by
seed and question, with its own bootstrap interval.

Runs go to OUT/runs/<arm>-s<seed>/ and their logs to OUT/logs/. A run that is already
complete is reused, a partial one resumed, so an interrupted sweep continues where it
stopped (delete OUT/runs/<run> to redo one). Seeds change the training randomness
(question order, sampling, LoRA init); the data and the held-out questions stay fixed
(data.seed), so seeds are compared on the same questions. The machine's load moves the
times; CPU seconds are reported beside wall time for that reason.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from train.curves import BASE, METRICS, curve, read_run, versus  # noqa: E402

LABELS = {"accuracy": "held-out accuracy", "logical_accuracy": "logical accuracy (counterfactual scenes)"}


class UsageError(Exception):
    pass


def parse_arm(text: str) -> tuple[str, str, list[str]]:
    """'LABEL=CONFIG key=value ...' or 'CONFIG key=value ...' (label: the config's stem)."""
    words = shlex.split(text)
    if not words:
        raise UsageError("an empty --arm; write LABEL=CONFIG [key=value ...]")
    head, overrides = words[0], words[1:]
    label, sep, config = head.partition("=")
    if not sep or label.endswith((".yaml", ".yml")) or "/" in label:
        label, config = Path(head).stem, head
    if not Path(config).is_file():
        raise UsageError(f"arm {label!r}: config {config!r} does not exist")
    bad = [o for o in overrides if "=" not in o]
    if bad:
        raise UsageError(f"arm {label!r}: overrides must look like key=value, got {bad[0]!r}")
    if not label.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise UsageError(f"arm label {label!r}: use letters, digits, '-', '_' or '.'")
    return label, config, overrides


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench/learning_curve.py",
        description=__doc__.split("\n\n")[0] + " Writes OUT/curve.md, OUT/curve.png and OUT/curve.json.",
        epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("configs", nargs="*", help="config files, one arm each (label: the file's stem)")
    p.add_argument("--arm", action="append", default=[], metavar="'LABEL=CONFIG [key=value ...]'",
                   help="an arm with its own overrides; repeat for several")
    p.add_argument("--iterations", type=int, required=True, help="policy iterations per run (N)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (S runs per arm)")
    p.add_argument("--out", type=Path, required=True, help="folder for runs, logs, table, plot")
    p.add_argument("--eval-questions", type=int, default=None,
                   help="held-out questions (sets eval_questions and, if smaller, data.validation_size); "
                        "default: each config's own. Screen with fewer, claim with the full set")
    p.add_argument("--set", nargs="*", default=[], metavar="key=value",
                   help="overrides for every arm (an arm's own override of the same key wins)")
    p.add_argument("--no-run", action="store_true", help="only read existing runs and write the outputs")
    p.add_argument("--wandb", action="store_true", help="keep W&B tracking (offline) on; default: disabled")
    p.add_argument("--replicates", type=int, default=2000, help="bootstrap replicates (default 2000)")
    p.add_argument("--title", default=None, help="plot title")
    p.add_argument("--against", default=None, metavar="LABEL",
                   help="compare every other arm with this one, paired by seed and question (an ablation table)")
    return p


def run_one(label, config, overrides, seed, args) -> dict:
    """Train one (arm, seed) unless its run is complete; returns its timing."""
    name = f"{label}-s{seed}"
    runs, logs = args.out / "runs", args.out / "logs"
    run_dir = runs / name
    done_file = run_dir / "best" / "best.json"
    if done_file.exists() or args.no_run:
        timing = run_dir / "timing.json"
        return json.loads(timing.read_text()) if timing.exists() else {}
    logs.mkdir(parents=True, exist_ok=True)
    extra = list(args.set)
    if args.eval_questions is not None:
        extra += [f"eval_questions={args.eval_questions}"]
    # An arm's own overrides come last, so they win over --set's for the same key.
    cmd = [sys.executable, str(ROOT / "train" / "iterate.py"), "--config", config, *extra, *overrides,
           f"seed={seed}", f"iterations={args.iterations}", f"run_name={name}", f"output_dir={runs}"]
    if not args.wandb:
        cmd.append("tracking.mode=disabled")
    if (run_dir / "iterations").is_dir():
        cmd.append("resume=true")
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {' '.join(cmd[2:])}", flush=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    with open(logs / f"{name}.log", "a") as log:
        code = subprocess.call(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    timing = {"wall_s": time.time() - t0,
              "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
              "load_1min_after": os.getloadavg()[0]}
    if code != 0:
        raise RuntimeError(f"{name} failed (exit {code}); see {logs / f'{name}.log'}")
    if run_dir.is_dir():
        (run_dir / "timing.json").write_text(json.dumps(timing))
    print(f"[{time.strftime('%H:%M:%S')}] {name}: done in {timing['wall_s']:.0f}s wall, "
          f"{timing['cpu_s']:.0f}s CPU", flush=True)
    return timing


def iteration_times(run_dir: Path) -> dict:
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()] \
        if (run_dir / "metrics.jsonl").exists() else []
    if not lines:
        return {}
    mean = lambda k: sum(m.get(k) or 0.0 for m in lines) / len(lines)  # noqa: E731
    return {"iteration_s": mean("time/iteration"), "eval_s": mean("time/eval"),
            "eval_share": mean("time/eval_share"), "weighted_samples": mean("rollout/weighted_samples"),
            "label_free": lines[-1].get("reward/label_free"), "iterations": len(lines),
            "constant": lines[-1].get("eval/constant_answer_accuracy"),
            # pass@1 at the training temperature, on each iteration's own training questions
            "sampled": [m.get("rollout/accuracy") for m in lines]}


def fmt(cell, pct: bool = True) -> str:
    if cell is None:
        return "-"
    m, lo, hi = (100 * x for x in cell) if pct else cell
    return f"{m:.1f} [{lo:.1f}, {hi:.1f}]"


def table(results: dict) -> str:
    lines = []
    for label, res in results.items():
        info = res["info"]
        lines.append(f"**{label}**: {res['config']} {' '.join(res['overrides'])}".rstrip() +
                     f" — {len(res['seeds'])} seed(s) {res['seeds']}, {res['questions']} held-out questions; "
                     f"labels: {'none (label-free)' if info.get('label_free') == 1.0 else 'read'}; "
                     f"best constant answer {100 * info['constant']:.1f}%" if info.get("constant") is not None else "")
        lines.append("")
        lines.append("| point | seeds | accuracy % | logical accuracy % | accuracy gain (pts) | logical gain (pts) |")
        lines.append("|---|---|---|---|---|---|")
        for row in res["curve"]:
            lines.append(f"| {row['point']} | {row.get('seeds', '-')} | {fmt(row.get('accuracy'))} | "
                         f"{fmt(row.get('logical_accuracy'))} | {fmt(row.get('accuracy_gain'))} | "
                         f"{fmt(row.get('logical_accuracy_gain'))} |")
        t = res["timing"]
        if t:
            lines.append("")
            lines.append(f"Per run: {t['wall_s'] / 60:.1f} min wall, {t['cpu_s'] / 60:.1f} min CPU (mean over seeds); "
                         f"per iteration {info.get('iteration_s', 0):.0f} s, of which held-out evaluation "
                         f"{100 * info.get('eval_share', 0):.0f}%; {info.get('weighted_samples', 0):.1f} "
                         f"weighted samples per iteration.")
        if info.get("sampled"):
            lines.append(f"Sampled accuracy by iteration (pass@1 at the training temperature on that iteration's "
                         f"training questions, mean over seeds): "
                         + " → ".join("-" if v is None else f"{100 * v:.1f}%" for v in info["sampled"]) + ".")
        lines.append("")
    against = [(label, res["versus"]) for label, res in results.items() if res.get("versus")]
    if against:
        ref = against[0][1]["reference"]
        lines.append(f"**Against {ref}** (difference in points, paired by seed and question; `final`: the "
                     f"published adapters, `last`: the last iteration's)")
        lines.append("")
        lines.append("| arm | seeds | accuracy, final | logical, final | accuracy, last | logical, last |")
        lines.append("|---|---|---|---|---|---|")
        for label, v in against:
            f, last = v.get("final", {}), v.get("last", {})
            lines.append(f"| {label} | {f.get('seeds', last.get('seeds', 0))} | {fmt(f.get('accuracy'))} | "
                         f"{fmt(f.get('logical_accuracy'))} | {fmt(last.get('accuracy'))} | "
                         f"{fmt(last.get('logical_accuracy'))} |")
        lines.append("")
    lines.append("Mean over seeds and questions; [95% bootstrap interval resampling seeds and questions]. "
                 "`base`: the starting policy; `final`: the adapter each run published; `seeds`: the runs a point "
                 "is measured on (a run that has not finished counts only at the points it reached).")
    return "\n".join(lines) + "\n"


def iteration_of(point: str) -> int:
    """The 1-based iteration a curve point measures ("base": 0; "iter_NNN" names the 0-based
    adapter folder), so points of a run evaluated every k iterations sit where they belong."""
    return 0 if point == "base" else int(point.rsplit("_", 1)[1]) + 1


def plot(results: dict, path: Path, title: str | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    for ax, metric in zip(axes, METRICS):
        for label, res in results.items():
            rows = [r for r in res["curve"] if r["point"] != "final" and metric in r]
            if not rows:
                continue
            xs = [iteration_of(r["point"]) for r in rows]
            mean = [100 * r[metric][0] for r in rows]
            lo = [100 * r[metric][1] for r in rows]
            hi = [100 * r[metric][2] for r in rows]
            line, = ax.plot(xs, mean, marker="o", label=f"{label} ({len(res['seeds'])} seeds)")
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15)
        constants = {res["info"].get("constant") for res in results.values()} - {None}
        if metric == "accuracy" and len(constants) == 1:
            ax.axhline(100 * constants.pop(), color="gray", linestyle="--", linewidth=1, label="best constant answer")
        ax.set_xlabel("iteration (0 = starting policy)")
        ax.xaxis.get_major_locator().set_params(integer=True)  # no "iteration 0.25"
        ax.set_ylabel(f"{LABELS[metric]} %")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title or "held-out accuracy per iteration, mean and 95% bootstrap interval over seeds and questions",
                 fontsize=10)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)
    plt.close(fig)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        arms = [parse_arm(c) for c in args.configs] + [parse_arm(a) for a in args.arm]
        if not arms:
            raise UsageError("give at least one config or --arm")
        labels = [a[0] for a in arms]
        if len(set(labels)) != len(labels):
            raise UsageError(f"two arms share a label ({labels}); name them with --arm LABEL=CONFIG")
        if args.iterations < 1 or not args.seeds:
            raise UsageError("--iterations must be >= 1 and --seeds non-empty")
        if args.eval_questions is not None and args.eval_questions < 1:
            raise UsageError("--eval-questions must be >= 1")
        if args.against is not None and args.against not in labels:
            raise UsageError(f"--against {args.against!r} is not one of the arms {labels}")
    except UsageError as e:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for label, config, overrides in arms:
        timings = []
        for seed in args.seeds:
            try:
                timings.append(run_one(label, config, overrides, seed, args))
            except RuntimeError as e:
                print(f"error: {e}", file=sys.stderr)
                return 1
        run_dirs = [args.out / "runs" / f"{label}-s{s}" for s in args.seeds]
        present = [d for d in run_dirs if (d / "eval").is_dir()]
        if not present:
            print(f"error: arm {label}: no runs with held-out records under {args.out / 'runs'}", file=sys.stderr)
            return 1
        points = curve(present, replicates=args.replicates)
        infos = [iteration_times(d) for d in present]
        info = {k: sum(i.get(k) or 0.0 for i in infos) / len(infos) for k in ("iteration_s", "eval_s", "eval_share",
                                                                              "weighted_samples")}
        info.update(label_free=infos[0].get("label_free"), constant=infos[0].get("constant"))
        per_iteration = [[i["sampled"][t] for i in infos if t < len(i.get("sampled", [])) and i["sampled"][t] is not None]
                         for t in range(max(len(i.get("sampled", [])) for i in infos))]
        info["sampled"] = [sum(v) / len(v) if v else None for v in per_iteration]
        timings = [t for t in timings if t]
        timing = {k: sum(t[k] for t in timings) / len(timings) for k in ("wall_s", "cpu_s")} if timings else {}
        first = read_run(present[0])["points"]
        results[label] = {"config": config, "overrides": overrides + list(args.set),
                          "seeds": [int(d.name.rsplit("-s", 1)[1]) for d in present], "curve": points, "info": info,
                          "timing": timing, "questions": len(first.get(BASE) or next(iter(first.values())))}
    if args.against is not None:
        ref = results[args.against]
        for label, res in results.items():
            seeds = [s for s in res["seeds"] if s in ref["seeds"]]
            if label == args.against or not seeds:
                continue
            mine = [args.out / "runs" / f"{label}-s{s}" for s in seeds]
            theirs = [args.out / "runs" / f"{args.against}-s{s}" for s in seeds]
            res["versus"] = {"reference": args.against,
                             "final": versus(mine, theirs, "final", args.replicates),
                             "last": versus(mine, theirs, f"iter_{args.iterations - 1:03d}", args.replicates)}
    (args.out / "curve.json").write_text(json.dumps(results, indent=1))
    text = table(results)
    (args.out / "curve.md").write_text(text)
    plot(results, args.out / "curve.png", args.title)
    print(text)
    print(f"wrote {args.out / 'curve.md'}, {args.out / 'curve.png'}, {args.out / 'curve.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
