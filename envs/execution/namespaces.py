"""Namespace factories that need no vision tools.

``plain_namespace`` gives programs only ``math`` and ``np``; it serves the
benchmark and tests of the sandbox itself, and users who execute plain
computations. The default factory for real use is ``envs.tools:build_namespace``.
"""
from __future__ import annotations

import math

import numpy as np


def plain_namespace(backend: str = "plain", **_kwargs) -> dict:
    return {"math": math, "np": np}
