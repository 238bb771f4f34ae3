"""Executor: runs (program, image) pairs on a warm pool of sandboxed workers.

The parent never runs untrusted code. It checks each program's text
(policy.py), sends the compiled code and the image to an idle worker, and waits
with a deadline; a worker that overruns is SIGKILLed and replaced. Results are
memoised per (program, image content, entry), so several reward functions
reading the same completion pay for one execution.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import pickle
import selectors
import threading
import time
from collections import OrderedDict, deque
from dataclasses import replace

from .images import image_key, to_array
from .policy import check_program
from .results import ExecutionResult, format_error
from .workers import WorkerHandle

DEFAULT_NAMESPACE_FACTORY = "envs.tools:build_namespace"
# Time beyond timeout_s before the parent kills a worker: the worker's own soft
# timer normally answers first, and keeping it alive avoids a cold restart.
KILL_GRACE_S = 1.0
STARTUP_TIMEOUT_S = 120.0
MAX_ATTEMPTS = 2  # a task whose worker dies before running it is retried once


class ExecutorError(RuntimeError):
    """The sandbox itself cannot run (workers fail to start), as opposed to a program failing."""


class Executor:
    def __init__(self, timeout_s: float = 5.0, memory_mb: int | None = 1024, workers: int = 2,
                 backend: str = "shapes-cv", cpu_time_s: float | None = None, cache: bool = True,
                 *, namespace_factory: str | None = None, lockdown: bool = True,
                 cache_size: int = 50_000, debug: bool = False):
        if timeout_s <= 0 or workers < 1:
            raise ValueError("timeout_s must be > 0 and workers >= 1")
        self.timeout_s = float(timeout_s)
        self.workers = int(workers)
        self.config = {
            "namespace_factory": namespace_factory or DEFAULT_NAMESPACE_FACTORY,
            "backend": backend, "memory_mb": memory_mb, "timeout_s": self.timeout_s,
            "cpu_time_s": cpu_time_s if cpu_time_s is not None else self.timeout_s,
            "lockdown": lockdown, "parent_pid": os.getpid(),
        }
        self.cache_enabled = cache
        self.cache_size = cache_size
        self._cache: OrderedDict = OrderedDict()
        self._checks: OrderedDict = OrderedDict()  # program hash -> policy verdict
        self._debug = debug
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._pool: list[WorkerHandle] = []
        self._ever_ready = False
        self._closed = False
        self.stats = {"executed": 0, "cache_hits": 0, "timeouts_killed": 0, "worker_restarts": 0}
        self.sandbox_layers: list[str] = []
        self.sandbox_warnings: list[str] = []
        self._pool = [self._spawn() for _ in range(self.workers)]  # start warming now

    # ------------------------------------------------------------------ public
    def run(self, programs: list[str], images: list, entry: str = "execute_command",
            progress: bool = False) -> list[ExecutionResult]:
        if len(programs) != len(images):
            raise ValueError(f"run() needs one image per program, got {len(programs)} programs "
                             f"and {len(images)} images")
        if self._closed:
            raise ExecutorError("this Executor is closed; create a new one")
        if os.getpid() != self._pid:
            raise ExecutorError("an Executor cannot be used after fork; create one in this process")
        with self._lock:
            return self._run(list(programs), list(images), entry, progress)

    def close(self) -> None:
        self._closed = True
        for worker in self._pool:
            worker.kill()
        self._pool = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if not self._closed and os.getpid() == self._pid:
                self.close()
        except Exception:
            pass

    # --------------------------------------------------------------- batching
    def _run(self, programs, images, entry, progress):
        n = len(programs)
        results: list[ExecutionResult | None] = [None] * n
        arrays: dict[str, object] = {}
        by_id: dict[int, str] = {}   # the same image object is hashed once per call
        tasks: dict[tuple, list[int]] = {}
        for i, (program, image) in enumerate(zip(programs, images)):
            if not isinstance(program, str):
                raise TypeError(f"programs[{i}] is {type(program).__name__}, expected str")
            ikey = by_id.get(id(image))
            if ikey is None:
                array = to_array(image)
                ikey = image_key(array)
                by_id[id(image)] = ikey
                arrays.setdefault(ikey, array)
            pkey = hashlib.blake2b(program.encode(), digest_size=16).hexdigest()
            key = (pkey, ikey, entry)
            cached = self._cache.get(key) if self.cache_enabled else None
            if cached is not None:
                self._cache.move_to_end(key)
                self.stats["cache_hits"] += 1
                results[i] = replace(cached)
                continue
            verdict = self._check(pkey, program)
            if isinstance(verdict, ExecutionResult):
                results[i] = replace(verdict)
                self._remember(key, verdict)
                continue
            tasks.setdefault(key, []).append(i)
        if tasks:
            bar = _progress_bar(len(tasks)) if progress else None
            done = self._dispatch(tasks, arrays, entry, bar)
            for key, result in done.items():
                self._remember(key, result)
                for i in tasks[key]:
                    results[i] = replace(result)
            if bar is not None:
                bar.close()
        return results  # type: ignore[return-value]

    def _check(self, pkey, program):
        verdict = self._checks.get(pkey)
        if verdict is None:
            report = check_program(program)
            if report.status is not None:
                message = report.message + (f" (line {report.line})" if report.line else "")
                verdict = ExecutionResult(report.status, None, format_error(message), 0.0, None)
            else:
                verdict = (marshal.dumps(report.code), report.mutates_attributes)
            self._checks[pkey] = verdict
            if len(self._checks) > self.cache_size:
                self._checks.popitem(last=False)
        return verdict

    def _remember(self, key, result):
        if self.cache_enabled:
            self._cache[key] = result
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    # --------------------------------------------------------------- dispatch
    def _dispatch(self, tasks, arrays, entry, bar):
        queue = deque(tasks)
        attempts = dict.fromkeys(tasks, 0)
        done: dict[tuple, ExecutionResult] = {}
        selector = selectors.DefaultSelector()
        registered: set[int] = set()
        try:
            while queue or any(w.state == "busy" for w in self._pool):
                for worker in self._pool:
                    if worker.read_fd not in registered and worker.state != "dead":
                        selector.register(worker.read_fd, selectors.EVENT_READ, worker)
                        registered.add(worker.read_fd)
                for worker in self._pool:
                    if worker.state == "idle" and queue:
                        key = queue.popleft()
                        attempts[key] += 1
                        if not self._send_task(worker, key, arrays, entry):
                            self._lost(worker, key, queue, attempts, done, selector, registered)
                timeout = self._next_wakeup()
                for selkey, _ in selector.select(timeout):
                    self._on_readable(selkey.data, queue, attempts, done, arrays, entry,
                                      selector, registered, bar)
                self._enforce_deadlines(queue, attempts, done, selector, registered)
        finally:
            selector.close()
            for worker in self._pool:  # interrupted mid-batch: busy workers are unusable
                if worker.state == "busy":
                    self._replace(worker)
        return done

    def _send_task(self, worker, key, arrays, entry) -> bool:
        pkey, ikey, _ = key
        code, mutates = self._checks[pkey]
        cached = worker.images.get(ikey) is not None
        array = arrays[ikey]
        payload = pickle.dumps({
            "id": pkey + ikey, "code": code, "mutates_attributes": mutates,
            "image_key": ikey, "image": None if cached else array, "entry": entry,
        }, protocol=pickle.HIGHEST_PROTOCOL)
        worker.images.put(ikey, array.nbytes)
        worker.task = key
        worker.state = "busy"
        worker.deadline = time.monotonic() + self.timeout_s + KILL_GRACE_S
        return worker.send(payload, worker.deadline)

    def _next_wakeup(self):
        now = time.monotonic()
        times = [w.deadline for w in self._pool if w.state == "busy"]
        times += [w.started_at + STARTUP_TIMEOUT_S for w in self._pool if w.state == "starting"]
        return max(0.0, min(times) - now) if times else 1.0

    def _on_readable(self, worker, queue, attempts, done, arrays, entry, selector, registered, bar):
        try:
            frames = worker.read()
        except ValueError:  # malformed reply: treat the worker as compromised
            frames = None
        if frames is None:
            self._lost(worker, worker.task, queue, attempts, done, selector, registered)
            return
        for frame in frames:
            if worker.state == "starting":
                self._on_startup_frame(worker, frame, selector, registered)
            elif "need_image" in frame and worker.state == "busy":
                worker.images.items.pop(worker.task[1], None)
                if not self._send_task(worker, worker.task, arrays, entry):
                    self._lost(worker, worker.task, queue, attempts, done, selector, registered)
            elif worker.state == "busy":
                done[worker.task] = ExecutionResult.from_dict(frame)
                self.stats["executed"] += 1
                if bar is not None:
                    bar.update(1)
                worker.task, worker.deadline = None, None
                worker.state = "idle"
                if frame.get("recycle"):
                    self._replace(worker, selector, registered)
                    return

    def _on_startup_frame(self, worker, frame, selector, registered):
        if frame.get("ready"):
            worker.state = "idle"
            worker.info = frame
            self._ever_ready = True
            self.sandbox_layers = list(frame.get("layers") or [])
            self._warn_once(frame.get("warnings") or [])
            return
        message = frame.get("fatal", "unknown startup failure")
        self._unregister(worker, selector, registered)
        worker.kill()
        raise ExecutorError(f"sandbox worker failed to start: {message}")

    def _warn_once(self, messages):
        import warnings

        for message in messages:
            if message not in self.sandbox_warnings:
                self.sandbox_warnings.append(message)
                warnings.warn(f"vprl sandbox: {message}", RuntimeWarning, stacklevel=4)

    def _enforce_deadlines(self, queue, attempts, done, selector, registered):
        now = time.monotonic()
        for worker in list(self._pool):
            if worker.state == "busy" and now >= worker.deadline:
                key = worker.task
                self.stats["timeouts_killed"] += 1
                done[key] = ExecutionResult(
                    "timeout", None,
                    format_error(f"Timeout: the program ran longer than {self.timeout_s:g} s"),
                    self.timeout_s + KILL_GRACE_S, None)
                self._replace(worker, selector, registered)
            elif worker.state == "starting" and now >= worker.started_at + STARTUP_TIMEOUT_S:
                self._replace(worker, selector, registered)
                raise ExecutorError(f"sandbox worker did not start within {STARTUP_TIMEOUT_S:g} s")

    def _lost(self, worker, key, queue, attempts, done, selector, registered):
        """The worker died (or sent garbage). Its task is retried once, then fails."""
        was_starting = worker.state == "starting"
        how = worker.exit_description()
        self._replace(worker, selector, registered)
        if was_starting:
            if not self._ever_ready:
                raise ExecutorError(f"sandbox worker {how} during start-up; run with "
                                    "Executor(debug=True) to see its stderr")
            return
        if key is None:
            return  # an idle worker exited on its own (recycling): nothing lost
        if attempts[key] < MAX_ATTEMPTS:
            # Maybe not the program's fault (killed from outside, OOM killer):
            # one more try on a fresh worker tells the two apart.
            queue.appendleft(key)
            return
        done[key] = ExecutionResult(
            "runtime_error", None,
            format_error(f"the program crashed the sandbox worker (it {how})"), 0.0, None)

    def _unregister(self, worker, selector, registered):
        if selector is not None and worker.read_fd in registered:
            selector.unregister(worker.read_fd)
            registered.discard(worker.read_fd)

    def _replace(self, worker, selector=None, registered=None):
        self._unregister(worker, selector, registered)
        worker.kill()
        self.stats["worker_restarts"] += 1
        if not self._closed and worker in self._pool:
            self._pool[self._pool.index(worker)] = self._spawn()

    def _spawn(self) -> WorkerHandle:
        return WorkerHandle(self.config, debug=self._debug)


def _progress_bar(total):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="executing programs", unit="prog")
