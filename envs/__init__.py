"""Environments, data, sandboxed execution, vision tools and prompts of vprl.

Importing `envs` registers the Gymnasium ids `vprl/Shapes-v0`, `vprl/ShapesITM-v0` and
one `vprl/<Preset>-v0` per real-dataset preset:

    import gymnasium as gym
    import envs

    env = gym.make("vprl/Shapes-v0")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(program_text)

Registering touches only gymnasium's registry (entry points are strings); the
environment classes load on first use. A sandbox worker (`python -m
envs.execution.zygote` and the children it forks) imports this package before its own
module, and the sandbox
imports nothing above it: a worker registers nothing, so it never loads gymnasium,
the environments, `rewards` or `policies` (docs/LAYERS.md).
"""

import sys

_LAZY = {"VisualProgramEnv", "make", "env_ids", "score_rows", "Outcome", "RewardSpec",
         "UnknownEnvironment", "grpo_dataset"}


def _started_as_sandbox_module() -> bool:
    """True in a process started as `python [options] -m envs.execution...` (a sandbox worker)."""
    argv = list(getattr(sys, "orig_argv", ()))[1:]
    i = 0
    while i < len(argv) - 1:
        if argv[i] == "-m":
            return argv[i + 1].startswith("envs.execution")
        if argv[i] in ("-X", "-W"):  # options that take a value
            i += 2
        elif argv[i].startswith("-") and argv[i] != "-c":
            i += 1
        else:  # a script or -c: not a module run
            return False
    return False


if not _started_as_sandbox_module():
    from envs.environments.registration import register_all as _register_all

    _register_all()


def __getattr__(name):
    if name in _LAZY:
        import envs.environments as environments

        return getattr(environments, name)
    raise AttributeError(f"module 'envs' has no attribute {name!r}")


__all__ = sorted(_LAZY)
