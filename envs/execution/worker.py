"""Sandbox worker process: ``python -m envs.execution.worker``.

Lifecycle: read the config frame, warm up (imports, one tools namespace), lock
itself down (lockdown.apply), report ready, then serve requests until stdin
closes. Protocol file descriptors are duplicated away from 0/1 so nothing a
program or a library prints can corrupt the stream.
"""
from __future__ import annotations

import importlib
import marshal
import os
import pickle
import resource
import sys
import traceback
import warnings


def resolve_factory(spec: str):
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
    return factory


def _warm_up(config: dict):
    from . import policy, runtime

    for name in sorted(policy.ALLOWED_MODULES):  # nothing to import after lockdown
        importlib.import_module(name)
    factory = resolve_factory(config["namespace_factory"])
    namespace = factory(config["backend"])
    if not isinstance(namespace, dict):
        raise RuntimeError(f"{config['namespace_factory']} returned {type(namespace).__name__}, "
                           "expected a dict of program globals")
    guard = runtime.ClassGuard(namespace)
    # Run the restricted machinery once so lazy imports inside it happen now.
    report = policy.check_program("def execute_command(image):\n    return 1\n")
    runtime.run_program(report, namespace, None, "execute_command", runtime.SoftTimer(),
                        1.0, None, None)
    return factory, guard


def serve(in_fd: int, out_fd: int) -> int:
    from . import protocol

    config = pickle.loads(protocol.read_frame(in_fd))
    warnings.simplefilter("ignore")  # warnings would read source files and print
    try:
        factory, guard = _warm_up(config)
        from . import images, lockdown, runtime

        layers, lockdown_warnings = (lockdown.apply(config["memory_mb"], config["parent_pid"])
                                     if config["lockdown"] else ([], ["lockdown disabled"]))
        timer = runtime.SoftTimer()
    except BaseException as exc:  # noqa: B036 - report every startup failure to the parent
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        protocol.send_json(out_fd, {"fatal": detail})
        return 1
    protocol.send_json(out_fd, {"ready": True, "pid": os.getpid(), "layers": layers,
                                "warnings": lockdown_warnings})
    cache = images.ImageLRU()
    # Retire the worker before slow leaks (tool caches, heap fragmentation) can
    # turn into memory errors charged to innocent programs.
    rss_limit_kb = _peak_rss_kb() + (config["memory_mb"] or 4096) * 1024 // 2
    served = 0
    while True:
        frame = protocol.read_frame(in_fd)
        if frame is None:
            return 0
        request = pickle.loads(frame)
        key = request["image_key"]
        if request.get("image") is not None:
            image = request["image"]
            cache.put(key, image.nbytes, image)
        image = cache.get(key)
        if image is None:
            protocol.send_json(out_fd, {"id": request["id"], "need_image": key})
            continue
        try:
            report = _Report(marshal.loads(request["code"]), request["mutates_attributes"])
            outcome = runtime.run_program(
                report, factory(config["backend"]), image.copy(), request["entry"], timer,
                config["timeout_s"], config["cpu_time_s"], guard)
        except BaseException as exc:  # noqa: B036 - a failure outside the program itself
            outcome = {"status": "runtime_error", "answer": None, "raw_type": None,
                       "error": f"Error: sandbox failure: {type(exc).__name__}: {exc}",
                       "duration_s": 0.0, "stdout": ""}
        outcome["id"] = request["id"]
        served += 1
        # After a memory blow-up the heap may stay fragmented: hand back a fresh worker.
        outcome["recycle"] = (outcome["status"] == "memory_limit"
                              or served >= config["max_tasks_per_worker"]
                              or _peak_rss_kb() > rss_limit_kb)
        protocol.send_json(out_fd, outcome)
        if outcome["recycle"]:
            return 0


def _peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class _Report:
    __slots__ = ("code", "mutates_attributes")

    def __init__(self, code, mutates_attributes):
        self.code = code
        self.mutates_attributes = mutates_attributes


def main() -> int:
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    return serve(in_fd, out_fd)


if __name__ == "__main__":
    sys.exit(main())
