"""Issue 17 end to end: the whole hostile corpus through a two-worker pool, batched as
training batches programs, a probe after every program; and faults outside the
programs (the tool host, a worker, the zygote killed mid-batch) that the batch must
survive, with the affected programs marked and the next batch running normally."""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np

from envs.execution import Executor
from tests.containment import breaches, leaky_executor, run_with_probes, scene
from tests.hostile_corpus import CORPUS, reward_hacks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_whole_corpus_is_contained_with_two_workers(tmp_path):
    with Executor(timeout_s=4.0, workers=2) as ex:
        fresh, outcomes = run_with_probes(
            ex, [c for c in CORPUS + reward_hacks("yes", "no") if not c.leaky])
    found = breaches(fresh, outcomes)
    with leaky_executor(tmp_path, timeout_s=4.0, workers=2) as ex:
        fresh, outcomes = run_with_probes(ex, [c for c in CORPUS if c.leaky])
    found += breaches(fresh, outcomes)
    assert not found, "\n".join(found)
    by_name = {case.name: result for case, result, _ in outcomes}
    assert by_name["kills its own worker"].status == "runtime_error"


def test_the_deadline_is_absolute_whatever_the_program_asks_for():
    slow = [c for c in CORPUS if c.name == "keeps asking for tools past the deadline"][0]
    with Executor(timeout_s=1.0, workers=1) as ex:
        ex.wait_ready()
        start = time.monotonic()
        [result] = ex.run([slow.program], [scene()])
        elapsed = time.monotonic() - start
    assert result.status == "timeout"
    assert elapsed < 1.0 + 1.0 + 5.0  # limit + kill grace + a loaded machine's slack


# ---------------------------------------------------------------- faults outside programs

TOOL_PROGRAM = """def execute_command(image):
    n = 0
    for i in range({spin}):
        n += i
    return len(ImagePatch(image).find("red square")) + {k} * 0
"""


def _start_host(path):
    proc = subprocess.Popen([sys.executable, "-m", "envs.tools.host", "--backend", "shapes-cv",
                             "--llm", "none", "--socket", path], stdout=subprocess.PIPE,
                            text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    spec = proc.stdout.readline().strip()  # printed once it listens
    assert spec.startswith("host:"), spec
    return proc, spec


def _kill_later(delay, *actions):
    def run():
        time.sleep(delay)
        for action in actions:
            action()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_killing_the_tool_host_and_a_worker_mid_batch(tmp_path):
    path = str(tmp_path / "tools.sock")
    host, spec = _start_host(path)
    image = scene()
    # About 0.15 s of work each on an idle core, 48 programs on 2 workers: the batch lasts
    # 3-4 s, so the kill at 1 s lands mid-batch. Only a restarted child needs the host (the
    # others answer from their tool memo), so the kill must come well before the end.
    programs = [TOOL_PROGRAM.format(spin=6_000_000, k=k) for k in range(48)]
    try:
        with Executor(timeout_s=30.0, workers=2, backend=spec) as ex:
            ex.wait_ready()
            pids_before = set(ex.worker_pids)

            def kill_a_child():
                children = [p for p in ex.worker_pids if p != ex._zygote.pid]
                if children:
                    os.kill(children[0], signal.SIGKILL)

            killer = _kill_later(1.0, kill_a_child, host.kill)
            results = ex.run(programs, [image] * len(programs))
            killer.join()
            statuses = [r.status for r in results]
            # Every program has a result; the ones after the host died say so.
            assert len(results) == len(programs) and set(statuses) <= {"ok", "runtime_error"}
            failed = [r for r in results if r.status == "runtime_error"]
            assert failed and all("tool host" in r.error for r in failed), failed[:3]
            assert ex.stats["worker_restarts"] >= 1 and set(ex.worker_pids) != pids_before
            # The run goes on: a new host on the same socket serves the next batch.
            host.wait()
            host, _ = _start_host(path)
            again = ex.run([TOOL_PROGRAM.format(spin=10, k=k) for k in range(6)], [image] * 6)
            assert [r.status for r in again] == ["ok"] * 6 and {r.answer for r in again} == {"1"}
    finally:
        host.kill()
        host.wait()


def test_killing_the_zygote_mid_batch():
    image = np.zeros((16, 16, 3), np.uint8)
    programs = ["def execute_command(image):\n    n = 0\n    for i in range(3000000):\n"
                f"        n += i\n    return {k}\n" for k in range(16)]
    with Executor(timeout_s=30.0, workers=2,
                  namespace_factory="envs.execution.namespaces:plain_namespace") as ex:
        ex.wait_ready()
        zygote = ex._zygote.pid
        killer = _kill_later(0.5, lambda: os.kill(zygote, signal.SIGKILL))
        results = ex.run(programs, [image] * len(programs))
        killer.join()
        # Programs in flight when it died were retried on children of a new zygote.
        assert [r.answer for r in results] == [str(k) for k in range(16)], results
        assert ex.stats["zygote_starts"] == 2 and ex._zygote.pid != zygote
