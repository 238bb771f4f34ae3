"""Generation throughput of the embedded policy on the Hugging Face path.

Prints ratios measured side by side in one run:
  1. batched generation tokens/s against one sequence at a time;
  2. batched generation with shared-prefix KV reuse against without it;
  3. our HFGenerator against `model.generate` with a static KV cache (and with its
     default dynamic cache), same batch of rows, same sampling (temperature 1, top-p 0.9).
     `model.generate` stops a row only at EOS, ours at the end of the program, so both
     tokens/s and seconds per finished batch (what a rollout waits for) are printed.
Same prompts, same seed, same max_new_tokens for every arm.

    python bench/bench_generation.py [--questions 16] [--n 4] [--max-new-tokens 96] [--dtype bfloat16] [--device cuda]
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


def arm_generate(model, tok, prompts, n, max_new, cache_implementation=None, seed=0):
    """`transformers` generate on the same rows, left-padded, sampling as our generator does."""
    rows = [p for p in prompts for _ in range(n)]
    side = tok.padding_side
    tok.padding_side = "left"
    enc = tok(rows, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    tok.padding_side = side
    torch.manual_seed(seed)
    kwargs = {"cache_implementation": cache_implementation} if cache_implementation else {}
    start = time.perf_counter()
    with torch.no_grad():
        out = model.generate(**enc, do_sample=True, temperature=1.0, top_p=0.9, top_k=0, max_new_tokens=max_new,
                             pad_token_id=tok.pad_token_id, **kwargs)
    if model.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    new = out[:, enc["input_ids"].shape[1]:]
    stop = {tok.eos_token_id, tok.pad_token_id}
    tokens = 0
    for row in new.tolist():
        tokens += next((i for i, t in enumerate(row) if t in stop), len(row))
    return tokens / seconds, tokens, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=16)
    ap.add_argument("--n", type=int, default=4, help="programs per question")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--sequential-questions", type=int, default=4,
                    help="questions for the one-at-a-time arm (it is slow; tokens/s is what is compared)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only-static", action="store_true", help="just the HFGenerator vs model.generate arms")
    args = ap.parse_args()

    model, tok = load_model(DEFAULT_MODEL, args.dtype)
    model = model.to(args.device)
    questions = build_dataset(train=args.questions, validation=0, test=0, seed=1, progress=False)["train"]["question"]
    prompts = [VIPER_COMPACT.render(tok, q) for q in questions]
    total = len(prompts) * args.n
    print(f"model SmolLM2-135M ({args.dtype}), {len(prompts)} prompts x {args.n} programs, "
          f"prompt ~{len(tok(prompts[0])['input_ids'])} tokens, max_new_tokens {args.max_new_tokens}, "
          f"torch threads {torch.get_num_threads()}")
    arm(model, tok, prompts[:2], 1, 2, True, 8)  # warm-up
    arm_generate(model, tok, prompts[:2], 1, 8, "static")
    seq = prompts[: args.sequential_questions]
    rows = {"batched + prefix reuse": arm(model, tok, prompts, args.n, total, True, args.max_new_tokens)}
    rows["model.generate, static cache"] = arm_generate(model, tok, prompts, args.n, args.max_new_tokens, "static")
    rows["model.generate, dynamic cache"] = arm_generate(model, tok, prompts, args.n, args.max_new_tokens)
    if not args.only_static:
        rows["batched, no prefix reuse"] = arm(model, tok, prompts, args.n, total, False, args.max_new_tokens)
        rows["one sequence at a time"] = arm(model, tok, seq, args.n, 1, False, args.max_new_tokens)
    for name, (tps, tokens, seconds) in rows.items():
        print(f"  {name:30s} {tps:7.1f} tokens/s  ({tokens} tokens in {seconds:.1f} s)")
    base, base_s = rows["batched + prefix reuse"][0], rows["batched + prefix reuse"][2]
    for other in ("model.generate, static cache", "model.generate, dynamic cache"):
        print(f"ratio ours / {other}: {base / rows[other][0]:.2f}x tokens/s, "
              f"{rows[other][2] / base_s:.2f}x less time for the batch")
    if not args.only_static:
        print(f"ratio batched / one-at-a-time:        {base / rows['one sequence at a time'][0]:.2f}x")
        print(f"ratio prefix reuse / no prefix reuse: {base / rows['batched, no prefix reuse'][0]:.2f}x")


if __name__ == "__main__":
    main()
