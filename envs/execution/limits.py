"""Time limits inside a worker: a soft wall-clock timer and the per-program CPU budget.

Both raise ProgramTimeout into the running program. They recover ordinary
Python loops without losing the warm worker; the parent's SIGKILL stays the
guarantee for loops stuck in C code or programs that swallow the exception.
"""
from __future__ import annotations

import math
import resource
import signal


class ProgramTimeout(BaseException):
    """Raised into the program by the soft timer (SIGALRM) or the CPU limit (SIGXCPU)."""


class SoftTimer:
    """SIGALRM (wall clock) and SIGXCPU (RLIMIT_CPU) raise ProgramTimeout while armed."""

    def __init__(self):
        self.armed = False
        self.fired = None
        signal.signal(signal.SIGALRM, self._on_signal)
        signal.signal(signal.SIGXCPU, self._on_signal)

    def _on_signal(self, signum, frame):
        if self.armed:
            self.fired = self.fired or ("CPU time limit exceeded" if signum == signal.SIGXCPU
                                        else "wall-clock time limit exceeded")
            raise ProgramTimeout(self.fired)

    def arm(self, timeout_s: float, cpu_time_s: float | None):
        self.fired = None
        if cpu_time_s:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            used = usage.ru_utime + usage.ru_stime
            # RLIMIT_CPU counts whole seconds: SIGXCPU comes within a second after the budget.
            soft = math.ceil(used + cpu_time_s)
            hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        self.armed = True
        # Re-fire every 0.1 s: a program that swallows the first ProgramTimeout
        # and then finishes still ends early; one that swallows forever is
        # SIGKILLed by the parent.
        signal.setitimer(signal.ITIMER_REAL, max(timeout_s, 0.001), 0.1)

    def disarm(self):
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        # Between programs the worker has no CPU budget to keep.
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
