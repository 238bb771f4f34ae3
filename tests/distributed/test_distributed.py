"""`accelerate launch` with 2 CPU processes (gloo), two "nodes" on localhost, and
DeepSpeed ZeRO-2/ZeRO-3 in one CPU process (DeepSpeed's CPU accelerator runs one
process per machine under accelerate 1.x; multi-rank ZeRO is covered in tests/gpu)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers.runs import ROOT, TINY, run_env

ACCELERATE = str(Path(sys.executable).with_name("accelerate"))
WORKER = "tests/distributed/update_worker.py"


def _launch(config: str, script: str, *args, extra=(), timeout=600):
    cmd = [ACCELERATE, "launch", "--config_file", config, *extra, script, *args]
    return subprocess.run(cmd, cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=timeout)


def _single(out: Path, *args) -> None:
    out.mkdir()
    proc = subprocess.run([sys.executable, WORKER, str(out), *args], cwd=ROOT, env=run_env(), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _adapters(out: Path) -> list[dict]:
    return [torch.load(p) for p in sorted(out.glob("adapter_rank*.pt"))]


def _close(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], rtol=1e-4, atol=1e-6) for k in a)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The reference: the 12 rollouts trained in one plain process."""
    out = tmp_path_factory.mktemp("single") / "run"
    _single(out)
    (adapter,) = _adapters(out)
    return adapter, json.loads((out / "rank0.json").read_text())


@pytest.mark.parametrize("mode", ["spread", "zero_rank"])
def test_two_processes_train_the_same_adapter_as_one(tmp_path, one_process, mode):
    """Eq. 8 with a global N and one global schedule: sharding the rollouts over 2 ranks,
    even leaving one rank only weight-0 rollouts, changes nothing (the old per-rank
    normalisation scaled such a step by 1/2)."""
    proc = _launch("configs/accelerate/cpu_2proc.yaml", WORKER, str(tmp_path), mode)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["world"] == 2 and r["distributed"].endswith("MULTI_CPU") for r in ranks)
    if mode == "zero_rank":
        assert ranks[1]["held"] > 0 and ranks[1]["held_live"] == 0
    reference, ref_stats = one_process
    a0, a1 = _adapters(tmp_path)
    assert _close(a0, a1) and _close(a0, reference)
    assert not _close(reference, {k: torch.zeros_like(v) for k, v in reference.items()})
    for key in ("loss/steps", "loss/examples", "loss/tokens", "loss/normalizer"):
        assert ranks[0][key] == ranks[1][key] == ref_stats[key], key
    assert ranks[0]["loss/mean"] == pytest.approx(ref_stats["loss/mean"], rel=1e-4)


def test_policy_gradient_objective_trains_the_same_adapter_on_two_processes(tmp_path):
    """Signed advantages, PPO's clipped ratio (anchored by a pre-pass on each rank's own
    share), a KL term to the adapter-free model and 2 epochs: still one global update."""
    single = tmp_path / "single"
    _single(single, "spread", "ppo")
    two = tmp_path / "two"
    two.mkdir()
    proc = _launch("configs/accelerate/cpu_2proc.yaml", WORKER, str(two), "spread", "ppo")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (reference,), (a0, a1) = _adapters(single), _adapters(two)
    assert _close(a0, a1) and _close(a0, reference)
    stats = [json.loads((two / f"rank{r}.json").read_text()) for r in (0, 1)]
    ref_stats = json.loads((single / "rank0.json").read_text())
    assert stats[0]["loss/kl"] == pytest.approx(ref_stats["loss/kl"], rel=1e-4) and ref_stats["loss/kl"] > 0
    assert stats[0]["loss/clip_fraction"] == pytest.approx(ref_stats["loss/clip_fraction"], abs=1e-9)


