"""The ways `train/iterate.py` ends, and what each closes on the way out, written once.

Everything the run opens that holds a process, a socket or a W&B stream (the tools,
the executor, the tracker) is registered as it is opened and closed newest first on
every way out; the console log closes last, so train.log keeps every line.
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

from train import checkpoint as ckpt


class Ending:
    def __init__(self, console, run_dir: Path, main_proc: bool):
        self.console, self.run_dir, self.main_proc = console, Path(run_dir), main_proc
        self._closers: list = []  # (close, is the tracker's), in the order opened

    def opened(self, thing, tracker: bool = False):
        """Register `thing` (anything with `close()`; the tracker, whose close is
        `finish()`) to be closed at the end; returns it."""
        self._closers.append((thing.finish if tracker else thing.close, tracker))
        return thing

    def _close(self, tracker: bool = True) -> None:
        while self._closers:
            close, is_tracker = self._closers.pop()
            if tracker or not is_tracker:
                close()

    def close(self) -> None:
        """The run is done (or never started): close everything."""
        self._close()
        self.console.close()

    def stop(self, error: Exception, iteration: int | None) -> int:
        """A run that cannot go on (checkpoint error, preemption, non-finite loss): close,
        say why in one line, and return the exit status; completed iterations stay resumable."""
        # A second copy of the preemption signal must not cut the closing short (see stop_run).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        self._close()
        status = ckpt.stop_run(error, self.run_dir, iteration, self.main_proc)
        self.console.close()  # after the one line, so train.log has it
        return status

    def crash(self) -> None:
        """An unexpected exception, which the caller re-raises: its traceback goes into
        train.log. A run that fails before its first checkpoint leaves nothing behind; a
        later one keeps its W&B run open, so W&B marks it failed when the process exits."""
        self.console.close(error=True)
        wipe = self.main_proc and not ckpt.completed_iterations(self.run_dir)
        self._close(tracker=wipe)
        if wipe:
            shutil.rmtree(self.run_dir, ignore_errors=True)
