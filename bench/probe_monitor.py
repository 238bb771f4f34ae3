"""What early stopping on a fixed probe batch would have published, for finished runs.

The trainer's default monitor (`early_stopping.monitor: reward/mean`, the paper's) scores
adapter t-1 by the mean reward of iteration t's rollouts: new questions each time, so it
also moves with how hard the batch was. `probe/reward` rolls out one fixed batch of
training questions with one sampling seed after every update (and once before the first).
The probe samples with the generator's own seeded stream and admits nothing to the pools,
so under a stateless reward such as correctness a probe run trains the same adapters as
its reward-monitor twin (bench/README, "Learning that shows, closed"); only the choice of
`best/` and the point where early stopping ends the run differ.

This scores each saved adapter of a run (`iterations/initial`, `iter_000`, ...) with the
trainer's own probe (`train.sampling.mean_reward`, purpose "probe", the shots of the next
iteration), replays `train.early_stopping.EarlyStopper` over those scores, and prints what
the probe monitor would have published beside what the run published. Held-out accuracy
comes from the run's own `eval/` records; an adapter without them is named, with the
`vprl eval` command that measures it. No held-out label is read to choose anything.

    python bench/probe_monitor.py --runs curves/sp8s2/runs/attr1024-s2 curves/sp8s0/runs/attr1024-s0 \\
        curves/sp8s1c/runs/attr1024-s1 --out curves/probe_monitor_c.json

Scores are cached in `--out` per run, probe size and adapter, so an interrupted sweep resumes.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def probe_scores(run_dir: Path, probe_questions: int, cached: dict) -> dict[int, float]:
    """Adapter (-1: initial) -> its probe reward, as the trainer computes it after each update."""
    import rewards
    from envs.execution import Executor
    from envs.tools import open_backend
    from policies.generation import make_generator
    from policies.lora import attach_lora, load_lora_weights
    from envs.prompts import get_family
    from policies.model import load_model
    from train import checkpoint as ckpt
    from train.config import load_config
    from train.sampling import Loop, mean_reward, questions
    from train.selfplay import SelfPlay
    from train.setup import load_data, make_accelerator

    cfg = load_config(run_dir / "config.yaml")
    adapters = [-1] + ckpt.completed_iterations(run_dir)
    todo = [k for k in adapters if str(k) not in cached]
    if todo:
        accelerator = make_accelerator()
        train_rows, _ = load_data(cfg, progress=False)
        model, tokenizer = load_model(cfg.model, cfg.dtype)
        policy = attach_lora(model, cfg.lora)
        generator = make_generator(cfg.generation, policy, tokenizer, model=cfg.model, seed=cfg.seed,
                                   stop=get_family(cfg.env.prompt).stop, max_lora_rank=cfg.lora.r, dtype=cfg.dtype)
        reward_set = rewards.RewardSet(cfg.rewards, failure_limit=cfg.reward_failure_limit,
                                       context={"run_dir": str(run_dir)})
        selfplay = SelfPlay(cfg.selfplay, cfg.env.prompt, cfg.data.metric, run_dir=run_dir, seed=cfg.data.seed)
        with closing(open_backend(cfg.env.backend, cfg.env.backend_kwargs, tool_host=cfg.env.tool_host)) as tools, \
                closing(Executor(timeout_s=cfg.env.timeout_s, memory_mb=cfg.env.memory_mb, workers=cfg.env.workers,
                                 backend=tools.spec)) as executor:
            loop = Loop(cfg, accelerator, tokenizer, generator, executor, reward_set, selfplay, train_rows, [])
            batch = questions(loop, "probe", probe_questions)
            for k in todo:
                load_lora_weights(policy, ckpt.adapter_dir(run_dir, k))
                generator.load_adapter()
                # After update k the trainer probes with the shots iteration k + 1 will see.
                cached[str(k)] = mean_reward(loop, batch, k + 1, "probe")
                print(f"{run_dir.name}: adapter {k}: probe reward {cached[str(k)]:.3f}", flush=True)
    return {int(k): v for k, v in cached.items()}


def replay(scores: dict[int, float], patience: int, min_delta: float, enabled: bool) -> tuple[int, int | None]:
    """(the adapter the probe monitor publishes, the iteration after which it stops or None)."""
    from train.early_stopping import EarlyStopper

    stopper = EarlyStopper(patience, min_delta, enabled)
    stopper.update(scores[-1], -1)
    for k in sorted(k for k in scores if k >= 0):
        if stopper.update(scores[k], k):
            return stopper.best_policy, k
    return stopper.best_policy, None


def held_out(points: dict, k: int) -> float | None:
    """Held-out accuracy (%) of adapter k from a run's own records (`train.curves.read_run`'s
    points), if it was evaluated."""
    from train.curves import BASE
    from train.heldout import point_name

    rows = points.get(BASE if k < 0 else point_name(k))
    return 100 * sum(r["accuracy"] for r in rows) / len(rows) if rows else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", nargs="+", type=Path, required=True, help="finished run folders (runs/<name>)")
    ap.add_argument("--out", type=Path, required=True, help="JSON of probe scores (read back: resumes)")
    ap.add_argument("--probe-questions", type=int, default=None,
                    help="probe batch size (default: the run config's early_stopping.probe_questions)")
    args = ap.parse_args(argv)
    from train import checkpoint as ckpt
    from train.config import load_config
    from train.curves import read_run

    def size(run_dir: Path) -> int:
        return args.probe_questions or load_config(run_dir / "config.yaml").early_stopping.probe_questions

    def key(run_dir: Path) -> str:  # scores of another probe size are other scores
        return f"{run_dir} probe={size(run_dir)}"

    saved = json.loads(args.out.read_text()) if args.out.is_file() else {}
    for run_dir in args.runs:
        if not (run_dir / "config.yaml").is_file():
            sys.exit(f"probe_monitor: error: {run_dir} has no config.yaml; pass a run folder (runs/<name>)")
        saved[key(run_dir)] = cache = saved.get(key(run_dir), {})
        probe_scores(run_dir, size(run_dir), cache)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(saved, indent=1))
        tmp.replace(args.out)

    print("\n| run | probe reward by adapter (initial, 1, 2, ...) | published (reward monitor) | probe monitor: "
          "published, stops after | held-out %: reward monitor's / probe monitor's |")
    print("|---|---|---|---|---|")
    for run_dir in args.runs:
        cfg = load_config(run_dir / "config.yaml")
        scores = {int(k): v for k, v in saved[key(run_dir)].items()}
        best = json.loads((run_dir / "best" / "best.json").read_text())["iteration"] \
            if (run_dir / "best" / "best.json").is_file() else None
        chosen, stop = replay(scores, cfg.early_stopping.patience, cfg.early_stopping.min_delta,
                              cfg.early_stopping.enabled)
        points = read_run(run_dir)["points"]
        acc = [held_out(points, k) if k is not None else None for k in (best, chosen)]
        shown = ["-" if a is None else f"{a:.1f}" for a in acc]
        print(f"| {run_dir.name} | {', '.join(f'{scores[k]:.3f}' for k in sorted(scores))} | "
              f"{'-' if best is None else best + 1} | {chosen + 1}, {'-' if stop is None else stop + 1} | "
              f"{shown[0]} / {shown[1]} |")
        if acc[1] is None and chosen >= 0:
            print(f"  (not evaluated: `vprl eval --adapter {ckpt.adapter_dir(run_dir, chosen)} --temperature 0 "
                  "--data <the held-out set>` measures it)")
    print("\nIterations count from 1 (adapter k is iteration k's); 0 is the starting policy.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
