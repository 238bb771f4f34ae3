"""A reward of +inf for every program: its weight, and so the loss, is not finite
(the fault a broken reward or an overflow produces), for tests of the skipped-step guard."""


def reward(prompts, completions, **_):
    return [float("inf")] * len(completions)
