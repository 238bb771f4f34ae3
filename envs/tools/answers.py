"""Answering phrases and simple questions from a list of perceived components.

Shared by backends that perceive discrete objects with colour, shape and size (the
component tuples of shapes_cv); nothing here looks at pixels.
"""
from __future__ import annotations

import re

from envs.common.questions import YES_NO_START
from envs.tools.phrases import parse, value_of, words

_QUESTION_WORDS = frozenset(
    "what which who how many much is are does do can was were has have color colour colors "
    "colours shape shapes size kind type there this it its object thing".split())
# Words that ask whether something is there; they constrain nothing.
_PRESENCE = frozenset("contain contains containing include includes including show shows showing "
                      "depict depicts depicted see seen visible present exist exists existing "
                      "appear appears anywhere somewhere".split())
# "Does the image not contain ...?", "Is there no ...?". A contraction ("Isn't there a
# red circle?") asks for confirmation, as in English, so "isn t" is no negation.
_NEGATIONS = frozenset("not no never none without".split())


def matching(comps, phrase: str) -> list:
    q = parse(phrase)
    return [c for c in comps if q.accepts(c.color, c.shape, c.size)]


def _main(comps):
    """The component a crop is "about": the one covering most of it."""
    return max(comps, key=lambda c: ((c.right - c.left) * (c.upper - c.lower), c.area))


def _subject(comps, text_words: list[str], drop_attr: str | None = None):
    """Components named by the question's object words (all of them when it names none)."""
    kept = [w for w in text_words if w not in _QUESTION_WORDS]
    if drop_attr:
        kept = [w for w in kept if (value_of(w) or ("", ""))[0] != drop_attr]
    q = parse(" ".join(kept))
    if q.empty or q.unknown:
        return list(comps)
    found = [c for c in comps if q.accepts(c.color, c.shape, c.size)]
    return found or list(comps)


def verify(comps, object_name: str, prop: str) -> bool:
    q = parse(prop)
    if q.unknown or q.empty:
        return False
    subject = matching(comps, object_name) or list(comps)
    return any(q.accepts(c.color, c.shape, c.size) for c in subject)


def _asked_attr(ws: list[str]) -> str:
    text = " ".join(ws)
    if "color" in ws or "colour" in ws:
        return "color"
    if "size" in ws or re.search(r"\bhow (big|large|small)\b", text):
        return "size"
    return "shape"


def _choose(comps, ws: list[str]) -> str | None:
    """"Is the circle red or blue?" -> the option the subject has."""
    ws = [w for w in ws if w not in ("a", "an", "the")]
    i = ws.index("or")
    left = value_of(ws[i - 1]) if i else None
    right = value_of(ws[i + 1]) if i + 1 < len(ws) else None
    if not left or not right or left[0] != right[0]:
        return None
    # Answer with what is seen, even when it is neither option: a wrong presupposition
    # should show up as a wrong answer rather than a coin flip between the options.
    return getattr(_main(_subject(comps, ws[: i - 1], drop_attr=left[0])), left[0])


# Where the counted phrase ends: "how many red circles | are there", "the number of
# squares | in the picture", "count the triangles | how many ...".
_COUNT_END = re.compile(r"\b(are|is|in|there|do|does|can|how|that|you|on|of|within|visible|shown|present)\b")


def _counted(ws: list[str], text: str, yesno: bool) -> str | None:
    """The phrase a counting question counts, whatever its wording ("How many X are there?",
    "Count the X.", "What is the number of X in the image?"); None for other questions.
    A yes/no question that mentions a number ("Is the number of X greater than ...?") is
    not a count."""
    if ws[0] == "count":
        rest = " ".join(w for w in ws[1:] if w not in ("the", "all"))
    elif "how many" in text:
        rest = text.split("how many", 1)[1]
    elif "number of" in text and not yesno:
        rest = text.split("number of", 1)[1]
    else:
        return None
    return _COUNT_END.split(rest)[0]


def simple_query(comps, question: str, shape_hw=None) -> str:
    ws = words(question) or ["what", "is", "this"]
    if "yes" in ws and "no" in ws:  # "Answer yes or no: is there ...?" offers the answers
        ws = [w for w in ws if w not in ("answer", "yes", "or", "no", "with")] or ["is", "it"]
    text = " ".join(ws)
    yesno = ws[0] in YES_NO_START
    counted = _counted(ws, text, yesno)
    if counted is not None:
        return str(len(matching(comps, counted)))
    if yesno and "or" in ws:
        chosen = _choose(comps, ws) if comps else None
        if chosen:
            return chosen
    if yesno:
        return "yes" if _yes(comps, ws) else "no"
    if not comps:
        return "nothing"
    attr = _asked_attr(ws)
    return getattr(_main(_subject(comps, ws, drop_attr=attr)), attr)


def _yes(comps, ws: list[str]) -> bool:
    """A yes/no question about what is there: "Is there a red circle?", "Does the image
    contain a gray shape?", "Is the square blue?"; negated ("... not contain ...", "Is
    there no ...") by an odd number of negations."""
    negated = sum(w in _NEGATIONS for w in ws) % 2 == 1
    q = parse(" ".join(w for w in ws if w not in _QUESTION_WORDS and w not in _PRESENCE
                       and w not in _NEGATIONS and w not in YES_NO_START and w != "t"))
    if q.unknown and not q.empty:
        # Words we do not know beside ones we do ("Is the red shape glossy?"): answer
        # about what we can see rather than "no" for the words we cannot.
        q = q.known()
    found = any(q.accepts(c.color, c.shape, c.size) for c in comps)
    return found != negated


def match_score(comps, text: str, shape_hw=None) -> float:
    q = parse(text)
    if not comps:
        return 0.0
    best = max(q.score(c.color, c.shape, c.size) for c in comps)
    if shape_hw is not None:  # prefer crops the matching object fills
        h, w = shape_hw
        m = _main(comps)
        best += 1e-3 * (m.right - m.left) * (m.upper - m.lower) / max(1, h * w)
    return float(best)


def _article(text: str) -> str:
    return ("an " if text[0] in "aeiou" else "a ") + text


def describe(comps) -> str:
    if not comps:
        return "an empty image"
    parts = [_article(f"{c.size} {c.color} {c.shape}") for c in comps]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{listed}, from left to right"

