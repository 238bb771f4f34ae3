"""Turning raw model text into one runnable program."""

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
