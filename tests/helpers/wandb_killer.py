"""A reward that kills this process's W&B service on its second call, then never applies.

Used to show that a run whose W&B dies goes on and still writes every metric to
metrics.jsonl (the service really dies: its process is killed, as an OOM killer would).
"""

import psutil


def reward(prompts, completions, **columns):
    reward.calls = getattr(reward, "calls", 0) + 1
    if reward.calls == 2:
        for child in psutil.Process().children(recursive=True):
            if child.name().startswith("wandb-core"):
                child.kill()
    return [None] * len(completions)
