"""Executor: runs (program, image) pairs on a warm pool of sandboxed workers.

The parent never runs untrusted code. It checks each program's text (static_check.py),
sends the compiled code and the image to an idle child forked from a warmed-up
zygote, and waits with an absolute deadline; a child that overruns is SIGKILLed.
By default each child runs one program and exits, so no state crosses programs.
Results are memoised per (program, image content, entry), so several reward
functions reading the same completion pay for one execution.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import itertools
import threading
from dataclasses import replace

from envs.common.images import image_digest
from envs.common.lru import LRU

from .dispatch import Batch, ExecutorError
from .images import to_array
from .static_check import check_program
from .results import MAX_ERROR_CHARS, ExecutionResult, clean_text, format_error
from .workers import ZygoteHandle

DEFAULT_NAMESPACE_FACTORY = "envs.tools:build_namespace"
# Policy verdicts (with compiled code) kept for repeated programs, bounded in bytes:
# a few huge programs must not hold hundreds of megabytes.
_MAX_CHECKS, _MAX_CHECK_BYTES = 10_000, 64 << 20
_MAX_CACHE_BYTES = 256 << 20  # results: caps keep each one small, this bounds them all


class Executor:
    """A warm pool of sandboxed workers; see the package docstring for the layers.

    timeout_s: wall-clock limit per program. The worker's own timer answers at
        timeout_s; the parent SIGKILLs it at timeout_s + 1 s whatever it does.
    memory_mb: address-space budget per program on top of the warmed-up worker
        (RLIMIT_AS); exceeding it gives status memory_limit. None: no limit.
    workers: worker processes, started (warming) at construction.
    backend: passed to the namespace factory (``envs.tools.build_namespace``).
    cpu_time_s: CPU-time budget per program (RLIMIT_CPU, whole seconds);
        defaults to timeout_s.
    cache: memoise results per (program text, image content, entry).
    namespace_factory: "module:function" building program globals in the
        worker; default ``envs.tools:build_namespace``.
    lockdown: kernel confinement of workers; False only for debugging.
    max_tasks_per_worker: programs one child runs before it exits. Between two of
        them the child resets and verifies its state (hygiene.py) and retires itself
        when a program left anything behind; the zygote forks a clean replacement in
        milliseconds. 1 gives every program a fresh child: that also holds against a
        program that escapes the Python layers, for about 14x the CPU per program
        (docs/threat_model.md). A child is also replaced after a timeout, a memory
        error, or when its peak memory passes half the budget.
    debug: let workers write to this process's stderr.
    """

    def __init__(self, timeout_s: float = 5.0, memory_mb: int | None = 1024, workers: int = 2,
                 backend: str = "shapes-cv", cpu_time_s: float | None = None, cache: bool = True,
                 *, namespace_factory: str | None = None, lockdown: bool = True,
                 cache_size: int = 50_000, max_tasks_per_worker: int = 1000,
                 debug: bool = False):
        if timeout_s <= 0 or workers < 1:
            raise ValueError("timeout_s must be > 0 and workers >= 1")
        self.timeout_s = float(timeout_s)
        self.workers = int(workers)
        self.config = {
            "namespace_factory": namespace_factory or DEFAULT_NAMESPACE_FACTORY,
            "backend": backend, "memory_mb": memory_mb, "timeout_s": self.timeout_s,
            "cpu_time_s": cpu_time_s if cpu_time_s is not None else self.timeout_s,
            "lockdown": lockdown, "parent_pid": os.getpid(),
            "max_tasks_per_worker": max(1, int(max_tasks_per_worker)),
        }
        self.cache_enabled = cache
        self.cache_size = cache_size
        self._cache = LRU(max_items=cache_size, max_bytes=_MAX_CACHE_BYTES)
        self._checks = LRU(max_items=_MAX_CHECKS, max_bytes=_MAX_CHECK_BYTES)  # program hash -> verdict
        self._debug = debug
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._zygote: ZygoteHandle | None = None
        self._children: list = []
        self._tokens = itertools.count(1)
        self._zygote_starts = 0  # consecutive starts that have not become ready yet
        self._ever_ready = False
        self._ever_ran = False
        self._closed = False
        self.stats = {"executed": 0, "cache_hits": 0, "timeouts_killed": 0,
                      "worker_restarts": 0, "protocol_errors": 0, "zygote_starts": 0,
                      "children_spawned": 0, "children_retired": 0}
        self.sandbox_layers: list[str] = []
        self.sandbox_warnings: list[str] = []
        self._start_zygote()  # start warming now

    # ------------------------------------------------------------------ public
    def run(self, programs: list[str], images: list, entry: str = "execute_command",
            progress: bool = False) -> list[ExecutionResult]:
        if len(programs) != len(images):
            raise ValueError(f"run() needs one image per program, got {len(programs)} programs "
                             f"and {len(images)} images")
        if not (isinstance(entry, str) and entry.isidentifier() and not entry.startswith("_")):
            raise ValueError(f"entry must be a public function name, got {entry!r}")
        if self._closed:
            raise ExecutorError("this Executor is closed; create a new one")
        if os.getpid() != self._pid:
            raise ExecutorError("an Executor cannot be used after fork; create one in this process")
        with self._lock:
            return self._run(list(programs), list(images), entry, progress)

    def wait_ready(self) -> "Executor":
        """Block until every worker has warmed up (run() does not need this; it
        starts on whichever workers are ready). Raises ExecutorError if they cannot start."""
        with self._lock:
            Batch(self, {}, {}, {}, None).run(until_ready=True)
        return self

    @property
    def worker_pids(self) -> list[int]:
        """The zygote's pid and those of its live children."""
        pids = [] if self._zygote is None or self._zygote.state == "dead" else [self._zygote.pid]
        return pids + [c.pid for c in self._children if c.pid and c.state != "dead"]

    def close(self) -> None:
        self._closed = True
        for child in self._children:
            child.close()
        self._children = []
        if self._zygote is not None:
            self._zygote.close()

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
        codes: dict[str, tuple] = {}  # held here so cache eviction cannot drop them mid-batch
        for i, (program, image) in enumerate(zip(programs, images)):
            if type(program) is not str:
                if not isinstance(program, str):
                    raise TypeError(f"programs[{i}] is {type(program).__name__}, expected str")
                program = str.__str__(program)  # a str subclass could lie about its text
            ikey = by_id.get(id(image))
            if ikey is None:
                array = to_array(image)
                ikey = image_digest(array)
                by_id[id(image)] = ikey
                arrays.setdefault(ikey, array)
            # surrogatepass: a lone surrogate in a program is the program's problem (it
            # becomes its compile_error), never an exception that fails the batch.
            try:
                pkey = hashlib.blake2b(program.encode("utf-8", "surrogatepass"),
                                       digest_size=16).hexdigest()
            except Exception as exc:  # noqa: BLE001 - one program's text fails only itself
                results[i] = _refused("compile_error", "the program could not be read "
                                                       f"({type(exc).__name__})")
                continue
            key = (pkey, ikey, entry)
            cached = self._cache.get(key) if self.cache_enabled else None
            if cached is not None:
                self.stats["cache_hits"] += 1
                results[i] = replace(cached)
                continue
            try:
                verdict = self._check(pkey, program)
            except Exception as exc:  # noqa: BLE001 - one program's text fails only itself
                verdict = _refused("compile_error", "the program could not be prepared "
                                                    f"({type(exc).__name__})")
            if isinstance(verdict, ExecutionResult):
                results[i] = replace(verdict)
                self._remember(key, verdict)
                continue
            codes[pkey] = verdict
            tasks.setdefault(key, []).append(i)
        if tasks:
            bar = _progress_bar(len(tasks)) if progress else None
            done = Batch(self, tasks, arrays, codes, entry, bar).run()
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
                verdict = _refused(report.status, message)
                size = _result_bytes(verdict)
            else:
                verdict = (marshal.dumps(report.code), report.mutates_attributes)
                size = len(verdict[0]) + 100
            self._checks.put(pkey, verdict, size)
        return verdict

    def _remember(self, key, result):
        if self.cache_enabled:
            self._cache.put(key, result, _result_bytes(result))

    def _start_zygote(self) -> None:
        if self._zygote is not None:
            self._zygote.close()
        self._zygote = ZygoteHandle(self.config, debug=self._debug)
        self._zygote_starts += 1
        self.stats["zygote_starts"] += 1

    def _next_token(self) -> int:
        return next(self._tokens)


def _refused(status: str, message: str) -> ExecutionResult:
    # The message may quote the program (a SyntaxError's text): lone surrogates in it
    # must not make the result unwritable to JSON, W&B or a terminal.
    return ExecutionResult(status, None, clean_text(format_error(message), MAX_ERROR_CHARS),
                           0.0, None)


def _result_bytes(result: ExecutionResult) -> int:
    return 200 + sum(len(text or "") for text in (result.answer, result.error, result.stdout))


def _progress_bar(total):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="executing programs", unit="prog")
