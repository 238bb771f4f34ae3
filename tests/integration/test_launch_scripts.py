"""The launch scripts end to end: launch/local.sh fits the machine and keeps arguments
whole, launch/slurm.sh passes them unsplit to every node and refuses what a node cannot
run, launch/gpu_check.sh refuses a machine without CUDA, and the trainer started directly
refuses a GPU-only setting before loading anything. (The logic they share, train/launch.py
and train/machine.py, has its unit tests in tests/unit/test_launch.py.)

Mock boundaries (this machine has no GPU and no SLURM): `nvidia-smi` is a stand-in
listing FAKE_GPUS devices (tests/helpers/gpu), srun/scontrol are the stand-ins of
tests/helpers/slurm, and `accelerate` is replaced by a recorder of its arguments
(tests/helpers/recorder) where only what the scripts hand to it is under test.
"""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.runs import HELPERS, ROOT, fake_gpu_env

CPU_CONFIG = "configs/shapes_rwr_cpu.yaml"
SPLIT_ME = "rewards=[correctness, parse]"


def _run(cmd, timeout=120, **env):
    return subprocess.run(cmd, cwd=ROOT, env=fake_gpu_env(**env), capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("gpus,expected", [("0", "cpu.yaml --num_processes 1"), ("2", "multi_gpu.yaml --num_processes 2")])
def test_local_sh_launches_on_what_the_machine_has_and_keeps_arguments_whole(gpus, expected):
    proc = _run(["bash", "launch/local.sh", "--print-command", SPLIT_ME, "iterations=1"], FAKE_GPUS=gpus)
    assert proc.returncode == 0, proc.stderr
    cmd = shlex.split(proc.stdout.strip().splitlines()[-1])
    assert " ".join(cmd).split("configs/accelerate/", 1)[1].startswith(expected)
    assert cmd[-2:] == [SPLIT_ME, "iterations=1"] and cmd[cmd.index("--config") + 1] == CPU_CONFIG


def test_local_sh_refuses_vllm_on_a_cpu_machine_before_anything_starts():
    proc = _run(["bash", "launch/local.sh", "generation.backend=vllm"], FAKE_GPUS="0")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == ("error: generation.backend=vllm needs a CUDA GPU and this machine "
                                                    "has none; use generation.backend=hf on CPUs")
    proc = _run(["bash", "launch/local.sh", "--print-command"], FAKE_GPUS="0", ZERO="2")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "error: configs/accelerate/zero2.yaml runs DeepSpeed over 8 processes, which needs a CUDA GPU each")


def _slurm(tmp_path, *args, **env):
    log = tmp_path / "accelerate.log"
    env = dict(PATH=f"{HELPERS / 'recorder'}:{HELPERS / 'slurm'}:{HELPERS / 'gpu'}:{Path(sys.executable).parent}:"
                    f"{os.environ['PATH']}", CONFIG=CPU_CONFIG, SLURM_NNODES="2", SLURM_JOB_ID="7",
               SLURM_JOB_NODELIST="localhost", SLURM_SUBMIT_DIR=str(ROOT), SCONTROL_LOG=str(tmp_path / "scontrol.log"),
               ACCELERATE_LOG=str(log), **env)
    proc = _run(["bash", "launch/slurm.sh", *args], timeout=300, **env)
    return proc, [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_slurm_sh_passes_every_argument_whole_to_each_node(tmp_path):
    """A stand-in accelerate records what one node's task would run."""
    proc, calls = _slurm(tmp_path, SPLIT_ME, "run_name=a b", FAKE_GPUS="4", ACCEL_CONFIG="configs/accelerate/cpu.yaml")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (argv,) = calls
    assert argv[-3:] == [SPLIT_ME, "run_name=a b", "resume=true"]
    opts = dict(zip(argv[1:13:2], argv[2:13:2]))
    assert opts == {"--config_file": "configs/accelerate/cpu.yaml", "--num_machines": "2", "--machine_rank": "0",
                    "--main_process_ip": "localhost", "--main_process_port": "29500", "--num_processes": "8"}


def test_slurm_sh_refuses_a_node_without_gpus_and_a_config_it_cannot_run(tmp_path):
    proc, calls = _slurm(tmp_path, FAKE_GPUS="0")
    assert proc.returncode == 2 and not calls
    assert proc.stderr.strip().splitlines()[-1].startswith("slurm.sh: error: no GPU on ")
    proc, calls = _slurm(tmp_path, "lora.init=base", FAKE_GPUS="4", ZERO="3")
    assert proc.returncode == 2 and not calls  # refused once, before srun starts anything
    assert proc.stderr.strip().splitlines()[-1] == ("error: lora.init=base is not supported under DeepSpeed; "
                                                    "use lora.init=continue")


def test_gpu_check_refuses_a_machine_without_cuda_in_one_line():
    proc = _run(["bash", "launch/gpu_check.sh"], PYTHON=sys.executable)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"error: no CUDA device visible to {sys.executable}; run this on a GPU machine"


def test_iterate_refuses_vllm_without_a_gpu_before_loading_anything(tmp_path):
    """The trainer started directly (no launcher): one line, exit 2, no run folder."""
    proc = _run([sys.executable, "train/iterate.py", "--config", CPU_CONFIG, "generation.backend=vllm",
                 f"output_dir={tmp_path}"], FAKE_GPUS="0")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == ("error: generation.backend=vllm needs a CUDA GPU and this machine has none; "
                                   "use generation.backend=hf on CPUs")
    assert not list(tmp_path.iterdir())
