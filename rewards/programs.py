"""Recovering the full program a reward should judge from a (prompt, completion) pair."""

from __future__ import annotations

from policies.extract import extract_program


def program_from(prompt, completion) -> str:
    """Full `execute_command` source for a completion.

    Our prompts end inside the function (the header and first body line), so the
    program is that tail of the prompt plus the completion; TRL passes the same pair.
    Completions that carry a whole function (or a fenced block) stand on their own.
    """
    if isinstance(completion, list):  # TRL's conversational format
        completion = completion[-1]["content"] if completion else ""
    if isinstance(prompt, list):
        prompt = prompt[-1]["content"] if prompt else ""
    prompt = prompt or ""
    start = prompt.rfind("def execute_command")
    if start >= 0 and "# Query" not in prompt[start:] and "def execute_command" not in completion:
        return extract_program(prompt[start:] + completion)
    return extract_program(completion)
