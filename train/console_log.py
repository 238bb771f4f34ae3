"""`runs/<name>/train.log`: what the console shows, kept in the run folder.

stdout and stderr keep going to the console unchanged; the log gets the same text, with
progress bars reduced to their final state (a bar redraws its line with carriage
returns; only the line that ends in a newline is kept) and terminal escape codes
removed. Warnings, logged errors (a reward's traceback) and an uncaught exception's
traceback go to stderr, so they are in the log too.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
import traceback
from pathlib import Path

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class _Tee:
    """A console stream that also feeds the log; everything else is the stream's own."""

    def __init__(self, stream, log: "ConsoleLog"):
        self._stream, self._log, self._partial = stream, log, ""

    def write(self, text: str) -> int:
        n = self._stream.write(text)
        self._log._feed(self, text)
        return n

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name):  # fileno, isatty, encoding, buffer, ...
        return getattr(self._stream, name)


class ConsoleLog:
    """Copy the console into a file. Lines written before `open` are kept and written
    there first, so the data and model loading messages that precede the run folder
    are in the log too. A no-op when `enabled` is False (ranks other than the main one)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._lines: list[str] = []
        self._file = None
        self._lock = threading.Lock()
        self._saved = None
        if enabled:
            self._saved = (sys.stdout, sys.stderr)
            sys.stdout, sys.stderr = _Tee(sys.stdout, self), _Tee(sys.stderr, self)
            self._handlers = self._redirect_handlers(self._saved, (sys.stdout, sys.stderr))

    @staticmethod
    def _redirect_handlers(old, new) -> list:
        """Logging handlers that hold the console stream itself (transformers' does) write through the tee."""
        moved = []
        loggers = [logging.getLogger()] + [v for v in logging.Logger.manager.loggerDict.values()
                                           if isinstance(v, logging.Logger)]
        for logger in loggers:
            for handler in logger.handlers:
                stream = getattr(handler, "stream", None)
                if isinstance(handler, logging.StreamHandler) and stream in old:
                    handler.setStream(new[old.index(stream)])
                    moved.append((handler, stream))
        return moved

    def open(self, path: Path) -> None:
        """Start writing to `path` (appended to: a resumed run continues its log)."""
        if not self.enabled:
            return
        with self._lock:
            self._file = open(path, "a", buffering=1)
            self._file.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')}  {' '.join(sys.argv)}\n")
            self._file.writelines(self._lines)
            self._lines = []

    def _feed(self, tee: _Tee, text: str) -> None:
        with self._lock:
            if self._saved is None:  # closed; a stream object may outlive the log
                return
            bar = ""
            if tee._partial.startswith("\r") and text[:1] not in ("\r", "\n", ""):
                # Another writer (a logger's thread) wrote while a bar was mid-line: its lines
                # are lines of their own, and the bar's drawing waits for its own newline.
                bar, tee._partial = tee._partial, ""
            *lines, rest = (tee._partial + text).split("\n")
            for raw in lines:
                line = _ESCAPES.sub("", raw.rsplit("\r", 1)[-1]).rstrip()
                if line or "\r" not in raw:  # a line a bar cleared is not a blank line
                    self._write(line + "\n")
            # A bar redraws its line many times before the newline: keep only the last drawing.
            tee._partial = ("\r" if "\r" in rest else "") + rest.rsplit("\r", 1)[-1]
            if bar and not rest:
                tee._partial = bar

    def _write(self, line: str) -> None:
        if self._file is not None:
            self._file.write(line)
        else:
            self._lines.append(line)

    def close(self, error: bool = False) -> None:
        """Stop copying; with `error`, the exception being handled is written to the log first
        (it would reach the console only after the streams are restored)."""
        if not self.enabled or self._saved is None:
            return
        if error and sys.exc_info()[0] is not None:
            with self._lock:
                self._write("".join(traceback.format_exception(*sys.exc_info())))
        for handler, stream in self._handlers:
            handler.setStream(stream)
        sys.stdout, sys.stderr = self._saved
        self._saved = None
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> "ConsoleLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close(error=exc[0] is not None)
