"""The GPU recipes, checked on a CPU machine: each README command of "Real runs on GPUs"
runs as written in its dry-run form (`--dry-run` appended; `sbatch --nodes=N
--gpus-per-node=G launch/slurm.sh` run directly with the SLURM_NNODES and GPUS_PER_NODE
sbatch would give), from a folder holding the repository's launch/ and configs/ and a
tiny GQA copy at the recipes' data.path.

Mock boundary: the Hub models the recipes name (Qwen2.5-Coder 1.5B and 7B, OWLv2, BLIP-2,
CLIP) cannot be downloaded here; tiny random models of the same architectures stand in
for them in a Hugging Face cache (tests/helpers/standins.py), so names, presets, backends,
precision and the accelerate/DeepSpeed files are checked for real. The machine has no GPU
(VPRL_GPUS=0 makes that so on any machine), so what needs one must be named as skipped.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.standins import hub_cache
from tests.helpers.runs import ROOT, run_env
from tests.integration.test_readme import blocks

STANDINS = {"Qwen/Qwen2.5-Coder-1.5B-Instruct": "qwen2", "Qwen/Qwen2.5-Coder-7B-Instruct": "qwen2",
            "google/owlv2-base-patch16-ensemble": "owlv2", "Salesforce/blip2-flan-t5-xl": "blip-2",
            "openai/clip-vit-base-patch32": "clip"}
ASSIGN = re.compile(r"[A-Z_][A-Z0-9_]*=.*")


def recipe_commands() -> list[str]:
    return [line for block in blocks("bash", "Real runs on GPUs") for line in block.splitlines()
            if "launch/" in line.split("#")[0]]


def dry_run_form(line: str) -> tuple[dict, list[str]]:
    """(environment, argv) of a README command in its dry-run form."""
    words = shlex.split(line, comments=True)
    env = {}
    while ASSIGN.fullmatch(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    if words[0] == "sbatch":
        script = next(i for i, w in enumerate(words) if w.endswith("slurm.sh"))
        opts = dict(w[2:].split("=", 1) for w in words[1:script])
        env.update(SLURM_NNODES=opts["nodes"], GPUS_PER_NODE=opts["gpus-per-node"])
        words = words[script:]
    return env, ["bash", *words, "--dry-run"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """launch/ and configs/ of the repository beside a tiny GQA copy (as a user's checkout with data)."""
    from tests.helpers.vqa_files import gqa_fixture

    work = tmp_path_factory.mktemp("checkout")
    for name in ("launch", "configs"):
        (work / name).symlink_to(ROOT / name)
    gqa = work / "data" / "gqa"
    gqa.mkdir(parents=True)
    gqa_fixture(gqa, per_type=(14, 14, 14)).rename(gqa / "train_balanced_questions.parquet")
    return work


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return hub_cache(tmp_path_factory.mktemp("hf-cache"), STANDINS)


def _run(workspace, line, cache):
    env, argv = dry_run_form(line)
    full = {**run_env(), **env, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "VPRL_GPUS": "0",
            "PYTHONPATH": str(ROOT), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(argv, cwd=workspace, env=full, capture_output=True, text=True, timeout=900)


def test_the_readme_has_one_command_per_recipe():
    lines = recipe_commands()
    configs = [dry_run_form(line)[0].get("CONFIG") for line in lines]
    assert configs == ["configs/gqa_rwr_1gpu.yaml", "configs/gqa_rwr_8gpu.yaml", "configs/gqa_rwr_multinode.yaml"]


@pytest.mark.parametrize("index,accelerate,generation", [
    (0, "configs/accelerate/gpu_1.yaml: one process, 1 process(es)", "hf"),
    (1, "configs/accelerate/zero2.yaml: DeepSpeed ZeRO-2 (configs/deepspeed/zero2.json), 8 process(es)", "vllm"),
    (2, "configs/accelerate/zero3.yaml: DeepSpeed ZeRO-3 (configs/deepspeed/zero3.json), 32 process(es)", "vllm"),
])
def test_each_recipe_command_passes_its_dry_run_here(workspace, cache, index, accelerate, generation):
    line = recipe_commands()[index]
    proc = _run(workspace, line, cache)
    out = proc.stdout
    assert proc.returncode == 0, (line, proc.stderr[-3000:], out)
    assert "Traceback" not in proc.stderr + out
    launch = next(x for x in out.splitlines() if x.startswith("launch: "))
    assert launch.startswith(f"launch: {accelerate}") and ("bf16 on" in launch or "mixed_precision bf16" in launch)
    assert f"generation: {generation}; tools: hf; prompt: viper_full" in out
    model = next(x for x in out.splitlines() if x.startswith("model: "))
    assert "Qwen/Qwen2.5-Coder-" in model and "bfloat16" in model  # the stand-in loaded, in bf16, with LoRA
    assert re.search(r"^data: \d+ train rows, \d+ validation rows$", out, re.M)
    skipped = [x for x in out.splitlines() if x.startswith("skipped: ")]
    assert not [x for x in skipped if x.startswith(("skipped: model", "skipped: data", "skipped: tools"))]
    assert "skipped: machine: env.backend_kwargs.device=cuda needs a CUDA GPU" in out
    if generation == "vllm":
        assert "skipped: machine: generation.backend=vllm needs a CUDA GPU" in out
        assert "which needs a CUDA GPU each and this machine has none" in out  # DeepSpeed over many processes
    assert out.strip().splitlines()[-1].startswith("dry run: nothing written")
    assert not (workspace / "runs").exists()


def test_a_recipe_without_its_downloads_names_each_as_skipped(workspace, tmp_path):
    """A laptop before the first download: no models in the cache, no GQA copy."""
    (tmp_path / "launch").symlink_to(ROOT / "launch")
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    proc = _run(tmp_path, recipe_commands()[1], tmp_path / "empty-cache")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    out = proc.stdout
    assert "skipped: model: model 'Qwen/Qwen2.5-Coder-7B-Instruct' is not in the local Hugging Face cache" in out
    assert "skipped: tools: hf backend: the detector model 'google/owlv2-base-patch16-ensemble'" in out
    assert "skipped: data: data.path 'data/gqa/train_balanced_questions.parquet' does not exist" in out
