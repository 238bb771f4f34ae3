"""Update throughput: our reward-weighted LoRA loop against `trl.SFTTrainer`.

Same model (embedded SmolLM2-135M, LoRA r16 on q/k/v/o), same examples (shapes
questions in the default prompt, each with its reference program), all weights 1,
same micro-batch, one epoch. Prints tokens/s of each and the ratio, measured in one run.

    python bench/bench_update.py [--examples 32] [--batch 16]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from envs.data.programs import reference_program  # noqa: E402
from envs.data.shapes import build_dataset  # noqa: E402
from envs.prompts import VIPER_COMPACT  # noqa: E402
from policies import DEFAULT_MODEL  # noqa: E402
from policies.lora import attach_lora  # noqa: E402
from policies.model import load_model, resolve  # noqa: E402
from train.config import LoraConfig, OptimConfig  # noqa: E402
from train.update import Example, run_update  # noqa: E402


def make_pairs(n: int, tok):
    rows = build_dataset(train=n, validation=0, test=0, seed=3, progress=False)["train"]
    pairs = []
    for row in rows:
        prompt = VIPER_COMPACT.render(tok, row["question"])
        program = reference_program(json.loads(row["spec"]))
        body = program.split(VIPER_COMPACT.program_prefix, 1)[-1] if VIPER_COMPACT.program_prefix in program \
            else "\n" + program.split("\n", 1)[1]
        pairs.append((prompt, body.rstrip() + tok.eos_token))
    return pairs


def ours(pairs, tok, batch):
    from accelerate import Accelerator

    model, _ = load_model(DEFAULT_MODEL, "float32")
    model = attach_lora(model, LoraConfig())
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-4)
    acc = Accelerator(cpu=True)
    model, opt = acc.prepare(model, opt)
    examples = [Example(tok(p, add_special_tokens=False)["input_ids"], tok(c, add_special_tokens=False)["input_ids"], 1.0)
                for p, c in pairs]
    tokens = sum(len(e.prompt_ids) + len(e.completion_ids) for e in examples)
    start = time.perf_counter()
    run_update(acc, model, opt, examples, OptimConfig(micro_batch_size=batch), tok.pad_token_id, seed=0, progress=False)
    return tokens, time.perf_counter() - start


def sft(pairs, tok, batch):
    import datasets
    from peft import LoraConfig as PeftLora
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    model = AutoModelForCausalLM.from_pretrained(resolve(DEFAULT_MODEL), dtype=torch.float32)
    data = datasets.Dataset.from_dict({"prompt": [p for p, _ in pairs], "completion": [c for _, c in pairs]})
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(output_dir=out, per_device_train_batch_size=batch, num_train_epochs=1, learning_rate=2e-4,
                         warmup_steps=0.1, max_grad_norm=0.3, lr_scheduler_type="linear", report_to=[],
                         logging_steps=1000, save_strategy="no", use_cpu=True, dataloader_num_workers=0)
        peft = PeftLora(r=16, lora_alpha=32, lora_dropout=0.05, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                        task_type="CAUSAL_LM")
        trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tok, peft_config=peft)
        tokens = sum(len(x) for x in trainer.train_dataset["input_ids"])
        start = time.perf_counter()
        trainer.train()
        return tokens, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    _, tok = load_model(DEFAULT_MODEL, "float32")
    pairs = make_pairs(args.examples, tok)
    print(f"{len(pairs)} examples, micro-batch {args.batch}, torch threads {torch.get_num_threads()}")
    results = {"vprl run_update (shared prefix)": ours(pairs, tok, args.batch), "trl.SFTTrainer": sft(pairs, tok, args.batch)}
    for name, (tokens, seconds) in results.items():
        print(f"  {name:32s} {tokens / seconds:8.1f} tokens/s  ({tokens} tokens in {seconds:.1f} s)")
    (t1, s1), (t2, s2) = results.values()
    print(f"ratio vprl / SFTTrainer tokens/s: {(t1 / s1) / (t2 / s2):.2f}x")


if __name__ == "__main__":
    main()
