"""How tests start real runs: the repository root, the tiny budgets and the environment
(no pytest here, so launch/gpu_check.sh can use it on a machine without pytest)."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Small enough for a 2-core CPU: a few questions, short programs, the real embedded model.
TINY = [
    "questions_per_iteration=3", "programs_per_question=2", "eval_questions=2",
    "generation.max_new_tokens=40", "data.train_size=24", "data.validation_size=4",
    "optim.micro_batch_size=4",
    "tracking.report=false",  # the end-of-run report has its own test (test_cli_report.py)
]


def _env():
    env = dict(os.environ)
    env.pop("WANDB_API_KEY", None)
    # A W&B service started by an in-process test must not be shared with the runs we
    # launch: a killed run's stream would stay registered there under its run id.
    env.pop("WANDB_SERVICE", None)
    env.setdefault("WANDB_SILENT", "true")
    env["TOKENIZERS_PARALLELISM"] = "false"
    return env
