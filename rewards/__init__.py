"""Reward functions with TRL's signature, and the registry configs name them by."""

from rewards.registry import available, get, register
from rewards import builtin  # noqa: F401  (registers the built-ins)
from rewards.combine import RewardFailure, RewardSet

# Imported on first use: suites pull in the renderer, the embedder and an LLM.
register("viunit", "rewards.unit_tests.reward:viunit")
# Label-free: reads the question and the image only.
register("proptest", "rewards.property_tests.reward:proptest")

__all__ = ["available", "get", "register", "RewardSet", "RewardFailure"]
