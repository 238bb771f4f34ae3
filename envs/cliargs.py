"""Command-line parsing that reports bad input in one line instead of argparse's usage dump."""

from __future__ import annotations

import argparse
import math


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


def number(kind=int, at_least=None, at_most=None, above=None):
    """An argparse `type` that reads an int or float within bounds, so a bad value is refused
    as the command line is read, in one line naming the range (not deep in the run, or
    silently, as `--max-new-tokens 0` once ran a whole evaluation of empty programs).
    Infinity and NaN are refused too: `--temperature inf` sampled uniform tokens."""
    noun = "an integer" if kind is int else "a finite number"
    bounds = [f">= {at_least}" if at_least is not None else "", f"> {above}" if above is not None else "",
              f"<= {at_most}" if at_most is not None else ""]
    wanted = " ".join([noun, " and ".join(b for b in bounds if b)]).strip()

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        if not math.isfinite(value) or (at_least is not None and value < at_least) or \
                (above is not None and value <= above) or (at_most is not None and value > at_most):
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in "invalid <name> value"
    return parse
