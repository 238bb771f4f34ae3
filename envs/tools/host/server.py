"""The tool host: heavy perception models and the text LLM live here, outside the sandbox.

Sandbox workers get only a socket (``Executor(backend=host.spec)``; see host_client.py).
The host reads requests from every worker, waits ``batch_window_s`` for more to arrive
(ViperGPT batches its GPU models the same way), groups them by method, and answers each
group with one batched backend call when the backend offers ``batch_<method>(views,
args_list)``.  Requests are validated in requests.py: workers may run hostile code.

    with ToolHost("hf", {"detector": "google/owlv2-base-patch16"}) as host, \\
            Executor(backend=host.spec) as ex:
        ex.run(programs, images)

Run it as its own process with ``python -m envs.tools.host --backend hf --socket PATH``.
"""
from __future__ import annotations

import os
import queue
import shutil
import socket
import tempfile
import threading
import time

from envs.common.lru import LRU
from envs.tools.backend import Backend
from envs.tools.host.requests import NeedImage, jsonable, parse_request
from envs.tools.host_client import PREFIX, FrameReader, encode
from envs.tools.registry import get_backend
from policies import DEFAULT_MODEL
from policies.text_lm import TextLM

DEFAULT_LLM = DEFAULT_MODEL


class ToolHost:
    """Serves one Backend (and optionally a text LLM for ``llm_query``) on a Unix socket.

    backend: registry name (built with ``backend_kwargs``) or a Backend instance.
    llm: model name for ``policies.model.load_model`` (default: the embedded SmolLM2),
        an object with ``batch(questions, long_answers) -> list[str]``, a callable
        ``question -> str``, or None (llm_query then raises in the program).
    local: serve only ``llm_query``; workers run the (light, named) backend themselves.
    """

    def __init__(self, backend="hf", backend_kwargs: dict | None = None, llm=DEFAULT_LLM, *,
                 socket_path: str | None = None, local: bool = False,
                 batch_window_s: float = 0.005, max_batch: int = 64, cache_size: int = 20000,
                 image_cache: int = 256):
        if local and not isinstance(backend, str):
            raise ValueError("local=True needs a backend name that workers can build")
        self.backend_name = backend if isinstance(backend, str) else backend.name
        self.local = local
        self.backend: Backend | None = None
        if not local:
            if isinstance(backend, str):
                backend = get_backend(backend, **(backend_kwargs or {}))
            self.backend = backend
        if isinstance(llm, str):
            llm = TextLM(llm)
        self.llm = llm
        self.batch_window_s = batch_window_s
        self.max_batch = max_batch
        self._tmpdir = None
        if socket_path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="vprl-host-")  # 0700: only our uid
            socket_path = os.path.join(self._tmpdir, "tools.sock")
        self.socket_path = socket_path
        self._cache = LRU(max_items=cache_size)  # (method, image, box, args) -> result
        self._images = LRU(max_items=image_cache)  # digest -> full image
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._conns: set = set()
        self._threads: list = []
        self._listener = None
        self.stats = {"requests": 0, "batches": 0, "backend_calls": 0, "cache_hits": 0}

    @property
    def spec(self) -> str:
        """What to pass as ``Executor(backend=...)`` / ``build_namespace(...)``."""
        return PREFIX + self.socket_path + (f"#{self.backend_name}" if self.local else "")

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> "ToolHost":
        if hasattr(self.llm, "load"):  # now, not on the first request (which would time out)
            self.llm.load()
        _remove_stale_socket(self.socket_path)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.socket_path)
        self._listener.listen(256)
        self._listener.settimeout(0.2)  # so close() is noticed
        for target in (self._accept_loop, self._batch_loop):
            thread = threading.Thread(target=target, daemon=True, name=f"tool-host-{target.__name__}")
            thread.start()
            self._threads.append(thread)
        return self

    def close(self) -> None:
        self._stop.set()
        for sock in [self._listener, *list(self._conns)]:
            if sock is not None:
                try:  # shutdown wakes workers blocked on recv: they see EOF at once
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
        for thread in self._threads:
            thread.join(timeout=2)
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        elif os.path.exists(self.socket_path):
            os.unlink(self.socket_path)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ network
    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(2.0)  # a worker that stops reading cannot stall the batcher long
            self._conns.add(conn)
            lock = threading.Lock()
            threading.Thread(target=self._read_loop, args=(conn, lock), daemon=True).start()

    def _read_loop(self, conn, lock):
        reader = FrameReader()
        try:
            while not self._stop.is_set():
                try:
                    chunk = conn.recv(1 << 16)
                except socket.timeout:
                    continue
                if not chunk:
                    break
                for header, blob in reader.feed(chunk):
                    if header.get("method") == "hello":  # no model involved: answer now
                        self._reply(conn, lock, header.get("id"),
                                    {"result": "ok", "backend": self._cache_key()})
                    else:
                        self._queue.put((conn, lock, header, blob))
        except (OSError, ValueError):
            pass  # a dead or misbehaving worker: drop its connection
        self._conns.discard(conn)
        conn.close()

    def _reply(self, conn, lock, rid, body: dict) -> None:
        body["id"] = rid
        try:
            with lock:
                conn.sendall(encode(body))
        except OSError:
            self._conns.discard(conn)

    # ----------------------------------------------------------------- batching
    def _batch_loop(self):
        while not self._stop.is_set():
            try:
                batch = [self._queue.get(timeout=0.2)]
            except queue.Empty:
                continue
            deadline = time.monotonic() + self.batch_window_s
            while len(batch) < self.max_batch:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    batch.append(self._queue.get(timeout=remaining))
                except queue.Empty:
                    break
            self._handle(batch)

    def _handle(self, batch: list) -> None:
        self.stats["batches"] += 1
        groups: dict = {}  # method -> {cache key: (view, args, [(conn, lock, id)])}
        for conn, lock, header, blob in batch:
            self.stats["requests"] += 1
            rid = header.get("id")
            try:
                method, view, args = parse_request(header, blob, self._images,
                                                   vision=self.backend is not None)
            except NeedImage:
                self._reply(conn, lock, rid, {"need_image": True})
                continue
            except (ValueError, TypeError, KeyError) as exc:
                self._reply(conn, lock, rid, {"error": f"bad tool request: {exc}"})
                continue
            key = (method, view.digest if view else None, view.box if view else None, args)
            if key in self._cache:
                self.stats["cache_hits"] += 1
                self._reply(conn, lock, rid, {"result": self._cache.get(key)})
                continue
            entry = groups.setdefault(method, {}).setdefault(key, (view, args, []))
            entry[2].append((conn, lock, rid))
        for method, calls in groups.items():
            keys = list(calls)
            outcomes = self._compute(method, [calls[k][0] for k in keys],
                                     [calls[k][1] for k in keys])
            for key, (ok, value) in zip(keys, outcomes):
                if ok:
                    self._cache.put(key, value)
                body = {"result": value} if ok else {"error": value}
                for conn, lock, rid in calls[key][2]:
                    self._reply(conn, lock, rid, dict(body))

    def _compute(self, method: str, views: list, args_list: list) -> list:
        """[(ok, json value or error message)] per call; one batched call when possible."""
        if method == "llm_query":
            target, batched = self.llm, getattr(self.llm, "batch", None)
            if target is None:
                return [(False, "llm_query has no LLM: start the ToolHost with llm=<model "
                                "name or callable>")] * len(args_list)
            single = (lambda _view, q, _long: target(q)) if callable(target) else None
            if batched is not None:
                batched_fn = lambda _views, a: batched([x[0] for x in a], [x[1] for x in a])
            else:
                batched_fn = None
        else:
            batched_fn = getattr(self.backend, f"batch_{method}", None)
            single = getattr(self.backend, method)
        if batched_fn is not None and len(args_list) > 1:
            try:
                self.stats["backend_calls"] += 1
                return [(True, jsonable(v)) for v in batched_fn(views, args_list)]
            except Exception:
                pass  # answer one by one so each request gets its own error
        outcomes = []
        for view, args in zip(views, args_list):
            self.stats["backend_calls"] += 1
            try:
                value = batched_fn([view], [args])[0] if batched_fn else single(view, *args)
                outcomes.append((True, jsonable(value)))
            except Exception as exc:  # the program sees the tool's message as runtime_error
                outcomes.append((False, str(exc) or type(exc).__name__))
        return outcomes

    def _cache_key(self) -> str:
        return self.backend.cache_key if self.backend is not None else self.backend_name


def _remove_stale_socket(path: str) -> None:
    """A host that was killed leaves its socket file behind; a new host on the same path
    (so workers reconnect without a restart) takes it over once nobody answers there."""
    if not os.path.exists(path):
        return
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        os.unlink(path)
    except OSError:
        pass  # not a socket, or not ours to judge: bind reports it
    else:
        raise OSError(f"a tool host is already serving {path}")
    finally:
        probe.close()


def main(argv=None) -> int:
    import argparse
    import json
    import signal

    parser = argparse.ArgumentParser(description="Serve vprl tools to sandbox workers.")
    parser.add_argument("--backend", default="hf")
    parser.add_argument("--backend-kwargs", default="{}", help="JSON object")
    parser.add_argument("--llm", default=DEFAULT_LLM, help="model name, or 'none'")
    parser.add_argument("--socket", required=True)
    args = parser.parse_args(argv)
    host = ToolHost(args.backend, json.loads(args.backend_kwargs),
                    None if args.llm == "none" else args.llm, socket_path=args.socket).start()
    print(host.spec, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    host.close()
    return 0
