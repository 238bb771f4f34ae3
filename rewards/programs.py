"""Recovering the full program a reward should judge from a (prompt, completion) pair."""

from __future__ import annotations

from policies.extract import extract_program


def _text(message) -> str:
    """Plain text of a string, or of TRL's conversational/multimodal message lists."""
    if isinstance(message, str) or message is None:
        return message or ""
    if isinstance(message, list):
        if not message:
            return ""
        content = message[-1].get("content", "") if isinstance(message[-1], dict) else message[-1]
        if isinstance(content, list):  # multimodal blocks: [{"type": "text", "text": ...}, {"type": "image"}]
            return "".join(b.get("text", "") for b in content if isinstance(b, dict))
        return str(content)
    return str(message)


def program_from(prompt, completion) -> str:
    """Full `execute_command` source for a completion.

    Our prompts end inside the function (the header and first body line), so the
    program is that tail of the prompt plus the completion; TRL passes the same pair.
    Completions that carry a whole function (or a fenced block) stand on their own.
    A planning script (the visprog family's prompts, or a completion that is one) becomes
    the program that runs it (`envs.visprog.script_program`).
    """
    from envs.visprog.compile import program_for

    completion = _text(completion)
    prompt = _text(prompt)
    script = program_for(prompt, completion)
    if script is not None:
        return script
    start = prompt.rfind("def execute_command")
    if start >= 0 and "# Query" not in prompt[start:] and "def execute_command" not in completion:
        return extract_program(prompt[start:] + completion)
    return extract_program(completion)
