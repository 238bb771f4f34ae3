"""What the SS-parser's semantic rules read off a question: noun phrases, spatial
relations, and whether it asks about several instances of one class.

Plain English heuristics (no model, no labels): they work on shapes questions and on
GQA-style questions alike, and a rule that cannot read the question stays silent.
"""
from __future__ import annotations

import re

ARTICLES = frozenset("a an the any some each every all both".split())
GENERIC = frozenset("object objects thing things shape shapes item items one ones".split())
QUESTION_WORDS = frozenset("what which who whom whose where when why how is are does do did can could "
                "was were has have will would should".split())
# Words that end a noun phrase after an article.
_BREAK = frozenset("of to than and or is are that which who in on at with from by as "
                   "have has there left right above below behind near".split())
# "on the table" is above the table; "on the left" also names LEFTOF, so "on" only widens
# which spatial crops a question allows.
RELATIONS = {"LEFTOF": ("left of", "to the left"), "RIGHTOF": ("right of", "to the right"),
             "ABOVE": ("above", "on top of", "over", "on"),
             "BELOW": ("below", "under", "beneath", "underneath")}
_MULTI = re.compile(r"\b(both|each|every|all|the two)\s+(?:of\s+)?(?:the\s+)?"
                    r"([a-z]+(?:\s+[a-z]+){0,2})")
_SAME = re.compile(r"\b(same|different|differ|match|matching|alike|identical)\b")


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", str(text).lower())


_IRREGULAR = {"people": "person", "men": "man", "women": "woman", "children": "child",
              "mice": "mouse", "geese": "goose", "teeth": "tooth", "feet": "foot",
              "knives": "knife", "leaves": "leaf", "shelves": "shelf", "wolves": "wolf"}


def singular(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def content(text: str) -> set[str]:
    """Singular content words of a phrase, without articles and generic nouns."""
    return {singular(w) for w in words(text)} - ARTICLES - GENERIC - QUESTION_WORDS - {"there"}


# Words after which a noun phrase starts: articles, counts and comparisons.
_STARTERS = (ARTICLES - {"each", "every", "all", "both"}) | frozenset(
    "many more fewer than two three four five six seven eight nine ten".split())


def noun_phrases(question: str) -> list[str]:
    """Phrases after an article or a count, up to a preposition or verb: "the large red
    circle", "how many small squares", "more circles than triangles"."""
    ws, out = words(question), []
    for i, w in enumerate(ws):
        if w in _STARTERS:
            phrase = []
            for nxt in ws[i + 1:]:
                if nxt in _BREAK or nxt in _STARTERS or nxt in ARTICLES or nxt in QUESTION_WORDS:
                    break
                phrase.append(nxt)
            if phrase:
                out.append(" ".join(phrase))
    return list(dict.fromkeys(out))


def relations(question: str) -> list[str]:
    """Spatial relations the question names, as CROP_<SIDE> suffixes."""
    text = " ".join(words(question))
    return [side for side, cues in RELATIONS.items()
            if any(re.search(rf"\b{cue}\b", text) for cue in cues)]


def multi_instance(question: str) -> tuple[str, int | None] | None:
    """(class noun, how many or None for all) when the question quantifies over several
    instances of one class ("Do both squares...", "Is each circle..."), else None.
    "Is there both a red circle and a square?" is a conjunction, not multi-instance."""
    text = " ".join(words(question))
    for m in _MULTI.finditer(text):
        quantifier, tail = m.group(1), m.group(2).split()
        if quantifier == "both" and tail and tail[0] in ("a", "an"):
            continue
        kept = []
        for w in tail:
            if w in _BREAK or w in QUESTION_WORDS:
                break
            kept.append(w)
        count = 2 if quantifier in ("both", "the two") else None
        if quantifier in ("each", "every"):
            if kept:  # "each red triangle large": the noun is somewhere in there
                return " ".join(kept), count
            continue
        plural = next((i for i, w in enumerate(kept) if singular(w) != w), None)
        if plural is None:
            continue  # "both red" / "all blue": no plural class noun
        return " ".join([*kept[:plural], singular(kept[plural])]), count
    return None


def asks_same(question: str) -> bool:
    return bool(_SAME.search(" ".join(words(question))))


def is_count(question: str) -> bool:
    return " ".join(words(question)[:2]) == "how many"
