"""Whether a question asks yes or no, read from its first word.

The tools answer such questions "yes"/"no", PropTest's template tests assert it and
VLAgent's repairs rely on it, so all three read the same word list."""
from __future__ import annotations

import re

# Auxiliaries that open an English yes/no question, their negated contractions as a
# tokenizer splitting on the apostrophe leaves them ("isn't" -> "isn"), and VLAgent's
# "Verify image matches text=..." check.
YES_NO_START = frozenset(
    "is are am does do did can could was were has have had will would should shall may might must "
    "isn aren doesn don didn couldn wasn weren hasn haven hadn won wouldn shouldn verify".split())


def is_yes_no(question: str) -> bool:
    first = re.match(r"\s*([a-z]+)", question.lower())
    return bool(first) and first.group(1) in YES_NO_START
