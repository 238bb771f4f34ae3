"""Generation throughput of the embedded policy on the Hugging Face path.

Prints two ratios measured side by side in one run:
  1. batched generation tokens/s against one sequence at a time;
  2. batched generation with shared-prefix KV reuse against without it.
Same prompts, same seed, same max_new_tokens for every arm.

    python bench/bench_generation.py [--questions 16] [--n 4] [--max-new-tokens 96] [--dtype bfloat16]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from envs.data.shapes import build_dataset  # noqa: E402
from envs.prompts import VIPER_COMPACT  # noqa: E402
from policies import DEFAULT_MODEL  # noqa: E402
from policies.generation import GenerationConfig, HFGenerator  # noqa: E402
from policies.model import load_model  # noqa: E402


def arm(model, tok, prompts, n, batch_size, prefix_cache, max_new, seed=0):
    cfg = GenerationConfig(batch_size=batch_size, prefix_cache=prefix_cache, max_new_tokens=max_new)
    gen = HFGenerator(model, tok, cfg, seed=seed)
    start = time.perf_counter()
    samples = gen.generate(prompts, n=n)
    seconds = time.perf_counter() - start
    tokens = sum(len(s.completion_ids) for s in samples)
    return tokens / seconds, tokens, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=16)
    ap.add_argument("--n", type=int, default=4, help="programs per question")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--sequential-questions", type=int, default=4,
                    help="questions for the one-at-a-time arm (it is slow; tokens/s is what is compared)")
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()

    model, tok = load_model(DEFAULT_MODEL, args.dtype)
    questions = build_dataset(train=args.questions, validation=0, test=0, seed=1, progress=False)["train"]["question"]
    prompts = [VIPER_COMPACT.render(tok, q) for q in questions]
    total = len(prompts) * args.n
    print(f"model SmolLM2-135M ({args.dtype}), {len(prompts)} prompts x {args.n} programs, "
          f"prompt ~{len(tok(prompts[0])['input_ids'])} tokens, max_new_tokens {args.max_new_tokens}, "
          f"torch threads {torch.get_num_threads()}")
    arm(model, tok, prompts[:2], 1, 2, True, 8)  # warm-up
    seq = prompts[: args.sequential_questions]
    rows = {
        "batched + prefix reuse": arm(model, tok, prompts, args.n, total, True, args.max_new_tokens),
        "batched, no prefix reuse": arm(model, tok, prompts, args.n, total, False, args.max_new_tokens),
        "one sequence at a time": arm(model, tok, seq, args.n, 1, False, args.max_new_tokens),
    }
    for name, (tps, tokens, seconds) in rows.items():
        print(f"  {name:28s} {tps:7.1f} tokens/s  ({tokens} tokens in {seconds:.1f} s)")
    base = rows["batched + prefix reuse"][0]
    print(f"ratio batched / one-at-a-time:        {base / rows['one sequence at a time'][0]:.2f}x")
    print(f"ratio prefix reuse / no prefix reuse: {base / rows['batched, no prefix reuse'][0]:.2f}x")


if __name__ == "__main__":
    main()
