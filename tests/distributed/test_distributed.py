"""`accelerate launch` with 2 CPU processes (gloo), and DeepSpeed ZeRO-2 on the CPU."""

import json
import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import ROOT, TINY, _env

ACCELERATE = str(Path(sys.executable).with_name("accelerate"))


def _launch(config: str, script: str, *args, timeout=600):
    cmd = [ACCELERATE, "launch", "--config_file", config, script, *args]
    return subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)


def test_ddp_update_keeps_adapters_identical_across_ranks(tmp_path):
    proc = _launch("configs/accelerate/cpu_2proc.yaml", "tests/distributed/update_worker.py", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["world"] == 2 and r["distributed"].endswith("MULTI_CPU") for r in ranks)
    # different shards, one update over both: the same global counts on each rank
    assert ranks[0]["examples"] == ranks[1]["examples"] and ranks[0]["steps"] == ranks[1]["steps"]
    assert ranks[0]["after"] == ranks[1]["after"] != ranks[0]["before"]


def test_deepspeed_zero2_runs_a_real_update_step_on_cpu(tmp_path):
    proc = _launch("configs/accelerate/zero2_cpu.yaml", "tests/distributed/update_worker.py", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (rank,) = [json.loads(p.read_text()) for p in tmp_path.glob("rank*.json")]
    assert rank["distributed"].endswith("DEEPSPEED")
    assert rank["steps"] >= 1 and rank["after"] != rank["before"]


def test_iterate_shards_questions_over_two_processes(tmp_path):
    cmd = [ACCELERATE, "launch", "--config_file", "configs/accelerate/cpu_2proc.yaml", "train/iterate.py",
           "--config", "configs/shapes_rwr_cpu.yaml", f"output_dir={tmp_path}", "run_name=ddp", "iterations=1",
           "rewards=[format]", *TINY, "questions_per_iteration=4"]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics,) = [json.loads(line) for line in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    assert metrics["rollout/samples"] == 8  # 4 questions x 2 programs, gathered from both ranks
    assert metrics["loss/steps"] >= 1
