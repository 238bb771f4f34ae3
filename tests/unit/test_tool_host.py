"""The tool host: models outside the sandbox, workers talking to it over a socket.

These use real sandboxed programs (envs.execution.Executor with full lockdown), which
proves the worker's connection, made during warm-up, keeps working under seccomp and
Landlock.  Backends here are shapes-cv or small fakes: the point is the plumbing."""
from __future__ import annotations

import socket
import threading
import time

import numpy as np

from envs.data.shapes import render, sample_scene
from envs.execution import Executor
from envs.tools import build_namespace
from envs.tools.backend import Backend
from envs.tools.host import ToolHost
from envs.tools.host_client import Connection, FrameReader, HostClient, encode

IMAGE = render(sample_scene(np.random.default_rng(3)))
FIND = """def execute_command(image):
    patches = ImagePatch(image).find("object")
    return ",".join(str((p.left, p.lower, p.right, p.upper)) for p in patches)
"""


class CountingBackend(Backend):
    """Answers find with one fixed box and counts batched calls."""

    name = "counting"

    def __init__(self):
        self.batches = []

    def find(self, view, phrase):
        return ((1, 2, 3, 4),)

    def batch_find(self, views, args_list):
        self.batches.append(len(views))
        if any(a[0] == "boom" for a in args_list):
            raise ValueError("detector exploded on 'boom'")
        return [((len(a[0]), 0, len(a[0]) + 1, 1),) for a in args_list]

    def verify_property(self, view, object_name, prop):
        return True

    def simple_query(self, view, question):
        return "blue"


def test_sandboxed_programs_use_the_host_and_match_local_results():
    local = build_namespace("shapes-cv")["ImagePatch"](IMAGE).find("object")
    expected = ",".join(str((p.left, p.lower, p.right, p.upper)) for p in local)
    llm_prog = "def execute_command(image):\n    return llm_query('capital of France?')\n"
    with ToolHost("shapes-cv", llm=lambda q: "Paris " + q) as host, \
            Executor(workers=1, timeout_s=5, backend=host.spec) as ex:
        find, llm = ex.run([FIND, llm_prog], [IMAGE, IMAGE])
        layers = ex.sandbox_layers
    assert find.status == "ok", find.error
    assert find.answer == expected.lower()
    assert llm.status == "ok" and llm.answer == "paris capital of france?"
    assert host.stats["requests"] == 2  # find and llm_query, both after lockdown
    assert layers  # the connection outlived whatever lockdown the machine supports


def test_local_mode_runs_vision_in_the_worker_and_only_llm_in_the_host():
    prog = FIND.replace('return ",".join', 'return llm_query("x") + ",".join')
    with ToolHost("shapes-cv", llm=lambda q: "llm", local=True) as host, \
            Executor(workers=1, timeout_s=5, backend=host.spec) as ex:
        (result,) = ex.run([prog], [IMAGE])
    assert result.status == "ok" and result.answer.startswith("llm(")
    assert host.backend is None and host.stats["requests"] == 1  # llm_query only


def test_concurrent_requests_are_batched_into_fewer_backend_calls():
    backend = CountingBackend()
    n = 8
    with ToolHost(backend, llm=None, batch_window_s=0.2) as host:
        clients = [HostClient(Connection(host.socket_path, 10.0)) for _ in range(n)]
        ns = [build_namespace("shapes-cv") for _ in range(n)]  # only for views
        views = [_view(ns_i) for ns_i in ns]
        barrier, results = threading.Barrier(n), [None] * n

        def ask(i):
            barrier.wait()
            results[i] = clients[i].find(views[i], "x" * (i + 1))

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert results == [((i + 1, 0, i + 2, 1),) for i in range(n)]
    assert len(backend.batches) < n and sum(backend.batches) == n


def test_tool_errors_reach_the_program_as_runtime_errors():
    prog = FIND.replace('"object"', '"boom"')
    with ToolHost(CountingBackend(), llm=None) as host, \
            Executor(workers=1, timeout_s=5, backend=host.spec) as ex:
        (result,) = ex.run([prog], [IMAGE])
    assert result.status == "runtime_error"
    assert "detector exploded on 'boom'" in result.error


def test_dead_host_gives_runtime_error_quickly():
    host = ToolHost("shapes-cv", llm=None).start()
    with Executor(workers=1, timeout_s=5, backend=host.spec) as ex:
        (first,) = ex.run([FIND], [IMAGE])
        host.close()
        start = time.monotonic()
        (second,) = ex.run([FIND.replace("object", "red object")], [IMAGE])
        elapsed = time.monotonic() - start
        (plain,) = ex.run(["def execute_command(image):\n    return 2\n"], [IMAGE])
    assert first.status == "ok"
    assert second.status == "runtime_error" and "tool host" in second.error
    assert elapsed < 3
    assert plain.status == "ok"  # the worker itself survives