def test_two_nodes_on_localhost_match_one_process(tmp_path, one_process):
    """Two launchers (`--num_machines 2 --machine_rank 0|1`, one process each) meeting at
    a localhost rendezvous, as launch/slurm.sh starts them on two nodes."""
    common = ["--num_machines", "2", "--num_processes", "2", "--main_process_ip", "127.0.0.1",
              "--main_process_port", "29561"]
    procs = [subprocess.Popen([ACCELERATE, "launch", "--config_file", "configs/accelerate/cpu_2proc.yaml", *common,
                               "--machine_rank", str(r), WORKER, str(tmp_path)], cwd=ROOT, env=run_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(err[-2000:] for _, err in outs)
    a0, a1 = _adapters(tmp_path)
    assert _close(a0, a1) and _close(a0, one_process[0])


def test_pools_are_one_pool_on_every_rank_and_after_resume(tmp_path):
    proc = _launch("configs/accelerate/cpu_2proc.yaml", "tests/distributed/pool_worker.py", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    r0, r1 = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert r0["before"] == r1["before"] == r0["after"] == r1["after"]
    sources = {e["source_id"] for e in r0["before"]}
    assert len(r0["before"]) == 4  # capacity: 2 steps x 2 ranks x 2 correct programs, oldest evicted
    assert any(s.startswith("r0") for s in sources) and any(s.startswith("r1") for s in sources)


@pytest.mark.parametrize("config", ["configs/accelerate/zero2_cpu.yaml", "configs/accelerate/zero3_cpu.yaml"])
def test_deepspeed_update_matches_plain_training(tmp_path, one_process, config):
    """The same update under DeepSpeed (its own clipping, accumulation and fp32 master
    weights, fed from the config's "auto" values) lands on the same adapter."""
    proc = _launch(config, WORKER, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (rank,) = [json.loads(p.read_text()) for p in tmp_path.glob("rank*.json")]
    assert rank["distributed"].endswith("DEEPSPEED")
    (adapter,) = _adapters(tmp_path)
    assert _close(adapter, one_process[0])


def test_iterate_on_zero3_saves_real_adapters_and_resumes(tmp_path):
    """ZeRO-3 with every parameter partitioned: the saved adapters hold the real weights
    (not shape-(0,) slices) and load into PeftModel; resume=true continues the run."""
    from peft import PeftModel
    from safetensors.torch import load_file

    from policies.model import load_model

    run = [ACCELERATE, "launch", "--config_file", "configs/accelerate/zero3_cpu.yaml", "train/iterate.py",
           "--config", "configs/shapes_rwr_cpu.yaml", f"output_dir={tmp_path}", "run_name=z3", "rewards=[format]",
           *TINY, "questions_per_iteration=2", "eval_questions=1", "eval_counterfactuals=0", "tracking.mode=disabled"]
    first = subprocess.run(run + ["iterations=1"], cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    again = subprocess.run(run + ["iterations=2", "resume=true"], cwd=ROOT, env=run_env(), capture_output=True,
                           text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming" in again.stdout + again.stderr
    run_dir = tmp_path / "z3"
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in lines] == [0, 1] and lines[1]["loss/steps"] >= 1
    adapters = [load_file(str(run_dir / "iterations" / d / "adapter" / "adapter_model.safetensors"))
                for d in ("initial", "iter_000", "iter_001")]
    for weights in adapters:
        assert weights and all(t.numel() > 0 and t.dim() == 2 for t in weights.values())
    assert any(not torch.equal(adapters[1][k], adapters[2][k]) for k in adapters[1])
    base, _ = load_model("embedded:smollm2-135m-instruct", "float32")
    PeftModel.from_pretrained(base, str(run_dir / "best" / "adapter"))


def test_iterate_shards_questions_over_two_processes(tmp_path):
    cmd = [ACCELERATE, "launch", "--config_file", "configs/accelerate/cpu_2proc.yaml", "train/iterate.py",
           "--config", "configs/shapes_rwr_cpu.yaml", f"output_dir={tmp_path}", "run_name=ddp", "iterations=1",
           "rewards=[format]", *TINY, "questions_per_iteration=4", "tracking.mode=disabled"]
    proc = subprocess.run(cmd, cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics,) = [json.loads(line) for line in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    assert metrics["rollout/samples"] == 8  # 4 questions x 2 programs, gathered from both ranks
    assert metrics["loss/steps"] >= 1
