"""Command-line parsing that reports bad input in one line instead of argparse's usage dump."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """Bad command-line input; the command prints `error: <message>` and exits 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def key_values(values: list[str] | None, flag: str) -> dict:
    """``["detector=/models/owlv2", "vqa=null"]`` -> {"detector": "/models/owlv2", "vqa": None};
    values are read as YAML scalars, as config overrides are."""
    import yaml

    out = {}
    for item in values or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {item!r}: write KEY=VALUE, e.g. {flag} detector=/models/owlv2")
        try:
            out[key.strip()] = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            out[key.strip()] = raw
    return out