def test_missing_host_gives_runtime_error(tmp_path):
    with Executor(workers=1, timeout_s=5, backend=f"host:{tmp_path}/none.sock") as ex:
        (result,) = ex.run([FIND], [IMAGE])
    assert result.status == "runtime_error" and "cannot reach the tool host" in result.error


def test_stuck_host_ends_in_timeout_not_a_hang(tmp_path):
    """A host that answers the handshake and then never again."""
    path = str(tmp_path / "stuck.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)
    held = []

    def serve():
        conn, _ = server.accept()
        held.append(conn)
        reader = FrameReader()
        while True:
            frames = reader.feed(conn.recv(65536))
            if frames:
                conn.sendall(encode({"id": frames[0][0]["id"], "result": "ok", "backend": "x"}))
                return

    threading.Thread(target=serve, daemon=True).start()
    with Executor(workers=1, timeout_s=1, backend=f"host:{path}") as ex:
        start = time.monotonic()
        (result,) = ex.run([FIND], [IMAGE])
        elapsed = time.monotonic() - start
    server.close()
    assert result.status == "timeout" and elapsed < 3.5


class SlowBackend(CountingBackend):
    def batch_find(self, views, args_list):
        if any(a[0] == "slow" for a in args_list):
            time.sleep(1.5)
        return super().batch_find(views, args_list)


def test_a_timeout_during_a_tool_call_leaves_the_connection_in_sync():
    """The late reply to the abandoned call must not be taken as the next call's answer."""
    slow = FIND.replace('"object"', '"slow"')
    fast = FIND.replace('"object"', '"fast"')
    with ToolHost(SlowBackend(), llm=None) as host, \
            Executor(workers=1, timeout_s=1, backend=host.spec) as ex:
        (first,) = ex.run([slow], [IMAGE])
        (second,) = ex.run([fast], [IMAGE])
        restarts = ex.stats["worker_restarts"]
    assert first.status == "timeout"
    assert second.status == "ok" and second.answer == "(4, 0, 5, 1)", second
    assert restarts == 0  # the same worker, its socket still usable


def test_evicted_images_are_sent_again():
    other = np.array(IMAGE)[::-1].copy()
    with ToolHost("shapes-cv", llm=None, image_cache=1) as host:
        client = HostClient(Connection(host.socket_path, 10.0))
        local = build_namespace("shapes-cv")
        for image in (IMAGE, other, IMAGE, other):
            view = _view(local, image)
            expected = local["ImagePatch"](image).find("object")
            got = client.find(view, "object")
            assert [tuple(b) for b in got] == [(p.left, p.lower, p.right, p.upper)
                                               for p in expected]
    assert host.stats["requests"] == 6  # the last two asked first without pixels


def test_host_rejects_malformed_and_forged_requests():
    with ToolHost(CountingBackend(), llm=None) as host:
        conn = Connection(host.socket_path, 5.0)
        view = _view(build_namespace("shapes-cv"))
        good = {"digest": view.digest, "shape": list(view.root.shape), "box": list(view.box)}
        blob = view.root.tobytes()
        cases = [({"method": "__init__", "args": []}, b""),
                 ({"method": "find", "args": [1]} | good, blob),
                 ({"method": "find", "args": ["x"]} | good | {"digest": "0" * 32}, blob),
                 ({"method": "find", "args": ["x"]} | good | {"box": [0, 0, 10_000, 5]}, blob),
                 ({"method": "find", "args": ["x"]} | good, blob[:-1])]
        replies = [conn.request(dict(h), b) for h, b in cases]
        assert all("error" in r for r in replies), replies
        assert conn.request({"method": "find", "args": ["x"]} | good, blob)["result"]


def _view(namespace, image=IMAGE):
    """A View of the whole image, taken the way the API builds one."""
    from envs.common.images import image_digest
    from envs.tools.api import frozen_array
    from envs.tools.backend import View

    root = frozen_array(image)
    h, w = root.shape[:2]
    return View(root, root, (0, 0, w, h), image_digest(root))


def test_llm_query_defaults_to_the_embedded_model_served_by_the_host():
    """The real embedded SmolLM2 (shipped in a wheel, no download) answers llm_query for a
    sandboxed program; the worker itself never loads it."""
    prog = ("def execute_command(image):\n"
            "    return llm_query('What colour is the sky?', long_answer=False)\n")
    # A generous limit: a CPU language model on a loaded 2-core machine is slow.
    with ToolHost("shapes-cv", local=True) as host, \
            Executor(workers=1, timeout_s=120, backend=host.spec) as ex:
        (result,) = ex.run([prog], [IMAGE])
    assert host.llm.name == "embedded:smollm2-135m-instruct"
    assert result.status == "ok" and result.answer
