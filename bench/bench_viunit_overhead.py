"""Cost of the ViUniT reward: one training iteration with `viunit` against one with
`correctness`, both run by `train/iterate.py` from the same config in this one script,
interleaved (correctness, viunit, correctness, viunit, ...) so load drifts hit both.

    python bench/bench_viunit_overhead.py [--repeats 1] [--test-source scene|llm] [--questions 32]

Prints each run's `time/iteration` (rollout + rewards + update + eval) and the ratio of
the means; the paper's ratio is about 3 (90 vs 30 minutes per epoch, Appendix F.4.1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def one_iteration(reward: str, test_source: str, questions: int, out: Path, tag: str) -> dict:
    overrides = [f"output_dir={out}", f"run_name={tag}", "iterations=1", f"questions_per_iteration={questions}",
                 "tracking.mode=disabled"]
    # Each test source has its own config since 61c53b8 (scene: the oracle one; llm: the
    # label-free one); the copy pins the source so a config edit cannot swap what is timed.
    name = {"scene": "shapes_viunit_oracle_cpu.yaml", "llm": "shapes_viunit_cpu.yaml"}[test_source]
    config = ROOT / "configs" / (name if reward == "viunit" else "shapes_rwr_cpu.yaml")
    if reward == "viunit":  # list entries take no dotted overrides: edit a copy
        spec = yaml.safe_load(config.read_text())
        spec["rewards"][0]["kwargs"]["test_source"] = test_source
        config = out / f"{tag}.yaml"
        config.write_text(yaml.safe_dump(spec))
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    subprocess.run([sys.executable, str(ROOT / "train" / "iterate.py"), "--config", str(config), *overrides],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    line = (out / tag / "metrics.jsonl").read_text().splitlines()[-1]
    return json.loads(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--test-source", dest="test_source", default="scene", choices=("scene", "llm"))
    ap.add_argument("--questions", type=int, default=32)
    args = ap.parse_args()
    times = {"correctness": [], "viunit": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for reward in ("correctness", "viunit"):
                m = one_iteration(reward, args.test_source, args.questions, Path(tmp), f"{reward}-{r}")
                times[reward].append(m["time/iteration"])
                print(f"{reward:12s} run {r}: iteration {m['time/iteration']:.1f}s  rollout {m['time/rollout']:.1f}s  "
                      f"update {m['time/update']:.1f}s  eval {m['time/eval']:.1f}s  "
                      f"weighted samples {m['rollout/weighted_samples']}", flush=True)
    mean = {k: sum(v) / len(v) for k, v in times.items()}
    print(f"\nviunit ({args.test_source} tests) / correctness iteration time: "
          f"{mean['viunit'] / mean['correctness']:.2f}x  ({mean['viunit']:.1f}s vs {mean['correctness']:.1f}s; "
          f"target <= 1.25, paper ~3)")


if __name__ == "__main__":
    main()
