"""A reward that pays a program for asking `simple_query` its own question (the `question`
column): the policy seldom writes that and program search can reach it, so a tiny run's
search has something to find."""

import json


def reward(prompts, completions, question, **_):
    return [1.0 if f"simple_query({json.dumps(q)})" in p + c else 0.0 for p, c, q in zip(prompts, completions, question)]
