"""Gymnasium environments over VQA training sets (see env.py for the episode semantics).

Names load on first use: `import envs` imports `envs.environments.registration` to
register the ids, and must not pull the environment classes (gymnasium spaces,
`rewards`, the prompts) in with it.
"""

import importlib

_WHERE = {
    "VisualProgramEnv": "envs.environments.env", "default_feedback": "envs.environments.env",
    "grpo_dataset": "envs.environments.grpo",
    "UnknownEnvironment": "envs.environments.registration", "env_ids": "envs.environments.registration",
    "make": "envs.environments.registration", "register_all": "envs.environments.registration",
    "Outcome": "envs.environments.scoring", "score_rows": "envs.environments.scoring",
    "RewardSpec": "rewards.combine", "reward_specs": "rewards.combine",
}


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'envs.environments' has no attribute {name!r}")


__all__ = sorted(_WHERE)
