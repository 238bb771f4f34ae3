"""One process-wide Executor for reward functions that are called from outside
our trainer (e.g. by trl.GRPOTrainer) and so cannot be handed one."""
from __future__ import annotations

import atexit
import os
import threading

from .executor import Executor

_lock = threading.Lock()
_executor: Executor | None = None
_settings: dict | None = None


def shared_executor(**kwargs) -> Executor:
    """The process-wide executor, created on first use with ``kwargs``.

    Later calls return the same executor (so every reward reads one cache); a
    later call with different non-empty settings is an error rather than a
    silent second pool. After a fork the child gets its own executor.
    """
    global _executor, _settings
    with _lock:
        if _executor is not None and (_executor._closed or _executor._pid != os.getpid()):
            _executor = None
        if _executor is None:
            _executor = Executor(**kwargs)
            _settings = dict(kwargs)
            atexit.register(_executor.close)
        elif kwargs and kwargs != _settings:
            raise ValueError(f"shared_executor() already exists with settings {_settings}; "
                             f"got {kwargs}. Pass no arguments to reuse it, or close it first.")
        return _executor
