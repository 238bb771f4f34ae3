"""Executor behaviour: batching, images, caching, crash recovery, tools, CLI."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from envs.execution import Executor, ExecutorError, shared_executor
from envs.execution.cli import main as cli_main

PLAIN = "envs.execution.namespaces:plain_namespace"
RGB = np.zeros((24, 32, 3), np.uint8)
RGB[:, :16] = (200, 10, 10)


def entry(*lines):
    return "def execute_command(image):\n" + "".join(f"    {line}\n" for line in lines)


SHAPE = entry("return f'{image.shape[0]}x{image.shape[1]}x{image.shape[2]} {int(image[0, 0, 0])}'")


@pytest.fixture(scope="module")
def ex():
    with Executor(timeout_s=2.0, memory_mb=256, workers=2, namespace_factory=PLAIN) as executor:
        yield executor.wait_ready()


def test_one_result_per_pair_in_order_with_every_status(ex):
    programs = [
        entry("return [True, False]"),
        entry("return 1 / 0"),
        entry("assert image.shape[0] == 1, 'not one row'"),
        "def execute_command(image):\n    return (\n",
        "import os\n" + entry("return 1"),
        "result = 42\n",
        entry("return None"),
    ]
    results = ex.run(programs, [RGB] * len(programs))
    assert [r.status for r in results] == ["ok", "runtime_error", "assertion_error",
                                           "compile_error", "forbidden", "compile_error", "ok"]
    assert results[0].answer == "yes" and results[0].raw_type == "list"
    assert results[1].error == "Error: ZeroDivisionError: division by zero (line 2)"
    assert results[2].error == "Error: AssertionError: not one row (line 2)"
    assert "does not define execute_command(image)" in results[5].error
    assert results[6].answer is None and results[6].raw_type == "NoneType"
    for r in results:
        json.dumps(r.to_dict())
        assert r.error is None or r.error.startswith("Error: ")


def test_custom_entry_point(ex):
    [result] = ex.run(["def solve(image):\n    return 'Custom'\n"], [RGB], entry="solve")
    assert result.answer == "custom"
    with pytest.raises(ValueError, match="entry"):
        ex.run([SHAPE], [RGB], entry="__builtins__")


def test_progress_bar_counts_executed_programs(ex, capsys):
    salt = time.monotonic_ns()
    results = ex.run([entry(f"# {salt} {i}", "return 1") for i in range(3)], [RGB] * 3,
                     progress=True)
    assert [r.answer for r in results] == ["1"] * 3
    assert "3/3" in capsys.readouterr().err


def test_images_as_array_pil_path_grayscale_and_rgba(ex, tmp_path):
    path = tmp_path / "img.png"
    Image.fromarray(RGB).save(path)
    rgba = np.concatenate([RGB, np.full((24, 32, 1), 255, np.uint8)], axis=2)
    encoded = path.read_bytes()
    images = [RGB, Image.fromarray(RGB), str(path), path, rgba, encoded,
              {"bytes": encoded, "path": None}, {"bytes": None, "path": str(path)}]
    results = ex.run([SHAPE] * len(images), images)
    assert {r.answer for r in results} == {"24x32x3 200"}
    [gray] = ex.run([SHAPE], [np.full((5, 6), 7, np.uint8)])
    assert gray.answer == "5x6x3 7"


@pytest.mark.parametrize("bad,error", [
    (np.zeros((4, 4, 3), np.float32), TypeError),
    (np.zeros((4, 4, 2), np.uint8), ValueError),
    ("/nonexistent/image.png", FileNotFoundError),
    (12, TypeError),
    (b"not a png", ValueError),
    ({"bytes": None, "path": None}, ValueError),
])
def test_bad_images_are_rejected_before_running(ex, bad, error):
    with pytest.raises(error):
        ex.run([SHAPE], [bad])


def test_mismatched_lengths_are_an_error(ex):
    with pytest.raises(ValueError, match="one image per program"):
        ex.run([SHAPE, SHAPE], [RGB])


def test_programs_cannot_mutate_the_image_for_the_next_program(ex):
    salt = time.monotonic_ns()
    first = ex.run([entry(f"# {salt}", "image[:] = 0", "return int(image.sum())")], [RGB])
    assert first[0].answer == "0"
    second = ex.run([entry(f"# {salt} again", "return int(image[0, 0, 0])")], [RGB])
    assert second[0].answer == "200"


def test_results_are_memoised_per_program_and_image_content(ex):
    salt = time.monotonic_ns()
    program = entry(f"# {salt}", "return int(image.sum() % 997)")
    before = ex.stats["executed"]
    other = RGB.copy()
    other[0, 0] = 1
    results = ex.run([program] * 5 + [program], [RGB.copy() for _ in range(5)] + [other])
    assert ex.stats["executed"] - before == 2  # five identical pairs ran once
    assert len({r.answer for r in results[:5]}) == 1 and results[5].answer != results[0].answer
    results[0].answer = "mutated by a caller"
    hits = ex.stats["cache_hits"]
    again = ex.run([program], [Image.fromarray(RGB)])
    assert ex.stats["cache_hits"] == hits + 1 and again[0].answer == results[1].answer


def test_cache_can_be_disabled():
    with Executor(timeout_s=2.0, workers=1, cache=False, namespace_factory=PLAIN) as executor:
        executor.run([entry("return 1")] * 2, [RGB] * 2)
        executor.run([entry("return 1")], [RGB])
        assert executor.stats["executed"] == 2 and executor.stats["cache_hits"] == 0


def test_a_small_cache_evicts_without_losing_results():
    with Executor(timeout_s=2.0, workers=1, cache_size=3, namespace_factory=PLAIN) as executor:
        results = executor.run([entry(f"return {i}") for i in range(10)], [RGB] * 10)
        assert [r.answer for r in results] == [str(i) for i in range(10)]
        assert len(executor._cache) == 3


def test_workers_killed_from_outside_are_replaced(ex):
    for pid in ex.worker_pids:
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)
    salt = time.monotonic_ns()
    results = ex.run([entry(f"# {salt} {i}", f"return {i}") for i in range(4)], [RGB] * 4)
    assert [r.answer for r in results] == ["0", "1", "2", "3"]
    assert all(r.status == "ok" for r in results)


@pytest.mark.parametrize("tasks", [1, 3])
def test_each_child_runs_at_most_max_tasks_programs(tasks):
    with Executor(timeout_s=2.0, workers=1, max_tasks_per_worker=tasks,
                  namespace_factory=PLAIN) as executor:
        results = executor.run([entry(f"return {i}") for i in range(7)], [RGB] * 7)
        assert [r.answer for r in results] == [str(i) for i in range(7)]
        spawned = executor.stats["children_spawned"]
        # One child per program by default; with 3, seven programs need three (plus a spare).
        assert spawned >= 7 if tasks == 1 else 3 <= spawned <= 5
        assert executor.stats["worker_restarts"] == 0  # retiring is not a restart


def test_workers_die_with_their_parent(tmp_path):
    # The workers are busy in endless loops, so they would never notice their
    # input closing; only the kernel (PR_SET_PDEATHSIG) can take them down.
    script = (
        "import os, threading, time\n"
        "import numpy as np\n"
        "from envs.execution import Executor\n"
        f"ex = Executor(timeout_s=60, workers=2, namespace_factory={PLAIN!r}).wait_ready()\n"
        "loop = 'def execute_command(image):\\n    while True:\\n        pass\\n'\n"
        "threading.Thread(target=ex.run, args=([loop, loop + '#'], [np.zeros((2, 2, 3), "
        "np.uint8)] * 2), daemon=True).start()\n"
        "time.sleep(0.5)\n"
        "print(' '.join(map(str, ex.worker_pids)), flush=True)\n"
        "os._exit(0)\n"  # no cleanup at all
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                             os.path.abspath(__file__)))))
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) >= 3, out.stderr  # the zygote and (at least) the two busy children
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_a_factory_that_cannot_load_fails_loudly_and_fast():
    start = time.monotonic()
    with Executor(workers=1, namespace_factory="no_such_module_xyz:build") as executor:
        with pytest.raises(ExecutorError, match="no_such_module_xyz"):
            executor.run([entry("return 1")], [RGB])
    assert time.monotonic() - start < 30


def test_shared_executor_is_one_per_process():
    # Earlier tests (rewards, envs) may have created the process-wide one with defaults.
    shared_executor().close()
    first = shared_executor(namespace_factory=PLAIN, workers=1)
    try:
        assert shared_executor() is first
        assert shared_executor(namespace_factory=PLAIN, workers=1) is first
        with pytest.raises(ValueError, match="already exists"):
            shared_executor(workers=3)
        assert first.run([entry("return 'x'")], [RGB])[0].answer == "x"
    finally:
        first.close()
    again = shared_executor(namespace_factory=PLAIN, workers=1)  # a closed one is replaced, not reused
    try:
        assert again is not first and again.run([entry("return 'y'")], [RGB])[0].answer == "y"
    finally:
        again.close()


# ---------------------------------------------------------------- real tools

@pytest.fixture(scope="module")
def tools_ex():
    with Executor(timeout_s=3.0, workers=1) as executor:
        yield executor.wait_ready()


def scene():
    image = np.full((96, 96, 3), 235, np.uint8)
    image[10:40, 10:40] = (220, 30, 30)
    image[55:85, 50:80] = (30, 60, 220)
    return image


def test_tool_exceptions_become_runtime_errors_with_the_tools_message(tools_ex):
    [result] = tools_ex.run([entry("return ImagePatch(image).crop(5, 5, 5, 5)")], [scene()])
    assert result.status == "runtime_error"
    assert "zero-area" in result.error and result.error.startswith("Error: ")
    assert tools_ex.run([entry("return ImagePatch(image).exists('red square')")],
                        [scene()])[0].status == "ok"


def test_patching_a_tool_class_does_not_leak(tools_ex):
    salt = time.monotonic_ns()
    patched = entry(f"# {salt}", "P = ImagePatch", "P.exists = lambda self, name: 'hacked'",
                    "return ImagePatch(image).exists('red square')")
    assert tools_ex.run([patched], [scene()])[0].answer == "hacked"
    clean = entry(f"# {salt} clean", "return ImagePatch(image).exists('blue square')")
    assert tools_ex.run([clean], [scene()])[0].answer == "yes"


# ---------------------------------------------------------------- CLI

def write(path, text):
    path.write_text(text)
    return str(path)


@pytest.fixture()
def image_file(tmp_path):
    path = tmp_path / "scene.png"
    Image.fromarray(scene()).save(path)
    return str(path)


def test_cli_prints_one_json_object_and_exits_zero(tmp_path, image_file, capsys):
    program = write(tmp_path / "p.py", entry("return 1 / 0"))
    assert cli_main([program, image_file, "--timeout", "3", "--memory-mb", "512"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "runtime_error" and "ZeroDivisionError" in out["error"]
    assert set(out) == {"status", "answer", "error", "duration_s", "raw_type", "stdout"}


@pytest.mark.parametrize("args,needle", [
    (["missing.py", "IMAGE"], "program file not found"),
    (["PROGRAM", "/nonexistent.png"], "image file not found"),
    (["PROGRAM", "NOTIMAGE"], "cannot read image"),
    (["PROGRAM", "IMAGE", "--timeout", "-1"], "a finite number > 0"),
    (["PROGRAM", "IMAGE", "--memory-mb", "lots"], "an integer >= 1"),
    (["PROGRAM", "IMAGE", "--backend", "nope"], "unknown backend"),
    (["PROGRAM"], "usage: vprl exec"),
])
def test_cli_usage_problems_exit_2_with_one_line(tmp_path, image_file, capsys, args, needle):
    program = write(tmp_path / "p.py", entry("return 1"))
    not_image = write(tmp_path / "n.png", "not an image")
    argv = [{"PROGRAM": program, "IMAGE": image_file, "NOTIMAGE": not_image}.get(a, a)
            for a in args]
    assert cli_main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("vprl exec: error:")


def test_the_compiled_program_cache_is_bounded_in_bytes(ex):
    """A few huge programs must not pin hundreds of megabytes of compiled code."""
    limit = ex._checks.max_bytes
    ex._checks.max_bytes = 150_000
    try:
        salt = time.monotonic_ns()
        big = [f"# {salt} {i}\n" + "x = [" + "1, " * 20_000 + "]\n" + entry(f"return {i}")
               for i in range(8)]
        results = ex.run(big, [RGB] * len(big))
        assert [r.answer for r in results] == [str(i) for i in range(8)]
        largest = max(size for size, _ in ex._checks.items.values())
        assert largest > 40_000 and ex._checks.bytes <= 150_000 + largest
        assert len(ex._checks) < 8
    finally:
        ex._checks.max_bytes = limit


def test_anything_the_parent_does_with_one_programs_text_fails_only_that_program(ex, monkeypatch):
    """Issue 25, class 1: an exception while checking, compiling or caching one program
    (here injected into marshal, the step after the checker) is that program's status;
    its batch-mates still run."""
    from envs.execution import executor as executor_module

    real_dumps = executor_module.marshal.dumps

    class Marshal:
        @staticmethod
        def dumps(code):
            if "poison" in code.co_consts or any("poison" in getattr(c, "co_consts", ())
                                                  for c in code.co_consts):
                raise ValueError("unmarshallable code")
            return real_dumps(code)
    monkeypatch.setattr(executor_module, "marshal", Marshal)
    hostile = [entry("return 'poison'"),
               "def execute_command(image: '" + "-" * 50_000 + "1'):\n    return 1\n",
               entry("return " + "not " * 20_000 + "1"),
               entry("return '\ud800' + " + "(" * 150 + "1" + ")" * 150)]
    results = ex.run(hostile + [entry("return 'honest'")], [RGB] * 5)
    assert [r.status for r in results[:4]] == ["compile_error", "forbidden", "compile_error",
                                               "compile_error"], results
    assert results[4].status == "ok" and results[4].answer == "honest"
    for r in results:
        json.dumps(r.to_dict()).encode("utf-8")  # every result can be logged
