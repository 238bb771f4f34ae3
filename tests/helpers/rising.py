"""A reward that rises every time it is called (0.2, 0.5, 0.8, ...): the trained adapter
always scores higher than the one before it."""

_calls = {"n": 0}


def reward(prompts, completions, **_):
    value = 0.2 + 0.3 * _calls["n"]
    _calls["n"] += 1
    return [value] * len(completions)
