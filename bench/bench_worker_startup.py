"""How long a sandbox worker takes to start, and what it imports on the way.

A worker starts as `envs.execution.workers.sandbox_command(...)`, which enters
`envs.execution` without running `envs/__init__.py`; started as `python -s -m
envs.execution.worker` instead, it would pay for whatever that `__init__` pulls in
(issue 12: the Gymnasium registration dragged in gymnasium, the environments, `rewards`
and `policies`). Two figures per source tree, measured side by side (trees alternate
within each repetition, so background load hits both alike):

- import: the worker module started with no config on stdin, so it exits
  as soon as its imports are done and it reads an empty frame (the process a pool
  starts, up to the worker's own code), with the heavy packages it loaded;
- first result: `Executor(workers=1)` started and one program run to its answer
  (import, warm-up, lockdown, one request), the start-up a trainer waits for.

    python bench/bench_worker_startup.py                       # this checkout
    python bench/bench_worker_startup.py --eager               # vs. this checkout with eager imports
    python bench/bench_worker_startup.py --trees OLD_TREE .    # vs. another source tree

`--eager` compares against a copy of this checkout started with `-m` (so `envs/__init__.py`
registers the environments) and whose `envs/environments/__init__.py` imports its classes
at once (the import edges as they were before issue 12). A tree without
`sandbox_command` (older checkouts) is started with `-m`, as it was then.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("gymnasium", "rewards", "policies", "torch", "transformers", "datasets", "envs.environments")

FIRST_RESULT = """
import time
t = time.perf_counter()
from envs.execution import Executor
with Executor(workers=1) as ex:
    (r,) = ex.run(["def execute_command(image):\\n    return 'ok'\\n"], [np.zeros((8, 8, 3), np.uint8)])
assert r.status == "ok", r
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def _env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree)}


def run(tree: Path, code: str) -> dict:
    prelude = "import json\nimport numpy as np\n"
    out = subprocess.run([sys.executable, "-s", "-c", prelude + code], cwd=tree, env=_env(tree),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def worker_command(tree: Path, *options: str) -> list[str]:
    if tree.name == "eager" or "def sandbox_command" not in (tree / "envs/execution/workers.py").read_text():
        return [sys.executable, "-s", *options, "-m", "envs.execution.worker"]
    from envs.execution.workers import _BOOT

    return [sys.executable, "-s", *options, "-c", _BOOT, str(tree / "envs"), "envs.execution.worker"]


def worker_import(tree: Path) -> float:
    t = time.perf_counter()
    subprocess.run(worker_command(tree), cwd=tree, env=_env(tree), stdin=subprocess.DEVNULL, capture_output=True)
    return time.perf_counter() - t


def heavy_imports(tree: Path) -> list[str]:
    out = subprocess.run(worker_command(tree, "-X", "importtime"), cwd=tree,
                         env=_env(tree), stdin=subprocess.DEVNULL, capture_output=True, text=True)
    names = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    return sorted(h for h in HEAVY if any(n == h or n.startswith(h + ".") for n in names))


EAGER_ENVIRONMENTS = """from envs.environments.env import VisualProgramEnv, default_feedback
from envs.environments.grpo import grpo_dataset
from envs.environments.registration import UnknownEnvironment, env_ids, make, register_all
from envs.environments.scoring import Outcome, score_rows
"""


def eager_copy(tree: Path, dest: Path) -> Path:
    """`tree` with the pre-issue-12 import edges (started with -m: registration always;
    environments eagerly)."""
    shutil.copytree(tree, dest, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "__pycache__", "*.egg-info"))
    (dest / "envs" / "environments" / "__init__.py").write_text(EAGER_ENVIRONMENTS)
    return dest


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trees", nargs="+", type=Path, default=[ROOT], help="source trees to compare (this one)")
    p.add_argument("--eager", action="store_true", help="compare with this checkout's eager-import variant")
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    trees = [t.resolve() for t in args.trees]
    tmp = None
    if args.eager:
        tmp = tempfile.TemporaryDirectory()
        trees = [eager_copy(ROOT, Path(tmp.name) / "eager"), ROOT]
    imports = {t: [] for t in trees}
    firsts = {t: [] for t in trees}
    heavy = {t: heavy_imports(t) for t in trees}
    for _ in range(args.repeats):
        for t in trees:
            imports[t].append(worker_import(t))
            firsts[t].append(run(t, FIRST_RESULT)["seconds"])
    print(f"{'tree':40s} {'import (s)':>11s} {'first result (s)':>17s}  heavy packages imported")
    for t in trees:
        print(f"{str(t)[-40:]:40s} {statistics.median(imports[t]):11.3f} {statistics.median(firsts[t]):17.3f}  "
              f"{', '.join(heavy[t]) or 'none'}")
    if len(trees) == 2:
        a, b = trees
        print(f"ratio {a.name} / {b.name} (medians of {args.repeats}): import "
              f"{statistics.median(imports[a]) / statistics.median(imports[b]):.2f}x, first result "
              f"{statistics.median(firsts[a]) / statistics.median(firsts[b]):.2f}x")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
