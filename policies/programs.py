"""Program text: the one module that knows what a visual program looks like.

A program is `def execute_command(image):` (`HEADER`) plus an indented body. Here are
the header, extraction of a runnable program from raw model text (and where generation
may stop), the program a (prompt, completion) pair stands for, a program's body (what
few-shot shots show), and the end-to-end fallback program. It imports nothing from the
project but the script language (`envs.visprog`, a leaf too), so every layer may use it
(docs/LAYERS.md).
"""

from __future__ import annotations

import re

HEADER = "def execute_command(image):\n"
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.S)


def end_of_program(text: str) -> int | None:
    """Index where the program body ends: the first line that starts at column 0.

    Once the header `def execute_command(image):` is given, any later unindented line —
    a second top-level `def`, the next `# Query:`, a code fence, a stray call — lies
    outside the function, so generation can stop there.
    """
    for match in re.finditer(r"\n(?=\S)", text):
        return match.start()
    return None


def extract_program(text: str, header: str = HEADER) -> str:
    """Return the `execute_command` function found in `text`.

    Accepts a bare body that continues a prompt ending in the header, a full function,
    or code inside a markdown fence. Anything after the function (the next query, a
    second top-level def) is cut.
    """
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    # A completion that continues the prompt's header starts indented; only look for a
    # `def` when it does not, or a later example's def would replace the real body.
    bare_body = text.lstrip("\n")[:1] in (" ", "\t")
    start = -1 if bare_body else text.find("def execute_command")
    if start >= 0:
        text = text[start:]
        first_newline = text.find("\n")
        if first_newline < 0:
            return text
        head, body = text[: first_newline + 1], text[first_newline + 1 :]
    else:
        head, body = header, text
    cut = end_of_program("\n" + body)
    if cut is not None:
        body = body[: max(cut - 1, 0)]
    return (head + body).rstrip() + "\n"


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
    from envs.visprog.compile import program_for  # the script language, itself a leaf

    completion = _text(completion)
    prompt = _text(prompt)
    script = program_for(prompt, completion)
    if script is not None:
        return script
    start = prompt.rfind("def execute_command")
    if start >= 0 and "# Query" not in prompt[start:] and "def execute_command" not in completion:
        return extract_program(prompt[start:] + completion)
    return extract_program(completion)


def program_body(program: str) -> str:
    """The function body of `program`: the lines after its `def execute_command` line.

    A bare body (already indented) is returned as is. The body ends with one newline so
    the next `# Query:` of a prompt starts on its own line.
    """
    text = program.lstrip("\n")
    if text.startswith("def "):
        newline = text.find("\n")
        text = "" if newline < 0 else text[newline + 1:]
    return text.rstrip() + "\n" if text.strip() else ""


def fallback_program(question: str, prompt_family: str = "viper_compact") -> str:
    """The end-to-end fallback as a program: the question asked of the whole image by the
    backend's answering model (`simple_query`, or `ImageObject.answer` for tool_api)."""
    q = repr(question)
    if prompt_family == "tool_api":
        return f"{HEADER}    return ImageObject(image).answer({q})\n"
    return f"{HEADER}    return ImagePatch(image).simple_query({q})\n"
