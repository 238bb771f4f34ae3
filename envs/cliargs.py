"""Command-line parsing that reports bad input in one line instead of argparse's usage dump."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """Bad command-line input; the command prints `error: <message>` and exits 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)
