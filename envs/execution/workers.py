"""Parent-side handles: the zygote process and the children it forks."""
from __future__ import annotations

import json
import os
import pickle
import secrets
import select
import signal
import socket
import subprocess
import sys
import time

from envs.common.lru import LRU

from .protocol import FrameBuffer, ProtocolViolation, encode

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CTL_MESSAGE = 1 << 16
CHILD_IMAGE_CACHE_BYTES = 32 << 20


# Environment variables a worker inherits: what Python, numeric libraries and
# model backends read. Everything else (API keys, tokens, cloud credentials) is
# dropped, so even a program that escaped every other layer finds no secrets.
_ENV_PREFIXES = ("PATH", "HOME", "LANG", "LC_", "TZ", "PYTHON", "VIRTUAL_ENV", "HF_",
                 "TRANSFORMERS_", "TORCH", "CUDA_", "NVIDIA_", "OMP_", "MKL_", "OPENBLAS_",
                 "VPRL_", "TMPDIR", "XDG_CACHE_HOME", "LD_LIBRARY_PATH")
_ENV_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")


# A sandbox process enters envs.execution through a bare `envs` package whose
# __init__ never runs: that __init__ registers the Gymnasium environments (loading
# gymnasium), and a process that runs hostile code loads nothing above the sandbox.
_BOOT = ("import importlib.util, runpy, sys\n"
         "root, module = sys.argv.pop(1), sys.argv.pop(1)\n"
         "spec = importlib.util.spec_from_file_location(\n"
         "    'envs', root + '/__init__.py', submodule_search_locations=[root])\n"
         "sys.modules['envs'] = importlib.util.module_from_spec(spec)\n"
         "runpy.run_module(module, run_name='__main__', alter_sys=True)\n")


def sandbox_command(module: str, *args: str) -> list[str]:
    """The command line that runs ``module`` (one of envs.execution's) as a sandbox
    process: without user site-packages and without the rest of ``envs``."""
    return [sys.executable, "-s", "-c", _BOOT, os.path.join(_PACKAGE_ROOT, "envs"), module, *args]


def worker_env() -> dict:
    env = {name: value for name, value in os.environ.items()
           if name.startswith(_ENV_PREFIXES)
           and not any(word in name.upper() for word in _ENV_SECRET_WORDS)}
    # One thread per library per worker: the pool is the parallelism, every extra
    # thread reserves address space that would count against RLIMIT_AS, and the
    # zygote must be single-threaded to fork safely.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[var] = "1"
    env["MALLOC_ARENA_MAX"] = "2"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    extra = [p for p in sys.path if p and os.path.isdir(p) and not p.startswith(sys.prefix)]
    paths = [_PACKAGE_ROOT] + extra + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


class ZygoteHandle:
    """The warmed-up process children are forked from. States: starting -> ready; dead."""

    def __init__(self, config: dict, debug: bool = False):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                sandbox_command("envs.execution.zygote", str(theirs.fileno())),
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=None if debug else subprocess.DEVNULL,
                cwd=_PACKAGE_ROOT, env=worker_env(), start_new_session=True)
        finally:
            theirs.close()
        self.sock = ours
        self.sock.settimeout(5.0)  # sends only; reads happen after select says readable
        self.state = "starting"
        self.started_at = time.monotonic()
        self.info: dict = {}
        self.send(config)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: dict, fds: tuple = ()) -> bool:
        try:
            socket.send_fds(self.sock, [pickle.dumps(message)], list(fds))
        except OSError:
            return False
        return True

    def spawn(self, token: int) -> "ChildHandle | None":
        """Ask for a child; its pipes are made here, so only this process holds the far ends."""
        req_r, req_w = os.pipe2(os.O_CLOEXEC)
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        try:
            sent = self.send({"op": "spawn", "token": token}, (req_r, rep_w))
        finally:
            os.close(req_r)
            os.close(rep_w)
        if not sent:
            os.close(req_w)
            os.close(rep_r)
            return None
        return ChildHandle(token, req_w, rep_r)

    def kill_child(self, token: int) -> None:
        self.send({"op": "kill", "token": token})

    def messages(self) -> tuple[list[dict], bool]:
        """(messages available now, whether the zygote has gone)."""
        out = []
        while select.select([self.sock], [], [], 0)[0]:
            try:
                data = self.sock.recv(_CTL_MESSAGE)
                message = json.loads(data) if data else None
            except (OSError, ValueError):
                return out, True
            if message is None:
                return out, True
            if isinstance(message, dict):
                out.append(message)
        return out, False

    def close(self, wait_s: float = 2.0) -> None:
        """Ask the zygote to stop (it kills and reaps its children), then make sure."""
        if self.state == "dead":
            return
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
            self.proc.wait(timeout=wait_s)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def kill(self) -> None:
        """SIGKILL the zygote and, through its process group, every child."""
        if self.state == "dead":
            return
        self.state = "dead"
        for kill in (lambda: os.killpg(self.proc.pid, signal.SIGKILL), self.proc.kill):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
        self.sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class ChildHandle:
    """One forked child. States: spawning -> idle <-> busy; dead once gone.

    ``deadline`` is absolute: set when a program is sent, never moved by anything the
    child does. ``request_id`` is the id the one acceptable reply must carry."""

    def __init__(self, token: int, write_fd: int, read_fd: int):
        self.token = token
        self.pid: int | None = None
        self.write_fd = write_fd
        self.read_fd = read_fd
        os.set_blocking(self.read_fd, False)
        self.buffer = FrameBuffer()
        self.state = "spawning"
        self.task = None
        self.request_id: str | None = None
        self.deadline: float | None = None
        self.sent_at: float | None = None
        self.how: str | None = None  # how it ended, from the zygote
        self.images = LRU(max_bytes=CHILD_IMAGE_CACHE_BYTES)  # mirror of the child's image cache
        self.nonce = secrets.token_hex(8)  # request ids: this nonce and a counter

    def send(self, payload: bytes, deadline: float) -> bool:
        """Write one frame without risking a hang on a child that stopped reading."""
        view = memoryview(encode(payload))
        os.set_blocking(self.write_fd, False)
        try:
            while view:
                try:
                    view = view[os.write(self.write_fd, view):]
                except BlockingIOError:
                    wait = max(0.0, deadline - time.monotonic())
                    if wait == 0.0:
                        return False
                    select.select([], [self.write_fd], [], wait)
        except OSError:
            return False
        return True

    def read(self) -> tuple[list[dict], bool]:
        """(frames available now, whether the child closed its end). Raises
        ProtocolViolation on bytes that are not well-formed frames."""
        frames = []
        while True:
            try:
                chunk = os.read(self.read_fd, 1 << 16)
            except BlockingIOError:
                return frames, False
            except OSError:
                return frames, True
            if not chunk:
                return frames, True
            frames.extend(self.buffer.feed(chunk))

    def close(self) -> None:
        self.state = "dead"
        for fd in (self.write_fd, self.read_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.write_fd = self.read_fd = -1


__all__ = ["ZygoteHandle", "ChildHandle", "ProtocolViolation", "worker_env"]
