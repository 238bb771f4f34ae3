"""A reward that rises once, then falls (0.2, 0.8, 0.5, 0.3, ...): the adapter of the first
update scores best, so early stopping keeps an iteration from the middle of the run."""

_calls = {"n": 0}
_VALUES = (0.2, 0.8, 0.5, 0.3)


def reward(prompts, completions, **_):
    value = _VALUES[min(_calls["n"], len(_VALUES) - 1)]
    _calls["n"] += 1
    return [value] * len(completions)
