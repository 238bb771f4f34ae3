"""The sandbox-side half of the tool host: a Backend that forwards every call over a socket.

A sandbox worker may not create sockets once it is locked down (seccomp denies
``socket``/``connect``), but ``send``/``recv`` on a socket it already holds stay allowed.
So the first ``build_namespace("host:PATH")`` call -- made during warm-up, before lockdown
-- connects, and every later call in that worker reuses the connection.  The worker never
holds a model object, only this socket; the host validates whatever arrives on it.

Wire format, both directions: ``!II`` (header length, blob length), a JSON header, then an
optional raw blob (an image's pixels).  JSON rather than pickle: the host must never
unpickle bytes written by a worker that may run hostile code.
"""
from __future__ import annotations

import json
import select
import signal
import socket
import struct
import threading
import time
from contextlib import contextmanager

import numpy as np

from envs.tools.backend import Backend, View
from envs.tools.registry import get_backend

PREFIX = "host:"
HEADER = struct.Struct("!II")
MAX_HEADER = 1 << 20
MAX_BLOB = 256 << 20
METHODS = ("find", "exists", "verify_property", "simple_query", "match_score", "describe",
           "answer", "llm_query")
_TIMER_SIGNALS = {signal.SIGALRM, signal.SIGXCPU}
_POLL_S = 0.05


def encode(header: dict, blob: bytes = b"") -> bytes:
    data = json.dumps(header, separators=(",", ":")).encode()
    return HEADER.pack(len(data), len(blob)) + data + blob


class FrameReader:
    """Accumulates bytes and yields complete (header, blob) frames; sizes are capped so a
    peer cannot make the reader allocate without bound."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, chunk: bytes) -> list:
        self.buffer += chunk
        frames = []
        while len(self.buffer) >= HEADER.size:
            n_head, n_blob = HEADER.unpack_from(self.buffer)
            if n_head > MAX_HEADER or n_blob > MAX_BLOB:
                raise ValueError(f"frame too large ({n_head} + {n_blob} bytes)")
            end = HEADER.size + n_head + n_blob
            if len(self.buffer) < end:
                break
            header = json.loads(bytes(self.buffer[HEADER.size:HEADER.size + n_head]))
            if not isinstance(header, dict):
                raise ValueError("frame header is not a JSON object")
            frames.append((header, bytes(self.buffer[HEADER.size + n_head:end])))
            del self.buffer[:end]
        return frames


@contextmanager
def _timers_blocked():
    """The sandbox's soft timer raises ProgramTimeout from a signal handler.  Raised in the
    middle of a send, it would leave half a frame on the stream and desynchronise it for
    every later program, so sends and buffer updates run with the timer signals held back;
    they are delivered (and the program stopped) right after."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _TIMER_SIGNALS)
    except (ValueError, OSError):  # not the main thread: signals cannot arrive here anyway
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class Connection:
    """One socket to the host, shared by every program a worker runs."""

    def __init__(self, path: str, timeout_s: float, hello_timeout_s: float = 5.0):
        self.path = path
        self.timeout_s = hello_timeout_s  # warm-up must not wait long on a stuck host
        self.lock = threading.Lock()
        self.reader = FrameReader()
        self.pending: dict = {}
        self.next_id = 0
        self.sent_images: set = set()
        self.error: str | None = None
        self.info: dict = {}
        try:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(hello_timeout_s)
            self.sock.connect(path)
            self.info = self.request({"method": "hello"})
            self.timeout_s = timeout_s
            self.sock.settimeout(timeout_s)
        except (OSError, RuntimeError) as exc:
            # Deferred: build_namespace must not fail (the worker would never start); each
            # tool call reports it instead, so programs get a runtime_error naming the cause.
            self.error = self.error or f"cannot reach the tool host at {path}: {exc}"

    def reopen(self) -> None:
        """A new socket for a freshly forked sandbox child. The inherited one stays the
        zygote's: two processes writing frames to one stream would interleave them, and a
        child killed mid-frame would desynchronise it for the next. The handshake's
        answer (``info``) is kept; request ids restart on the new stream."""
        old, self.sock = getattr(self, "sock", None), None
        if old is not None:
            old.close()  # this process's copy only; the zygote keeps its own
        self.reader, self.pending, self.next_id, self.sent_images = FrameReader(), {}, 0, set()
        if self.error:
            return
        try:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(self.timeout_s)
            self.sock.connect(self.path)
        except OSError as exc:
            self.error = f"cannot reach the tool host at {self.path}: {exc}"

    def request(self, header: dict, blob: bytes = b"") -> dict:
        with self.lock:
            if self.error:
                raise RuntimeError(self.error)
            self.next_id += 1
            rid = header["id"] = self.next_id
            frame = encode(header, blob)
            try:
                with _timers_blocked():
                    self.sock.sendall(frame)
            except OSError as exc:
                self._fail(f"tool host connection lost while sending ({exc})")
            deadline = time.monotonic() + self.timeout_s
            while rid not in self.pending:
                if time.monotonic() > deadline:
                    # A late reply to this id would be dropped by the id check; the stream
                    # itself is still in sync.
                    raise RuntimeError(f"tool host did not answer within {self.timeout_s:g} s")
                with _timers_blocked():
                    self._pump()
            reply = self.pending.pop(rid)
            self.pending.clear()  # replies to calls a timeout abandoned
            return reply

    def _pump(self):
        try:
            ready, _, _ = select.select([self.sock], [], [], _POLL_S)
            if not ready:
                return
            chunk = self.sock.recv(1 << 16)
        except OSError as exc:
            self._fail(f"tool host connection lost ({exc})")
        if not chunk:
            self._fail("tool host closed the connection (it stopped or crashed)")
        try:
            frames = self.reader.feed(chunk)
        except ValueError as exc:
            self._fail(f"bad reply from the tool host: {exc}")
        for header, _ in frames:
            self.pending[header.get("id")] = header

    def _fail(self, message: str):
        self.error = message
        try:
            self.sock.close()
        except OSError:
            pass
        raise RuntimeError(message)


