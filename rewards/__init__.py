"""Reward functions with TRL's signature, and the registry configs name them by."""

from rewards.registry import available, get, register
from rewards import builtin  # noqa: F401  (registers the built-ins)
from rewards.combine import RewardFailure, RewardSet

__all__ = ["available", "get", "register", "RewardSet", "RewardFailure"]
