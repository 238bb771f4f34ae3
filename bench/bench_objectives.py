"""Cost of the policy-gradient objectives against Eq. 8 on the one update path.

Same model (embedded SmolLM2-135M, LoRA r16 on q/k/v/o), same examples (shapes questions
in the default prompt with their reference programs), the same signed weights (RLOO-like
advantages: half +1, half -1/3), same micro-batch and epochs. Each arm starts from a fresh
adapter; prints seconds per arm and the ratio to Eq. 8, measured side by side in one run.

    python bench/bench_objectives.py [--examples 32] [--batch 16] [--epochs 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.bench_update import make_pairs  # noqa: E402
from policies import DEFAULT_MODEL  # noqa: E402
from policies.lora import attach_lora  # noqa: E402
from policies.model import load_model  # noqa: E402
from train.config import LoraConfig, ObjectiveConfig, OptimConfig  # noqa: E402
from train.update import Example, run_update  # noqa: E402

ARMS = {
    "eq8 (weights clipped at 0)": None,
    "rloo (signed weights)": ObjectiveConfig(name="rloo"),
    "rloo + PPO clip 0.2": ObjectiveConfig(name="rloo", clip_eps=0.2),
    "rloo + clip + KL 0.05": ObjectiveConfig(name="rloo", clip_eps=0.2, kl_coef=0.05),
}


def run(examples, tok, objective, batch: int, epochs: int) -> tuple[float, dict]:
    from accelerate import Accelerator

    torch.manual_seed(0)
    model, _ = load_model(DEFAULT_MODEL, "float32")
    model = attach_lora(model, LoraConfig())
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-4)
    acc = Accelerator(cpu=True)
    model, opt = acc.prepare(model, opt)
    if objective is None:  # Eq. 8 as the default config runs it: negative weights are clipped to 0
        examples = [Example(e.prompt_ids, e.completion_ids, max(e.weight, 0.0)) for e in examples]
    start = time.perf_counter()
    stats = run_update(acc, model, opt, examples, OptimConfig(micro_batch_size=batch, epochs=epochs),
                       tok.pad_token_id, seed=0, progress=False, objective=objective)
    return time.perf_counter() - start, stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=1)
    args = ap.parse_args()
    _, tok = load_model(DEFAULT_MODEL, "float32")
    examples = [Example(tok(p, add_special_tokens=False)["input_ids"], tok(c, add_special_tokens=False)["input_ids"],
                        1.0 if i % 2 == 0 else -1 / 3) for i, (p, c) in enumerate(make_pairs(args.examples, tok))]
    print(f"{len(examples)} examples, micro-batch {args.batch}, {args.epochs} epoch(s), "
          f"torch threads {torch.get_num_threads()}")
    times = {}
    for name, objective in ARMS.items():
        seconds, stats = run(examples, tok, objective, args.batch, args.epochs)
        times[name] = seconds
        print(f"  {name:30s} {seconds:7.1f} s  trained {stats['loss/examples']:3d} programs  "
              f"clip fraction {stats['loss/clip_fraction']:.3f}  kl {stats['loss/kl']:.4f}")
    base = next(iter(times.values()))
    print("ratio to eq8: " + ", ".join(f"{name.split(' ')[0] if i < 2 else name}: {t / base:.2f}x"
                                       for i, (name, t) in enumerate(times.items())))


if __name__ == "__main__":
    main()
