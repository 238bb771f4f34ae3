"""Parent-side handle on one sandbox worker process."""
from __future__ import annotations

import os
import pickle
import select
import signal
import subprocess
import sys
import time

from .images import ImageLRU
from .protocol import FrameBuffer, encode

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# Environment variables a worker inherits: what Python, numeric libraries and
# model backends read. Everything else (API keys, tokens, cloud credentials) is
# dropped, so even a program that escaped every other layer finds no secrets.
_ENV_PREFIXES = ("PATH", "HOME", "LANG", "LC_", "TZ", "PYTHON", "VIRTUAL_ENV", "HF_",
                 "TRANSFORMERS_", "TORCH", "CUDA_", "NVIDIA_", "OMP_", "MKL_", "OPENBLAS_",
                 "VPRL_", "TMPDIR", "XDG_CACHE_HOME", "LD_LIBRARY_PATH")
_ENV_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")


def worker_env() -> dict:
    env = {name: value for name, value in os.environ.items()
           if name.startswith(_ENV_PREFIXES)
           and not any(word in name.upper() for word in _ENV_SECRET_WORDS)}
    # One thread per library per worker: the pool is the parallelism, and every
    # extra thread reserves address space that would count against RLIMIT_AS.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[var] = "1"
    env["MALLOC_ARENA_MAX"] = "2"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    extra = [p for p in sys.path if p and os.path.isdir(p) and not p.startswith(sys.prefix)]
    paths = [_PACKAGE_ROOT] + extra + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


class WorkerHandle:
    """States: starting -> idle <-> busy; dead once killed or exited."""

    def __init__(self, config: dict, debug: bool = False):
        self.proc = subprocess.Popen(
            [sys.executable, "-s", "-m", "envs.execution.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=None if debug else subprocess.DEVNULL,
            cwd=_PACKAGE_ROOT, env=worker_env(), start_new_session=True, close_fds=True)
        self.write_fd = self.proc.stdin.fileno()
        self.read_fd = self.proc.stdout.fileno()
        os.set_blocking(self.read_fd, False)
        self.buffer = FrameBuffer()
        self.state = "starting"
        self.started_at = time.monotonic()
        self.info: dict = {}
        self.task = None          # the task key being run
        self.deadline = None      # monotonic time after which the worker is killed
        self.images = ImageLRU()  # mirror of the worker's image cache
        self.send(pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, payload: bytes, deadline: float | None = None) -> bool:
        """Write one frame without risking a hang on a worker that stopped reading."""
        view = memoryview(encode(payload))
        os.set_blocking(self.write_fd, False)
        try:
            while view:
                try:
                    view = view[os.write(self.write_fd, view):]
                except BlockingIOError:
                    wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                    if wait == 0.0:
                        return False
                    select.select([], [self.write_fd], [], wait)
        except (BrokenPipeError, OSError):
            return False
        return True

    def read(self) -> list[dict] | None:
        """Frames available now; None when the worker closed its end (died or exited)."""
        frames = []
        while True:
            try:
                chunk = os.read(self.read_fd, 1 << 16)
            except BlockingIOError:
                return frames
            except OSError:
                return None if not frames else frames
            if not chunk:
                return None if not frames else frames
            frames.extend(self.buffer.feed(chunk))

    def kill(self) -> None:
        """SIGKILL: the one signal a program cannot trap or ignore."""
        if self.state == "dead":
            return
        self.state = "dead"
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def exit_description(self) -> str:
        code = self.proc.poll()
        if code is None:
            try:
                code = self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                return "stopped responding"
        if code < 0:
            try:
                return f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with code {code}"
