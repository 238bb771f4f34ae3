"""Reading "N. Image Caption: "..." Answer: ..." lines out of an LLM's reply (ViUniT D.1)."""

from __future__ import annotations

import re

from rewards.unit_tests.types import UnitTest

MAX_ANSWER_WORDS = 4  # D.1: answers of five words or more are out of distribution

_LINE = re.compile(
    r"""^\s*(?:\d+\s*[.):]\s*)?            # optional "1." numbering
        (?:image\s+caption\s*:\s*)+        # the label, sometimes repeated by the model
        (?P<caption>.+?)\s*
        \banswer\s*:\s*(?P<answer>.*?)\s*$""",
    re.IGNORECASE | re.VERBOSE,
)
_QUOTES = "\"'\u201c\u201d\u2018\u2019`"


def _clean(text: str) -> str:
    text = text.strip().strip(_QUOTES).strip()
    return re.sub(r"\s+", " ", text)


def parse_tests(text: str, source: str = "llm") -> list[UnitTest]:
    """Every well-formed test line in `text`, in order; malformed lines are skipped."""
    found = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        caption = _clean(m.group("caption")).rstrip(",;").strip()
        caption = _clean(caption)
        answer = _clean(m.group("answer")).rstrip(".!,;").strip(_QUOTES).strip()
        if caption and answer:
            found.append(UnitTest(caption, answer, source))
    return found


def dedupe(tests: list[UnitTest]) -> list[UnitTest]:
    """First occurrence of each caption wins: a caption listed with two answers is a
    contradiction, and the model's first answer is the one it wrote unprompted."""
    seen, out = set(), []
    for t in tests:
        key = t.caption.lower()
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def short_answers(tests: list[UnitTest], max_words: int = MAX_ANSWER_WORDS) -> list[UnitTest]:
    return [t for t in tests if len(t.answer.split()) <= max_words]


def candidates_from_replies(replies: list[str], source: str = "llm") -> list[UnitTest]:
    """Parse each sampled reply, pool them, deduplicate in order, drop long answers."""
    pooled = [t for reply in replies for t in parse_tests(reply, source)]
    return short_answers(dedupe(pooled))
