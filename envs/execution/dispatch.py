"""One batch on the worker pool: a single-threaded select loop in the parent.

Each worker gets one task at a time. The loop sleeps until a worker replies or
the earliest deadline passes; a worker past its deadline is SIGKILLed and
replaced (nothing inside the worker can delay that). A worker that dies is
replaced too, and its task is retried once before it is reported as a crash.
"""
from __future__ import annotations

import pickle
import selectors
import time
import warnings
from collections import deque

from .results import ExecutionResult, format_error

# Time beyond timeout_s before the parent kills a worker: the worker's own soft
# timer normally answers first, and keeping it alive avoids a cold restart.
KILL_GRACE_S = 1.0
STARTUP_TIMEOUT_S = 120.0
MAX_ATTEMPTS = 2


class ExecutorError(RuntimeError):
    """The sandbox itself cannot run (workers fail to start), as opposed to a program failing."""


class Batch:
    def __init__(self, executor, tasks, arrays, codes, entry, bar=None):
        self.ex = executor
        self.queue = deque(tasks)
        self.attempts = dict.fromkeys(tasks, 0)
        self.arrays = arrays
        self.codes = codes
        self.entry = entry
        self.bar = bar
        self.done: dict[tuple, ExecutionResult] = {}
        self.selector = selectors.DefaultSelector()
        self.registered: dict[int, object] = {}

    def run(self, until_ready: bool = False) -> dict:
        try:
            while self.queue or any(w.state == "busy" or (until_ready and w.state == "starting")
                                    for w in self.ex._pool):
                for worker in list(self.ex._pool):
                    if worker.state == "idle" and self.queue:
                        if worker.proc.poll() is not None:  # died while idle
                            self._lost(worker)
                            continue
                        key = self.queue.popleft()
                        if not self._send(worker, key):
                            # It never got the program, so this is no attempt of it.
                            self.attempts[key] -= 1
                            self._lost(worker)
                self._sync_selector()  # after sending: a failed send may have spawned a worker
                for selkey, _ in self.selector.select(self._next_wakeup()):
                    if selkey.data.state != "dead":
                        self._on_readable(selkey.data)
                self._enforce_deadlines()
        finally:
            self.selector.close()
            for worker in list(self.ex._pool):  # interrupted mid-batch: busy workers are unusable
                if worker.state == "busy":
                    self._replace(worker)
        return self.done

    # ------------------------------------------------------------------ plumbing
    def _sync_selector(self):
        live = {w.read_fd: w for w in self.ex._pool if w.state != "dead"}
        for fd, worker in list(self.registered.items()):
            if live.get(fd) is not worker:
                self.selector.unregister(fd)
                del self.registered[fd]
        for fd, worker in live.items():
            if fd not in self.registered:
                self.selector.register(fd, selectors.EVENT_READ, worker)
                self.registered[fd] = worker

    def _replace(self, worker):
        if worker.read_fd in self.registered and self.registered[worker.read_fd] is worker:
            self.selector.unregister(worker.read_fd)
            del self.registered[worker.read_fd]
        self.ex._replace(worker)

    def _send(self, worker, key) -> bool:
        pkey, ikey, _ = key
        code, mutates = self.codes[pkey]
        array = self.arrays[ikey]
        cached = worker.images.get(ikey) is not None
        payload = pickle.dumps({
            "id": pkey + ikey, "code": code, "mutates_attributes": mutates,
            "image_key": ikey, "image": None if cached else array, "entry": self.entry,
        }, protocol=pickle.HIGHEST_PROTOCOL)
        worker.images.put(ikey, array.nbytes)
        self.attempts[key] += 1
        worker.task = key
        worker.state = "busy"
        worker.deadline = time.monotonic() + self.ex.timeout_s + KILL_GRACE_S
        return worker.send(payload, worker.deadline)

    def _next_wakeup(self):
        times = [w.deadline for w in self.ex._pool if w.state == "busy"]
        times += [w.started_at + STARTUP_TIMEOUT_S for w in self.ex._pool if w.state == "starting"]
        return max(0.0, min(times) - time.monotonic()) if times else 1.0

    # ------------------------------------------------------------------ events
    def _on_readable(self, worker):
        try:
            frames = worker.read()
        except ValueError:  # malformed reply: treat the worker as compromised
            frames = None
        if frames is None:
            self._lost(worker)
            return
        for frame in frames:
            if worker.state == "starting":
                self._on_startup(worker, frame)
            elif worker.state != "busy":
                continue  # unsolicited frame from an idle worker: ignore it
            elif "need_image" in frame:
                worker.images.items.pop(worker.task[1], None)
                self.attempts[worker.task] -= 1  # the resend is the same attempt
                if not self._send(worker, worker.task):
                    self._lost(worker)
                    return
            else:
                self.done[worker.task] = ExecutionResult.from_dict(frame)
                self.ex.stats["executed"] += 1
                if self.bar is not None:
                    self.bar.update(1)
                worker.task, worker.deadline, worker.state = None, None, "idle"
                if frame.get("recycle"):
                    self._replace(worker)
                    return

    def _on_startup(self, worker, frame):
        if frame.get("ready"):
            worker.state = "idle"
            worker.info = frame
            self.ex._ever_ready = True
            self.ex.sandbox_layers = list(frame.get("layers") or [])
            for message in frame.get("warnings") or []:
                if message not in self.ex.sandbox_warnings:
                    self.ex.sandbox_warnings.append(message)
                    warnings.warn(f"vprl sandbox: {message}", RuntimeWarning, stacklevel=5)
            return
        message = frame.get("fatal", "unknown start-up failure")
        self._replace(worker)
        raise ExecutorError(f"sandbox worker failed to start: {message}")

    def _enforce_deadlines(self):
        now = time.monotonic()
        for worker in list(self.ex._pool):
            if worker.state == "busy" and now >= worker.deadline:
                self.ex.stats["timeouts_killed"] += 1
                self.done[worker.task] = ExecutionResult(
                    "timeout", None,
                    format_error(f"Timeout: the program ran longer than {self.ex.timeout_s:g} s"),
                    self.ex.timeout_s + KILL_GRACE_S, None)
                self._replace(worker)
            elif worker.state == "starting" and now >= worker.started_at + STARTUP_TIMEOUT_S:
                self._replace(worker)
                raise ExecutorError(f"sandbox worker did not start within {STARTUP_TIMEOUT_S:g} s")

    def _lost(self, worker):
        """The worker died (or sent garbage). Its task is retried once, then fails."""
        was_starting, key = worker.state == "starting", worker.task
        how = worker.exit_description()
        self._replace(worker)
        if was_starting:
            if not self.ex._ever_ready:
                raise ExecutorError(f"sandbox worker {how} during start-up; run with "
                                    "Executor(debug=True) to see its stderr")
            return
        if key is None:
            return  # an idle worker exited on its own (recycling): nothing lost
        if self.attempts[key] < MAX_ATTEMPTS:
            # Perhaps not the program's fault (killed from outside, OOM killer):
            # one more try on a fresh worker tells the two apart.
            self.queue.appendleft(key)
            return
        self.done[key] = ExecutionResult(
            "runtime_error", None,
            format_error(f"the program crashed the sandbox worker (it {how})"), 0.0, None)
