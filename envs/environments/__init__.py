"""Gymnasium environments over VQA training sets (see env.py for the episode semantics)."""

from envs.environments.env import VisualProgramEnv, default_feedback
from envs.environments.grpo import grpo_dataset
from envs.environments.registration import UnknownEnvironment, env_ids, make, register_all
from envs.environments.scoring import Outcome, score_rows
from rewards.combine import RewardSpec, reward_specs

__all__ = ["VisualProgramEnv", "grpo_dataset", "default_feedback", "Outcome", "RewardSpec",
           "reward_specs", "score_rows", "make", "env_ids", "register_all", "UnknownEnvironment"]
