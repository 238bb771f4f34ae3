"""Count `Executor.run` calls (and the programs they carry) in a short training run,
by the function that made each call: how often programs are executed per iteration.

    python bench/executor_calls.py [key=value ...]    # overrides of the tiny run below

Every call re-hashes its images and programs to reach the executor's cache, so a reward
that runs programs already run is paid for even when the cache answers.
"""
from __future__ import annotations

import sys
import tempfile
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TINY = ["iterations=1", "questions_per_iteration=4", "programs_per_question=2", "eval_questions=4",
        "generation.max_new_tokens=40", "data.train_size=24", "data.validation_size=4",
        "tracking.mode=disabled", "tracking.report=false", "run_name=executor-calls"]


def caller(stack: list) -> str:
    """The phase of the run (the function `train/iterate.py:main` called) and the first
    frame outside the execution package: the code that asked for the run."""
    names = [f.name if f.filename.endswith("train/iterate.py") else "" for f in stack]
    phase = stack[names.index("main") + 1].name if "main" in names[:-1] else "?"
    if phase in ("evaluate", "base"):
        phase = f"held-out {phase}"
    for frame in reversed(stack[:-1]):
        if "/envs/execution/" not in frame.filename:
            return f"{phase} <- {Path(frame.filename).relative_to(ROOT)}:{frame.name}"
    return phase


def main(argv: list[str]) -> dict:
    from envs.execution import Executor
    from train import iterate

    calls, programs = Counter(), Counter()
    run = Executor.run

    def counted(self, progs, images, *args, **kwargs):
        where = caller(traceback.extract_stack())
        calls[where] += 1
        programs[where] += len(progs)
        return run(self, progs, images, *args, **kwargs)

    Executor.run = counted
    try:
        with tempfile.TemporaryDirectory() as out:
            status = iterate.main(["--config", str(ROOT / "configs/shapes_rwr_cpu.yaml"), *TINY,
                                   f"output_dir={out}", *argv])
    finally:
        Executor.run = run
    if status:
        raise SystemExit(f"the run failed with status {status}")
    print(f"{'phase <- caller':70s} {'calls':>6s} {'programs':>9s}")
    for where in sorted(calls):
        print(f"{where:70s} {calls[where]:6d} {programs[where]:9d}")
    print(f"{'total':70s} {sum(calls.values()):6d} {sum(programs.values()):9d}")
    return dict(calls)


if __name__ == "__main__":
    main(sys.argv[1:])
