"""Sandboxed execution of model-written visual programs.

    with Executor(timeout_s=5, memory_mb=1024, workers=2) as ex:
        results = ex.run(programs, images)   # one ExecutionResult per pair

Layers, outermost first: a static check of the program text (static_check.py); a
restricted runtime inside each worker (runtime.py); kernel confinement of each
worker (lockdown.py: network namespace, rlimits, no capabilities, Landlock,
seccomp); and the parent's wall-clock SIGKILL (executor.py).

A program that does not define the entry function gets ``compile_error``: it is
a structural defect of the program, found before any of it is judged on the image.
"""
from .executor import DEFAULT_NAMESPACE_FACTORY, Executor, ExecutorError
from .results import STATUSES, ExecutionResult, to_answer
from .shared import shared_executor

__all__ = ["Executor", "ExecutionResult", "ExecutorError", "STATUSES", "shared_executor",
           "to_answer", "DEFAULT_NAMESPACE_FACTORY"]
