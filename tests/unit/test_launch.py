"""The launch logic (train/launch.py, train/machine.py): GPU detection, the accelerate file
each machine gets, refusals of settings the machine cannot run, missing optional packages,
precision agreement, the recipes' files, and the start-up check on every rank. The scripts
themselves run end to end in tests/integration/test_launch_scripts.py.

Mock boundary (this machine has no GPU): `nvidia-smi` is a stand-in listing FAKE_GPUS
devices (tests/helpers/gpu); `packages=` stands in for vLLM and DeepSpeed being installed.
"""

import json
import os
import sys
from pathlib import Path

import pytest

from tests.helpers.runs import ROOT, fake_gpu_env
from train import machine
from train.config import load_config
from train.launch import pick

CPU_CONFIG = "configs/shapes_rwr_cpu.yaml"
SPLIT_ME = "rewards=[correctness, parse]"

# -------------------------------------------------------------------- detection


def test_gpus_are_counted_by_nvidia_smi_within_the_visible_devices_or_forced():
    env = fake_gpu_env(FAKE_GPUS="4")
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


# -------------------------------------------------------------------- the GPU checks


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


def test_each_rank_opens_its_tools_on_its_own_gpu(monkeypatch):
    """`env.backend_kwargs.device: cuda` in the recipes: rank k's tool models go to cuda:k
    (torch.device only names the GPU here; nothing is loaded)."""
    from envs.tools.hf_backend import HFBackend

    monkeypatch.setenv("LOCAL_RANK", "3")
    assert str(HFBackend(device="cuda").device) == "cuda:3"
    assert str(HFBackend(device="cuda:1").device) == "cuda:1"  # an explicit index stays
    monkeypatch.delenv("LOCAL_RANK")
    assert str(HFBackend(device="cuda").device) == "cuda"