_CONNECTIONS: dict = {}


def connections_healthy() -> bool:
    """False once any connection of this process has failed (the host died or sent
    garbage): a sandbox child then retires, and its replacement connects afresh."""
    return not any(conn.error for conn in _CONNECTIONS.values())


def reconnect_after_fork() -> None:
    """Give every connection of this (just forked) process a socket of its own."""
    for conn in _CONNECTIONS.values():
        conn.reopen()


def parse_spec(spec: str) -> tuple:
    """``host:PATH`` or ``host:PATH#LOCAL`` -> (PATH, LOCAL or None)."""
    if not spec.startswith(PREFIX) or len(spec) <= len(PREFIX):
        raise ValueError(f"a tool host spec looks like 'host:/path/to/socket', got {spec!r}")
    path, _, local = spec[len(PREFIX):].partition("#")
    return path, local or None


def connect(spec: str, timeout_s: float = 30.0, **local_kwargs) -> "HostClient":
    """A client for the host named by ``spec``; the connection is made once per process."""
    path, local = parse_spec(spec)
    conn = _CONNECTIONS.get(path)
    if conn is None:
        conn = _CONNECTIONS[path] = Connection(path, timeout_s)
    return HostClient(conn, local, **local_kwargs)


class HostClient(Backend):
    """Backend proxy: vision calls go to the host, or to a light in-worker backend when
    the spec names one (``host:PATH#shapes-cv`` only sends llm_query to the host)."""

    name = "host"

    def __init__(self, conn: Connection, local: str | None = None, **local_kwargs):
        self._conn = conn
        self._local = None
        if local:
            self._local = get_backend(local, **local_kwargs)

    @property
    def cache_key(self) -> str:
        if self._local is not None:
            return self._local.cache_key
        return "host:" + str(self._conn.info.get("backend", self._conn.path))

    def _call(self, method: str, view: View | None, *args):
        if self._local is not None and method != "llm_query":
            return getattr(self._local, method)(view, *args)
        header = {"method": method, "args": list(args)}
        if view is not None:
            header.update(digest=view.digest, shape=list(view.root.shape),
                          box=[int(v) for v in view.box])
        blob = b""
        if view is not None and view.digest in self._conn.sent_images:
            reply = self._conn.request(dict(header))
            if not reply.get("need_image"):
                return self._result(method, reply)
        if view is not None:
            blob = np.ascontiguousarray(view.root, dtype=np.uint8).tobytes()
        reply = self._conn.request(header, blob)
        if view is not None:
            if len(self._conn.sent_images) > 4096:  # the host's cache forgets too
                self._conn.sent_images.clear()
            self._conn.sent_images.add(view.digest)
        return self._result(method, reply)

    @staticmethod
    def _result(method: str, reply: dict):
        if "error" in reply:
            raise RuntimeError(str(reply["error"]))
        value = reply.get("result")
        if method == "find":
            return tuple(tuple(int(v) for v in box) for box in value)
        if method in ("exists", "verify_property"):
            return bool(value)
        if method == "match_score":
            return float(value)
        return str(value)

    def find(self, view, phrase):
        return self._call("find", view, phrase)

    def exists(self, view, phrase):
        return self._call("exists", view, phrase)

    def verify_property(self, view, object_name, prop):
        return self._call("verify_property", view, object_name, prop)

    def simple_query(self, view, question):
        return self._call("simple_query", view, question)

    def match_score(self, view, text):
        return self._call("match_score", view, text)

    def describe(self, view):
        return self._call("describe", view)

    def answer(self, view, question):
        return self._call("answer", view, question)

    def llm_query(self, question, long_answer=True):
        return self._call("llm_query", None, question, bool(long_answer))
