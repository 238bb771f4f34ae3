"""Run by `accelerate launch` in tests/distributed: one sharded reward-weighted update.

Each rank builds its own shard of examples (different sizes, so the zero-weight
filler path runs), takes the update, and writes a fingerprint of its adapter.
"""

import hashlib
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402


from tests.helpers.tiny import tiny_lora_model  # noqa: E402
from train.config import OptimConfig  # noqa: E402
from train.setup import make_accelerator  # noqa: E402
from train.update import Example, configure_accelerator, run_update  # noqa: E402


def fingerprint(model) -> str:
    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        if "lora" in name:
            h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


def main(out_dir: str) -> None:
    accelerator = make_accelerator()
    rank = accelerator.process_index
    model = tiny_lora_model(seed=0)
    before = fingerprint(model)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    cfg = OptimConfig(lr=1e-2, micro_batch_size=2, warmup_ratio=0.0)
    configure_accelerator(accelerator, cfg)
    model, optimizer = accelerator.prepare(model, optimizer)
    rng = random.Random(rank)  # ranks see different questions
    shared = [rng.randrange(3, 128) for _ in range(16)]
    examples = [
        Example(shared + [rng.randrange(3, 128) for _ in range(3)], [rng.randrange(3, 128) for _ in range(5)] + [1],
                float(rng.random() > 0.3))
        for _ in range(4 + 5 * rank)
    ]
    stats = run_update(accelerator, model, optimizer, examples, cfg, pad_id=0, seed=0, progress=False)
    after = fingerprint(accelerator.unwrap_model(model))
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(
        {"rank": rank, "world": accelerator.num_processes, "before": before, "after": after,
         "steps": stats["loss/steps"], "examples": stats["loss/examples"], "distributed": str(accelerator.distributed_type)}
    ))


if __name__ == "__main__":
    main(sys.argv[1])
