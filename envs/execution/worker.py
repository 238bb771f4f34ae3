"""The program-running half of the sandbox: warm-up (in the zygote) and one child's life.

A child is forked from the warmed-up zygote (zygote.py) and runs programs on the two
pipes the parent made for it: pickled requests in (the parent is trusted), JSON
replies out (the child runs untrusted code, so the parent validates every reply).
With the default ``max_tasks_per_worker=1`` a child runs exactly one program and
exits: every program starts from the same clean interpreter, and nothing it changes
(classes, caches, RNG seeds, numpy settings, threads, finalisers) reaches another.
"""
from __future__ import annotations

import gc
import importlib
import marshal
import os
import pickle
import resource
import traceback

from envs.common.lru import LRU

from . import protocol
from .workers import CHILD_IMAGE_CACHE_BYTES


def resolve_factory(spec: str):
    """(factory, module) for "module:attr". The module may also define
    ``reconnect_after_fork()``, which each child calls before its first program, and
    ``connections_healthy()``: a child for which it returns False retires (a tool host's
    client needs both: children must not share the zygote's socket, nor open new ones
    once locked down)."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RuntimeError(f"cannot import namespace factory module {module_name!r}: "
                           f"{exc}") from exc
    factory = getattr(module, attr or "build_namespace", None)
    if factory is None:
        raise RuntimeError(f"{module_name}.{attr} is missing: the sandbox needs a tools "
                           f"namespace factory (default envs.tools.build_namespace)")
    return factory, module


class Warm:
    """What the zygote prepares once and every child inherits."""

    def __init__(self, config: dict):
        from . import guards, library_state, numpy_guards, rules, runtime, static_check

        for name in sorted(rules.ALLOWED_MODULES):  # nothing to import after lockdown
            importlib.import_module(name)
        runtime.make_module_views()
        guards.patch_metaclasses()  # before the freeze makes the metaclasses immutable
        numpy_guards.withdraw_array_resize()
        self.config = config
        self.factory, module = resolve_factory(config["namespace_factory"])
        self.reconnect = getattr(module, "reconnect_after_fork", None)
        self.healthy = getattr(module, "connections_healthy", None)
        self.timer = runtime.SoftTimer()
        # Run the restricted machinery once so lazy imports inside it happen now.
        report = static_check.check_program("def execute_command(image):\n    return 1\n")
        runtime.run_program(report, self.fresh_namespace(), None, "execute_command",
                            self.timer, 1.0, None)
        # Before lockdown: reading every public attribute may import lazily.
        self.shared_state = library_state.SharedState(self.fresh_namespace())
        self.hygiene = None

    def freeze(self) -> None:
        """After lockdown, before the first fork: fix the state every child starts from."""
        from . import hygiene

        gc.collect()
        hygiene.freeze_classes()
        self.hygiene = hygiene.Hygiene(self.shared_state)
        # Objects that exist now are never collected: children then do not write to
        # (and copy) every page of the heap when their garbage collector runs.
        gc.freeze()

    def fresh_namespace(self) -> dict:
        namespace = self.factory(self.config["backend"])
        if not isinstance(namespace, dict):
            raise RuntimeError(f"{self.config['namespace_factory']} returned "
                               f"{type(namespace).__name__}, expected a dict of program globals")
        return namespace


def child_main(warm: Warm, req_fd: int, rep_fd: int, baseline_kb: int, zygote_pid: int,
               layers: list[str]) -> None:
    """Wait for the first program, lock the child down further, then serve programs until
    told to stop; never returns. The lock-down waits for the first request because it
    includes the connection to a tool host: a child forked ahead of need while the host
    was restarting must connect to the host that is there when it is used."""
    from . import lockdown

    try:
        lockdown.die_with_parent(zygote_pid)
        first = protocol.read_frame(req_fd)
        if first is None:
            os._exit(0)
        if warm.reconnect is not None:
            warm.reconnect()
        lockdown.apply_child(warm.config["memory_mb"], baseline_kb, zygote_pid, layers)
    except BaseException as exc:  # noqa: B036 - report every set-up failure to the parent
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        _send(rep_fd, {"fatal": f"sandbox child could not start: {detail}"})
        os._exit(1)
    try:
        serve(warm, req_fd, rep_fd, first)
    finally:
        os._exit(0)  # no interpreter teardown: no finaliser of a program runs after it


def serve(warm: Warm, req_fd: int, rep_fd: int, first: bytes | None = None) -> None:
    from . import runtime

    config = warm.config
    hygiene = warm.hygiene
    rss_limit_kb = _peak_rss_kb() + (config["memory_mb"] or 4096) * 1024 // 2
    served, outcome = 0, {}
    images = LRU(max_bytes=CHILD_IMAGE_CACHE_BYTES)  # the parent mirrors it: it never asks
    hygiene.start()
    while True:
        frame, first = first or protocol.read_frame(req_fd), None
        if frame is None:
            return
        request = pickle.loads(frame)
        rid, frame = request["id"], None
        try:
            if request["image"] is not None:
                images.put(request["image_key"], request["image"], request["image"].nbytes)
            image = images.get(request["image_key"])
            report = _Report(marshal.loads(request["code"]), request["mutates_attributes"])
            args = (runtime.run_program, report, warm.fresh_namespace(), image.copy(),
                    request["entry"], warm.timer, config["timeout_s"], config["cpu_time_s"])
            image = None
            request = None
            outcome = hygiene.run(*args)
        except BaseException as exc:  # noqa: B036 - a failure outside the program itself
            outcome = {"status": "runtime_error", "answer": None, "raw_type": None,
                       "error": f"Error: sandbox failure: {type(exc).__name__}",
                       "duration_s": 0.0, "stdout": ""}
        report = args = request = None
        served += 1
        # A child is retired after its quota, after a memory blow-up or a timeout (the
        # heap may stay fragmented, the program may have been stopped anywhere), once
        # its tool-host connection is broken, and when the program left state behind.
        last = (served >= config["max_tasks_per_worker"]
                or outcome["status"] in ("memory_limit", "timeout")
                or _peak_rss_kb() > rss_limit_kb
                or (warm.healthy is not None and not warm.healthy()))
        if not last:
            hygiene.reset()
            last = not hygiene.clean()
        _send(rep_fd, {"id": rid, "last": last, **outcome})
        if last:
            return


def _send(fd: int, reply: dict) -> None:
    try:
        protocol.send_json(fd, reply)
    except OSError:
        os._exit(1)  # the parent is gone or gave up on us


def _peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class _Report:
    __slots__ = ("code", "mutates_attributes")

    def __init__(self, code, mutates_attributes):
        self.code = code
        self.mutates_attributes = mutates_attributes
