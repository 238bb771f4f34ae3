"""Environments, data, sandboxed execution, vision tools and prompts of vprl.

Importing `envs` registers the Gymnasium ids `vprl/Shapes-v0`, `vprl/ShapesITM-v0` and
one `vprl/<Preset>-v0` per real-dataset preset:

    import gymnasium as gym
    import envs

    env = gym.make("vprl/Shapes-v0")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(program_text)

Registering touches only gymnasium's registry (entry points are strings); the
environment classes load on first use. Sandbox processes never run this module: they
enter `envs.execution` through a bare `envs` package (`envs.execution.workers.
sandbox_command`), so they never load gymnasium, the environments, `rewards` or
`policies` (docs/LAYERS.md).
"""

from envs.environments.registration import register_all as _register_all

_LAZY = {"VisualProgramEnv", "make", "env_ids", "score_rows", "Outcome", "RewardSpec",
         "UnknownEnvironment", "grpo_dataset"}

_register_all()


def __getattr__(name):
    if name in _LAZY:
        import envs.environments as environments

        return getattr(environments, name)
    raise AttributeError(f"module 'envs' has no attribute {name!r}")


__all__ = sorted(_LAZY)
