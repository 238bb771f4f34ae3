"""A reward that falls every time it is called: drives early stopping in tests."""

_calls = {"n": 0}


def reward(prompts, completions, **_):
    value = 1.0 - 0.3 * _calls["n"]
    _calls["n"] += 1
    return [value] * len(completions)
