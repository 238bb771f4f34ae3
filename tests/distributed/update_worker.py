"""Run by the distributed tests (under `accelerate launch`, or plainly for one process):
one reward-weighted update of a tiny LoRA model over a fixed set of rollouts.

    update_worker.py OUT_DIR [spread|zero_rank] [eq8|ppo]

The same 12 rollouts every time; how they are sharded depends on the world size and the
mode: `spread` deals them round-robin, `zero_rank` gives the last rank only weight-0
rollouts. Each rank writes its adapter tensors and the update's stats, so the tests can
check that the adapter does not depend on the world size or on who held which rollout.
`ppo` trains signed (advantage) weights with the clipped ratio, a KL term and 2 epochs.
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from policies.lora import adapter_weights  # noqa: E402
from tests.helpers.tiny import tiny_lora_model  # noqa: E402
from train.config import OptimConfig  # noqa: E402
from train.setup import make_accelerator  # noqa: E402
from train.update import Example, configure_accelerator, run_update  # noqa: E402


def rollouts(signed: bool = False) -> list[Example]:
    rng = random.Random(0)
    shared = [rng.randrange(3, 128) for _ in range(16)]
    weights = [1.0, 0.0, 0.5, 2.0, 0.0, 0.25, 1.0, 0.0, 0.75, 1.5, 0.0, 0.1]
    if signed:  # advantages: some programs are pushed down
        weights = [w - 0.5 if w else 0.0 for w in weights]
    return [Example(shared + [rng.randrange(3, 128) for _ in range(rng.randrange(1, 5))],
                    [rng.randrange(3, 128) for _ in range(rng.randrange(2, 7))] + [1], w) for w in weights]


def shard(examples: list[Example], rank: int, world: int, mode: str) -> list[Example]:
    if mode == "zero_rank" and world > 1:
        live = [e for e in examples if e.weight]
        zeros = [e for e in examples if not e.weight]
        return zeros if rank == world - 1 else live[rank :: world - 1]
    return examples[rank::world]


def main(out_dir: str, mode: str = "spread", objective: str = "eq8") -> None:
    from train.config import ObjectiveConfig

    accelerator = make_accelerator()
    rank, world = accelerator.process_index, accelerator.num_processes
    model = tiny_lora_model(seed=0)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    # 7 live rollouts, 3 per step: 3 optimizer steps, the last one short (fillers on some ranks).
    cfg = OptimConfig(lr=1e-2, micro_batch_size=1, batch_size=3, warmup_ratio=0.0, max_grad_norm=0.3,
                      epochs=2 if objective == "ppo" else 1)
    pg = ObjectiveConfig(name="rloo", clip_eps=0.2, kl_coef=0.1) if objective == "ppo" else None
    configure_accelerator(accelerator, cfg)
    model, optimizer = accelerator.prepare(model, optimizer)
    mine = shard(rollouts(signed=pg is not None), rank, world, mode)
    stats = run_update(accelerator, model, optimizer, mine, cfg, pad_id=0, seed=0, progress=False, objective=pg)
    adapter = adapter_weights(accelerator.unwrap_model(model))  # gathered: ZeRO-3 partitions every tensor
    torch.save(adapter, Path(out_dir, f"adapter_rank{rank}.pt"))
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(
        {"rank": rank, "world": world, "held": len(mine), "held_live": sum(e.weight != 0 for e in mine),
         "distributed": str(accelerator.distributed_type), **stats}))
    accelerator.wait_for_everyone()
    accelerator.end_training()  # a rank leaving with gloo's threads alive can abort at exit


if __name__ == "__main__":
    main(*sys.argv[1:])
