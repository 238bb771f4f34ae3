"""Run by the distributed tests: few-shot pool admission over ranks, and its resume.

    pool_worker.py OUT_DIR

Each rank solves different questions (so has different admission candidates), admits
them through `SelfPlay.admit(..., gather=gather_object)`, and writes its pool. Then the
main process checkpoints the pool as the trainer does, every rank restores it into a
fresh SelfPlay, and writes it again.
"""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from accelerate.utils import gather_object  # noqa: E402

from train.config import SelfPlayConfig  # noqa: E402
from train.setup import make_accelerator  # noqa: E402
from train.selfplay import SelfPlay  # noqa: E402

FAMILY = "viper_compact"


def main(out_dir: str) -> None:
    accelerator = make_accelerator()
    rank = accelerator.process_index
    cfg = SelfPlayConfig(mode="pool_only", capacity=4, eviction="oldest")
    sp = SelfPlay(cfg, FAMILY, "gqa_accuracy")
    # Rank r solves 3 questions of its own, 1 of them wrongly; capacity 4 forces evictions.
    rows = [{"question": f"How many shapes, case {rank}-{i}?", "answer": str(i), "id": f"r{rank}q{i}"} for i in range(3)]
    rollouts = [SimpleNamespace(row=i, program=f"def execute_command(image):\n    return '{i}'\n", reward=1.0,
                                parts={"correctness": float(i != 1)}, result=SimpleNamespace(answer=str(i)))
                for i in range(3)]
    for step in range(2):
        sp.admit(FAMILY, rows, rollouts, step, gather=gather_object)
        rows = [dict(r, question=r["question"] + " again", id=r["id"] + "b") for r in rows]
    before = sp.to_json()
    if accelerator.is_main_process:
        Path(out_dir, "pool.json").write_text(json.dumps(before))  # what the checkpoint holds
    accelerator.wait_for_everyone()
    resumed = SelfPlay(cfg, FAMILY, "gqa_accuracy")
    resumed.load_json(json.loads(Path(out_dir, "pool.json").read_text()))
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps({"before": before, "after": resumed.to_json()}))
    # A rank that exits while gloo still runs its threads aborts ("terminate called
    # without an active exception"); train/iterate.py ends the same way.
    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main(sys.argv[1])
