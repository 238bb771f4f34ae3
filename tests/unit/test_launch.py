"""Launching on the machine at hand: GPU detection, the accelerate file each machine gets,
arguments passed unsplit through launch/local.sh and launch/slurm.sh, refusals of settings
the machine cannot run, and missing optional packages.

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

from train import machine
from train.config import load_config
from train.launch import pick

ROOT = Path(__file__).resolve().parents[2]
HELPERS = ROOT / "tests" / "helpers"
CPU_CONFIG = "configs/shapes_rwr_cpu.yaml"
SPLIT_ME = "rewards=[correctness, parse]"


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("VPRL_GPUS", "CUDA_VISIBLE_DEVICES")}
    env["PATH"] = f"{HELPERS / 'gpu'}:{Path(sys.executable).parent}:{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _run(cmd, timeout=120, **env):
    return subprocess.run(cmd, cwd=ROOT, env=_env(**env), capture_output=True, text=True, timeout=timeout)


# -------------------------------------------------------------------- detection


def test_gpus_are_counted_by_nvidia_smi_within_the_visible_devices_or_forced():
    env = _env(FAKE_GPUS="4")
    assert machine.gpu_count(env) == 4
    assert machine.gpu_count({**env, "CUDA_VISIBLE_DEVICES": "1,3"}) == 2
    assert machine.gpu_count({**env, "CUDA_VISIBLE_DEVICES": ""}) == 0
    assert machine.gpu_count({**env, "VPRL_GPUS": "1"}) == 1
    with pytest.raises(machine.ConfigError, match="VPRL_GPUS='two' must be a number"):
        machine.gpu_count({**env, "VPRL_GPUS": "two"})
    no_smi = {"PATH": str(Path(sys.executable).parent)}  # no nvidia-smi: torch's count (a CPU build: 0)
    assert machine.gpu_count(no_smi) == 0


def test_each_machine_gets_its_accelerate_file():
    assert pick(0) == ("configs/accelerate/cpu.yaml", 1)
    assert pick(1) == ("configs/accelerate/gpu_1.yaml", 1)
    assert pick(8) == ("configs/accelerate/multi_gpu.yaml", 8)
    assert pick(8, zero=2) == ("configs/accelerate/zero2.yaml", 8)
    assert pick(1, zero=3) == ("configs/accelerate/zero3.yaml", 1)


@pytest.mark.parametrize("gpus,expected", [("0", "cpu.yaml --num_processes 1"), ("2", "multi_gpu.yaml --num_processes 2")])
def test_local_sh_launches_on_what_the_machine_has_and_keeps_arguments_whole(gpus, expected):
    proc = _run(["bash", "launch/local.sh", "--print-command", SPLIT_ME, "iterations=1"], FAKE_GPUS=gpus)
    assert proc.returncode == 0, proc.stderr
    cmd = shlex.split(proc.stdout.strip().splitlines()[-1])
    assert " ".join(cmd).split("configs/accelerate/", 1)[1].startswith(expected)
    assert cmd[-2:] == [SPLIT_ME, "iterations=1"] and cmd[cmd.index("--config") + 1] == CPU_CONFIG


def test_the_gpu_configs_never_train_on_the_cpu_and_agree_on_bf16():
    for name in ("gpu_1", "multi_gpu"):
        launch = machine.read_launch(ROOT / f"configs/accelerate/{name}.yaml")
        assert not launch.use_cpu and launch.mixed_precision == "bf16"
    cpu = machine.read_launch(ROOT / "configs/accelerate/cpu.yaml")
    assert cpu.use_cpu


# -------------------------------------------------------------------- refusals


def _cfg(*overrides):
    return load_config(ROOT / CPU_CONFIG, list(overrides))


def _launch(name, n=None):
    cwd = os.getcwd()
    os.chdir(ROOT)  # the accelerate files name their DeepSpeed JSON relative to the repository
    try:
        return machine.read_launch(f"configs/accelerate/{name}.yaml", n)
    finally:
        os.chdir(cwd)


def _kinds(found):
    return [(p.kind, p.text) for p in found]


def test_gpu_only_settings_on_a_cpu_machine_are_refused_in_one_line():
    found = machine.problems(_cfg("generation.backend=vllm", "dtype=bfloat16", "env.backend_kwargs={device: cuda}"),
                             _launch("zero2"), gpus=0, packages=lambda name: True)
    kinds = [p.kind for p in found]
    assert kinds.count("machine") == 3 and "note" in kinds  # vllm, DeepSpeed x 8, tools on cuda; bf16 on a CPU
    assert all("\n" not in p.text for p in found)
    assert any(p.text.startswith("generation.backend=vllm needs a CUDA GPU") for p in found)
    # one process of DeepSpeed on the CPU is how the tests exercise it: allowed
    assert machine.problems(_cfg(), _launch("zero2_cpu"), gpus=0, packages=lambda name: True) == []
    assert machine.problems(_cfg(), _launch("gpu_1"), gpus=0, packages=lambda n: True)[0].text.startswith(
        "configs/accelerate/gpu_1.yaml sets mixed_precision=bf16, meant for GPUs")


def test_a_cpu_launch_file_on_a_gpu_machine_is_said_not_refused():
    (found,) = machine.problems(_cfg(), _launch("cpu"), gpus=8)
    assert found.kind == "note" and not found.refused and "trains on the CPU although the machine has 8 GPU(s)" in found.text


def test_missing_optional_packages_name_the_install_command():
    found = machine.problems(_cfg("generation.backend=vllm", "dtype=bfloat16"), _launch("zero2"), gpus=8,
                             packages=lambda name: False)
    texts = [p.text for p in found if p.kind == "package"]
    assert texts == ["generation.backend=vllm needs vLLM, which is not installed: make venv-gpu (or pip install -e "
                     "'.[gpu]')", "configs/accelerate/zero2.yaml uses DeepSpeed, which is not installed: make venv-gpu "
                     "(or pip install -e '.[gpu]')"]


def test_precision_must_agree_across_dtype_accelerate_and_deepspeed(tmp_path):
    ok = machine.problems(_cfg("dtype=bfloat16"), _launch("zero3"), gpus=8, packages=lambda n: True)
    assert ok == [] and machine.precision_line(_cfg("dtype=bfloat16"), _launch("zero3")).endswith("DeepSpeed bf16 on")
    assert machine.precision_line(_cfg(), _launch("zero3")).endswith("DeepSpeed bf16 off")  # float32 stays float32
    ds = json.loads((ROOT / "configs/deepspeed/zero2.json").read_text())
    ds["bf16"]["enabled"] = False
    (tmp_path / "ds.json").write_text(json.dumps(ds))
    (tmp_path / "accel.yaml").write_text((ROOT / "configs/accelerate/zero2.yaml").read_text().replace(
        "configs/deepspeed/zero2.json", str(tmp_path / "ds.json")))
    found = machine.problems(_cfg("dtype=bfloat16"), machine.read_launch(tmp_path / "accel.yaml"), gpus=8,
                             packages=lambda n: True)
    assert [p.kind for p in found] == ["precision"] and "leaves bf16 off, so DeepSpeed would train in float32" in found[0].text
    found = machine.problems(_cfg("lora.init=base"), _launch("zero2"), gpus=8, packages=lambda n: True)
    assert [p.text for p in found] == ["lora.init=base is not supported under DeepSpeed; use lora.init=continue"]


def test_a_broken_launch_file_is_one_line(tmp_path):
    (tmp_path / "a.yaml").write_text("distributed_type: 'NO'\nnum_processes: 1\nnum_gpus: 2\n")
    with pytest.raises(machine.ConfigError, match=r"unknown keys \(\['num_gpus'\]\)"):
        machine.read_launch(tmp_path / "a.yaml")
    with pytest.raises(machine.ConfigError, match="does not exist; pick one in configs/accelerate/"):
        machine.read_launch(tmp_path / "nope.yaml")


def test_local_sh_refuses_vllm_on_a_cpu_machine_before_anything_starts():
    proc = _run(["bash", "launch/local.sh", "generation.backend=vllm"], FAKE_GPUS="0")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == ("error: generation.backend=vllm needs a CUDA GPU and this machine "
                                                    "has none; use generation.backend=hf on CPUs")
    proc = _run(["bash", "launch/local.sh", "--print-command"], FAKE_GPUS="0", ZERO="2")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "error: configs/accelerate/zero2.yaml runs DeepSpeed over 8 processes, which needs a CUDA GPU each")


# -------------------------------------------------------------------- slurm.sh


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


# -------------------------------------------------------------------- the recipes' files

RECIPES = {"configs/gqa_rwr_1gpu.yaml": ("gpu_1", 1), "configs/gqa_rwr_8gpu.yaml": ("zero2", 8),
           "configs/gqa_rwr_multinode.yaml": ("zero3", 32)}


@pytest.mark.parametrize("path", sorted(RECIPES))
def test_gpu_recipes_are_bf16_end_to_end_and_fit_a_gpu_machine(path):
    """Each recipe's config with the launch file its README command uses: bf16 in all three
    places, nothing refused on a machine with the GPUs and the gpu extra installed."""
    accel, procs = RECIPES[path]
    cfg = load_config(ROOT / path)
    assert Path(path).stem.count("_") == 2 and Path(path).stem.split("_")[2] in ("1gpu", "8gpu", "multinode")
    assert cfg.dtype == "bfloat16" and "/" in cfg.model and cfg.model.startswith("Qwen/Qwen2.5-Coder-")
    assert (cfg.data.name, cfg.env.backend, cfg.env.backend_kwargs["device"]) == ("gqa", "hf", "cuda")
    launch = _launch(accel, procs)
    assert machine.problems(cfg, launch, gpus=8, packages=lambda n: True) == []
    assert machine.precision_line(cfg, launch) in ("bfloat16 weights; DeepSpeed bf16 on",
                                                   "bfloat16 weights; mixed_precision bf16")
    if cfg.generation.backend == "vllm":
        assert cfg.generation.max_model_len and 0 < cfg.generation.gpu_memory_utilization < 0.5


# -------------------------------------------------------------------- gpu_check.sh


def test_gpu_check_refuses_a_machine_without_cuda_in_one_line():
    proc = _run(["bash", "launch/gpu_check.sh"], PYTHON=sys.executable)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"error: no CUDA device visible to {sys.executable}; run this on a GPU machine"


def test_gpu_checks_name_what_a_bare_machine_lacks():
    from tests.gpu import checks

    with pytest.raises(checks.Skip, match=r"^not installed here: no_such_pkg_x \(make venv-gpu installs them\)$"):
        checks.need("torch", "no_such_pkg_x")
    names = [c.__name__ for c in checks.CHECKS]
    assert len(set(names)) == len(names) and names.index("vllm_trains_two_iterations_and_resumes") > names.index(
        "decode_vs_static_cache")  # the quick checks first: a spent budget cuts the long ones


def test_at_start_up_every_rank_refuses_and_rank_0_alone_says_why(capsys):
    """What train/iterate.py runs after the config checks, under an 8-process DeepSpeed launch."""
    env = {"PATH": os.environ["PATH"], "VPRL_GPUS": "0", "WORLD_SIZE": "8", "ACCELERATE_USE_DEEPSPEED": "true",
           "ACCELERATE_DEEPSPEED_CONFIG_FILE": str(ROOT / "configs/deepspeed/zero2.json")}
    cfg = _cfg("dtype=bfloat16")
    with pytest.raises(machine.ConfigError, match="runs DeepSpeed over 8 processes, which needs a CUDA GPU each"):
        machine.check_start(cfg, env={**env, "RANK": "0"})
    with pytest.raises(SystemExit):
        machine.check_start(cfg, env={**env, "RANK": "3"})
    assert capsys.readouterr().out.count("note: dtype=bfloat16 without a GPU") == 1


def test_iterate_refuses_vllm_without_a_gpu_before_loading_anything(tmp_path):
    """The trainer started directly (no launcher): one line, exit 2, no run folder."""
    proc = _run([sys.executable, "train/iterate.py", "--config", CPU_CONFIG, "generation.backend=vllm",
                 f"output_dir={tmp_path}"], FAKE_GPUS="0")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == ("error: generation.backend=vllm needs a CUDA GPU and this machine has none; "
                                   "use generation.backend=hf on CPUs")
    assert not list(tmp_path.iterdir())


def test_each_rank_opens_its_tools_on_its_own_gpu(monkeypatch):
    """`env.backend_kwargs.device: cuda` in the recipes: rank k's tool models go to cuda:k
    (torch.device only names the GPU here; nothing is loaded)."""
    from envs.tools.hf_backend import HFBackend

    monkeypatch.setenv("LOCAL_RANK", "3")
    assert str(HFBackend(device="cuda").device) == "cuda:3"
    assert str(HFBackend(device="cuda:1").device) == "cuda:1"  # an explicit index stays
    monkeypatch.delenv("LOCAL_RANK")
    assert str(HFBackend(device="cuda").device) == "cuda"
