"""A reward that always raises: checks failures are reported, not turned into 0."""


def reward(prompts, completions, **_):
    raise RuntimeError("this reward is broken on purpose")
