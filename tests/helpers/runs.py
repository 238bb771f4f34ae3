"""What every tier needs to start vprl's entry points as a user would: the repository
root, the tiny run budget, and the environment a launched run gets."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Small enough for a 2-core CPU: a few questions, short programs, the real embedded model.
TINY = [
    "questions_per_iteration=3", "programs_per_question=2", "eval_questions=2",
    "generation.max_new_tokens=40", "data.train_size=24", "data.validation_size=4",
    "optim.micro_batch_size=4",
    "tracking.report=false",  # the end-of-run report has its own test (test_cli_report.py)
]


def run_env() -> dict:
    """os.environ for a launched run: never a user's W&B login or service, quiet W&B."""
    env = dict(os.environ)
    env.pop("WANDB_API_KEY", None)
    # A W&B service started by an in-process test must not be shared with the runs we
    # launch: a killed run's stream would stay registered there under its run id.
    env.pop("WANDB_SERVICE", None)
    env.setdefault("WANDB_SILENT", "true")
    env["TOKENIZERS_PARALLELISM"] = "false"
    return env


HELPERS = ROOT / "tests" / "helpers"


def fake_gpu_env(**extra) -> dict:
    """An environment whose `nvidia-smi` is tests/helpers/gpu's stand-in (FAKE_GPUS devices),
    with no GPU selection of the caller's leaking in."""
    env = {k: v for k, v in os.environ.items() if k not in ("VPRL_GPUS", "CUDA_VISIBLE_DEVICES")}
    env["PATH"] = f"{HELPERS / 'gpu'}:{Path(sys.executable).parent}:{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env
