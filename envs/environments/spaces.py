"""Text spaces for prompts, questions and programs.

Gymnasium's `Text` defaults to an alphanumeric charset, which cannot hold a program
(spaces, newlines, brackets) or a real question ("What's the man's shirt's colour?").
`PrintableText` samples from ASCII printable characters, tab and newline included, and
accepts any printable Unicode too: DocVQA questions carry accents and curly quotes, and
an observation must never fall outside its space because of a typographic apostrophe.
"""

from __future__ import annotations

import string
from typing import Any

from gymnasium.spaces import Text

# What `sample()` draws from: every printable ASCII character, whitespace included.
PRINTABLE = string.printable
_WHITESPACE = frozenset("\t\n\r\x0b\x0c")


def _allowed(ch: str) -> bool:
    return ch.isprintable() or ch in _WHITESPACE


class PrintableText(Text):
    """A `Text` space over printable characters (ASCII for sampling, Unicode accepted)."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed=None):
        super().__init__(max_length, min_length=min_length, charset=PRINTABLE, seed=seed)

    def contains(self, x: Any) -> bool:
        return (isinstance(x, str) and self.min_length <= len(x) <= self.max_length
                and all(ch in self.character_set or _allowed(ch) for ch in x))

    def __repr__(self) -> str:
        return f"PrintableText({self.min_length}, {self.max_length})"
