"""Training-loop faults, injected into real runs of train/iterate.py (tiny budgets):
a scheduler's SIGTERM and requeue through launch/slurm.sh, a full disk while saving,
and non-finite losses. Each run either continues or stops cleanly with one line, and
nothing checkpointed is lost."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.helpers.runs import ROOT, TINY, run_env

SMALL = [*TINY, "eval_questions=1", "eval_counterfactuals=0", "tracking.mode=disabled", "rewards=[format]"]


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _wait_for(predicate, proc, timeout=4000):
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if predicate():
            return True
        time.sleep(0.5)
    return False


@pytest.mark.slow
def test_sigterm_from_slurm_requeues_and_the_run_resumes(tmp_path):
    """launch/slurm.sh with stand-ins for srun/scontrol: the preemption signal reaches
    the trainer, which stops at once (the newest checkpoint whole), the script requeues
    the job, and the requeued job continues the run to the end."""
    env = run_env()
    env.update(PATH=f"{ROOT / 'tests/helpers/slurm'}:{Path(sys.executable).parent}:{env['PATH']}",
               CONFIG="configs/shapes_rwr_cpu.yaml", ACCEL_CONFIG="configs/accelerate/cpu.yaml", GPUS_PER_NODE="1",
               SLURM_NNODES="1", SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="localhost", MASTER_PORT="29571",
               SCONTROL_LOG=str(tmp_path / "scontrol.log"), SLURM_SUBMIT_DIR=str(ROOT))
    run_dir = tmp_path / "runs" / "slurm"
    args = ["bash", "launch/slurm.sh", f"output_dir={tmp_path / 'runs'}", "run_name=slurm", "iterations=3", *SMALL]
    log = open(tmp_path / "job.log", "w")
    job = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    started = _wait_for(lambda: (run_dir / "iterations" / "iter_000" / "state.json").exists()
                        and "iteration 2/3" in (tmp_path / "job.log").read_text(), job)
    assert started, (tmp_path / "job.log").read_text()[-3000:]
    t0 = time.time()
    job.send_signal(signal.SIGUSR1)  # what `#SBATCH --signal=B:USR1@120` delivers
    assert job.wait(timeout=600) == 0
    text = (tmp_path / "job.log").read_text()
    assert time.time() - t0 < 60, "the trainer did not stop promptly"
    assert "preempted: SIGTERM in iteration 1; iterations 0-0 are checkpointed" in text, text[-3000:]
    assert (tmp_path / "scontrol.log").read_text() == "requeue 4242\n"
    assert not list((run_dir / "iterations").glob("*.tmp"))

    again = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=4000)  # the requeued job
    assert again.returncode == 0, again.stderr[-3000:]
    assert [m["iteration"] for m in _metrics(run_dir)] == [0, 1, 2]
    assert (tmp_path / "scontrol.log").read_text() == "requeue 4242\n"  # finished: not requeued again


@pytest.fixture
def small_disk(tmp_path):
    """A 64 MiB tmpfs: a disk this test can fill. Needs root (CI's containers run as root)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.slow
def test_a_full_disk_stops_the_run_with_one_line_and_the_last_checkpoint_intact(tmp_path, small_disk):
    run_dir = small_disk / "full"
    cmd = [sys.executable, "train/iterate.py", "--config", "configs/shapes_rwr_cpu.yaml", f"output_dir={small_disk}",
           "run_name=full", "iterations=2", "lora.r=4", *SMALL]
    log = open(tmp_path / "run.log", "w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=run_env(), stdout=log, stderr=subprocess.PIPE, text=True)
    assert _wait_for(lambda: (run_dir / "iterations" / "iter_000" / "state.json").exists(), proc)
    before = load_file(str(run_dir / "iterations" / "iter_000" / "adapter" / "adapter_model.safetensors"))
    filler = small_disk / "filler"
    with open(filler, "wb") as f:  # fill the disk while iteration 2 rolls out
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError:
            pass
    _, err = proc.communicate(timeout=4000)
    assert proc.returncode == 1, err[-3000:]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "No space left on device" in errors[0] and "resume=true" in errors[0], err[-3000:]
    assert "Traceback" not in err
    # The previous checkpoint is as it was, and nothing half-written is left to confuse a resume.
    after = load_file(str(run_dir / "iterations" / "iter_000" / "adapter" / "adapter_model.safetensors"))
    assert before.keys() == after.keys() and all(bool((before[k] == after[k]).all()) for k in before)
    assert not (run_dir / "iterations" / "iter_001").exists() and not list((run_dir / "iterations").glob("*.tmp"))
    filler.unlink()
    again = subprocess.run(cmd + ["resume=true"], cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=4000)
    assert again.returncode == 0, again.stderr[-3000:]
    assert [m["iteration"] for m in _metrics(run_dir)] == [0, 1]


@pytest.mark.slow
def test_non_finite_losses_are_skipped_counted_and_stop_the_run_past_the_limit(run_iterate, tmp_path):
    """A reward of +inf gives an infinite weight, hence a non-finite loss: each such
    step is skipped (the adapter stays finite), counted in the metrics, and past
    optim.max_skipped_steps the run stops with one line after checkpointing."""
    proc = run_iterate("run_name=nan", "iterations=2", "eval_questions=1", "eval_counterfactuals=0",
                       "tracking.mode=disabled", "rewards=[tests.helpers.infinite:reward]", "optim.max_skipped_steps=0")
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "non-finite loss" in errors[0] and "optim.max_skipped_steps=0" in errors[0]
    run_dir = tmp_path / "runs" / "nan"
    (m,) = _metrics(run_dir)
    assert m["loss/skipped_steps"] >= 1 and m["loss/skipped_steps_total"] == m["loss/skipped_steps"]
    adapter = load_file(str(run_dir / "iterations" / "iter_000" / "adapter" / "adapter_model.safetensors"))
    initial = load_file(str(run_dir / "iterations" / "initial" / "adapter" / "adapter_model.safetensors"))
    assert all(bool((adapter[k] == initial[k]).all()) for k in adapter)  # every step was skipped: unchanged

