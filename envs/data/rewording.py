"""The shapes questions in other words: a probe of transfer to wordings a run never saw.

The generator (`questions.py`) words each family one or two ways, so a policy trained
on it may learn the wording rather than the question. Issue 24 asks that a trained
adapter do no worse than the starting policy on wordings it did not train on. These
templates say what each spec asks in different words; the spec, and so the answer, the
counterfactual scenes and logical accuracy, stay as they were. They were written from
the specs alone, before any adapter was measured on them (`bench/transfer.py`).
"""
from __future__ import annotations

import json
import random

from envs.data.questions import article, phrase
from envs.data.vocab import NUMBER_WORDS, RELATION_PHRASE


def _claim(c: dict) -> str:
    if c["kind"] == "rel":
        return f"{article(phrase(c['a']))} sits {RELATION_PHRASE[c['rel']]} {article(phrase(c['b']))}"
    if c["kind"] == "count":
        n = c["n"]
        return (f"only one {phrase(c['obj'])} is visible" if n == 1 else
                f"{NUMBER_WORDS[n]} {phrase(c['obj'], True)} are visible")
    return f"{article(phrase(c['obj']))} is visible"


def _choose(s: dict) -> list[str]:
    o1, o2 = (article(o) for o in s["options"]) if s["attr"] == "shape" else s["options"]
    it = phrase(s["obj"])
    return [f"Would you say the {it} is {o1} or {o2}?", f"Which is the {it}: {o1} or {o2}?"]


def _compare(s: dict) -> list[str]:
    pa, pb = phrase(s["a"], True), phrase(s["b"], True)
    return {"more": [f"Do the {pa} outnumber the {pb}?", f"Is the number of {pa} greater than the number of {pb}?"],
            "fewer": [f"Are the {pa} fewer in number than the {pb}?",
                      f"Is the number of {pa} smaller than the number of {pb}?"],
            "same": [f"Is the number of {pa} equal to the number of {pb}?",
                     f"Do the {pa} and the {pb} come in equal numbers?"]}[s["op"]]


def _logic(s: dict) -> list[str]:
    a, b = article(phrase(s["a"])), article(phrase(s["b"]))
    if s["op"] == "and":
        return [f"Does the picture contain {a} as well as {b}?", f"Can you see {a} and also {b}?"]
    return [f"Does the picture contain {a}, or {b}, or both?", f"Can you see at least one of these: {a}, {b}?"]


def _itm(s: dict) -> list[str]:
    text = " and ".join(_claim(c) for c in s["claims"])
    text = text[0].upper() + text[1:] + "."
    return [f"Is this an accurate description of the picture? {text}", f"True or false for this image: {text}"]


WORDINGS = {
    "existence": lambda s: [f"Does the picture contain {article(phrase(s['obj']))}?",
                            f"Can you see {article(phrase(s['obj']))} in the image?"],
    "counting": lambda s: [f"What is the number of {phrase(s['obj'], True)} in the picture?",
                           f"Count the {phrase(s['obj'], True)}: how many are there?"],
    "attribute": lambda s: [f"Which {s['attr']} does the {phrase(s['obj'])} have?",
                            f"Tell me the {s['attr']} of the {phrase(s['obj'])}."],
    "choose": _choose,
    "spatial_verify": lambda s: [f"Is the {phrase(s['a'])} located {RELATION_PHRASE[s['rel']]} the {phrase(s['b'])}?",
                                 f"Looking at the {phrase(s['b'])}, is the {phrase(s['a'])} "
                                 f"{RELATION_PHRASE[s['rel']]} it?"],
    "spatial_query": lambda s: [f"What is the {s['attr']} of the {phrase(s['a'])} that is "
                                f"{RELATION_PHRASE[s['rel']]} the {phrase(s['b'])}?",
                                f"Name the {s['attr']} of the {phrase(s['a'])} {RELATION_PHRASE[s['rel']]} "
                                f"the {phrase(s['b'])}."],
    "count_compare": _compare,
    "logic": _logic,
    "itm": _itm,
}


def reword(spec: dict | str, rng: random.Random) -> str:
    """Another wording of the question `spec` asks (one of its family's templates)."""
    spec = json.loads(spec) if isinstance(spec, str) else spec
    family = spec.get("family")
    if family not in WORDINGS:
        raise ValueError(f"no other wording for question family {family!r}; known: {', '.join(WORDINGS)}")
    return rng.choice(WORDINGS[family](spec))


def reworded(rows: list[dict], seed: int = 0) -> list[dict]:
    """The rows with their questions reworded (ids, images, answers and specs kept)."""
    rng = random.Random(seed)
    return [{**row, "question": reword(row["spec"], rng)} for row in rows]
