"""Reward functions with TRL's signature, and the registry configs name them by."""

from rewards.registry import Reward, available, get, label_columns, register
from rewards import builtin  # noqa: F401  (registers the built-ins)
from rewards.combine import RewardFailure, RewardSet

# Imported on first use: suites pull in the renderer, the embedder and an LLM.
register("viunit", "rewards.unit_tests.reward:ViUnitReward")
# Label-free: reads the question and the image only; in `mode: gate` it multiplies in another
# reward, whose label use then counts.
register("proptest", "rewards.property_tests.reward:PropTestReward",
         reads=lambda kwargs: label_columns(kwargs["reward"], kwargs.get("reward_kwargs"))
         if kwargs.get("mode") == "gate" and kwargs.get("reward") else ())
# VLAgent (label-free): SS-parser validity, caption agreement, ensemble localisation IoU.
register("parse", "rewards.vlagent.reward:ParseReward")
register("caption_agreement", "rewards.vlagent.reward:caption_agreement", reads=())
register("ensemble_iou", "rewards.vlagent.reward:EnsembleIoUReward")

__all__ = ["Reward", "available", "get", "label_columns", "register", "RewardSet", "RewardFailure"]
