"""Answer normalisation for property tests, shared by the parent and the sandbox.

PropTest's release normalises `llm_query`'s short answers by deleting punctuation and
spaces, which turns "Yes, it is." into "yesitis" and fails every `== "yes"` check. Here
a short sentence that opens with yes/no reads as that word, trailing punctuation and
leading articles go, and number words become digits. The same function normalises
both sides of the comparisons in an assert (`==`, `!=`, `in`, `not in`), so a test
written as `result in ["Yes", "No"]` accepts the answer "yes".

These functions run inside the sandbox too: the test harness carries their source
(`inspect.getsource`), so they use nothing but `re` and no private names.
"""

from __future__ import annotations

import re


def normalize_answer(text):
    """'Yes, it is.' -> 'yes'; 'The Circle.' -> 'circle'; 'Three' -> '3'; None -> ''."""
    if text is None:
        return ""
    s = " ".join(str(text).strip().lower().split())
    s = s.strip("\"'`\u201c\u201d\u2018\u2019 ")
    # A short reply that opens with yes/no followed by punctuation, the end, or a
    # pronoun ("yes, it is", "no it isn't") is that yes/no; "no one" stays as it is.
    m = re.match(r"^(yes|no)(?:[\s]*[,.!;:]|\s+(?:it|they|there|this|that|he|she|i|we|you)\b|$)", s)
    if m and len(s.split()) <= 8:
        return m.group(1)
    s = re.sub(r"[\s.!?,;:]+$", "", s)
    s = re.sub(r"^(?:a|an|the)\s+", "", s)
    numbers = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    if s in numbers:
        s = str(numbers.index(s))
    return s


def normalize_value(value):
    """Normalise a comparison operand: strings, and lists/tuples/sets of strings."""
    if isinstance(value, str):
        return normalize_answer(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [normalize_answer(v) if isinstance(v, str) else v for v in value]
    return value
