"""Running hostile programs the way training runs programs, each followed by the probe."""
from __future__ import annotations

import os
import time

import numpy as np

from envs.execution import Executor
from tests.hostile_corpus import PROBE, escaped


def scene() -> np.ndarray:
    image = np.full((64, 64, 3), 235, np.uint8)
    image[8:28, 8:28] = (220, 30, 30)
    image[36:56, 36:56] = (30, 60, 220)
    return image


def leaky_executor(tmp_path, timeout_s: float, **kwargs) -> Executor:
    """An executor whose programs get raw primitives (tests/hostile_corpus.leaky_namespace),
    with the files the kernel cases try to reach. The parent's working directory and
    ``sys.path`` hold the project; ``tmp_path`` stands for the user's other folders."""
    target = tmp_path / "target.txt"
    target.write_text("target")
    os.chmod(target, 0o644)
    cwd_file = tmp_path / "started_here.txt"  # stands for a file where the run started
    cwd_file.write_text("cwd secret")
    cred = tmp_path / "credentials"
    cred.write_text("password=hunter2")
    os.environ.update(VPRL_TEST_TARGET=str(target), VPRL_TEST_CWD_FILE=str(cwd_file),
                      VPRL_TEST_PATH_DIR=os.getcwd(), VPRL_TEST_CRED_FILE=str(cred),
                      VPRL_TEST_PARENT_PID=str(os.getpid()))
    try:
        kwargs.setdefault("workers", 1)
        return Executor(timeout_s=timeout_s,
                        namespace_factory="tests.hostile_corpus:leaky_namespace", **kwargs)
    finally:
        for name in ("TARGET", "CWD_FILE", "PATH_DIR", "CRED_FILE", "PARENT_PID"):
            os.environ.pop(f"VPRL_TEST_{name}")


def run_with_probes(executor: Executor, cases, image=None):
    """One batch: a probe, then each case followed by a probe (all distinct texts, so the
    result cache runs every one). Returns (fresh probe result, [(case, result, probe)])."""
    image = scene() if image is None else image
    salt = time.monotonic_ns()
    programs = [f"# probe {salt} 0\n" + PROBE]
    for i, case in enumerate(cases):
        programs += [f"# case {salt} {i}\n" + case.program, f"# probe {salt} {i + 1}\n" + PROBE]
    results = executor.run(programs, [image] * len(programs))
    fresh = results[0]
    return fresh, [(case, results[2 * i + 1], results[2 * i + 2]) for i, case in enumerate(cases)]


def breaches(fresh, outcomes) -> list[str]:
    """Every case that escaped or changed what the probe after it sees."""
    assert fresh.status == "ok", fresh
    found = []
    for case, result, probe in outcomes:
        if escaped(result):
            found.append(f"{case.name}: escaped ({result.status}: {result.answer or result.stdout!r:.200})")
        if (probe.status, probe.stdout) != (fresh.status, fresh.stdout):
            found.append(f"{case.name}: the probe after it differs: {probe.status} "
                         f"{probe.stdout!r:.300} (fresh: {fresh.stdout!r:.300})")
    return found
