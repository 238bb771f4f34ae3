"""Reward options a release renamed: the old name keeps working, with one warning line."""
from __future__ import annotations

import warnings


def renamed(options: dict, old: str, new: str, where: str) -> dict:
    """``options`` with ``old`` spelt ``new``; both at once is an error."""
    if old not in options:
        return options
    if new in options:
        raise ValueError(f"{where}: both {old!r} (its old name) and {new!r} are set; keep only {new!r}")
    warnings.warn(f"{where} option {old!r} is deprecated; call it {new!r}", FutureWarning, stacklevel=3)
    options = dict(options)
    options[new] = options.pop(old)
    return options
