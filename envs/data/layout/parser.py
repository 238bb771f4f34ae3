"""``parse_caption``: captions -> scenes by closed-vocabulary rules.

The rule parser reads the canonical captions of ``caption_scene`` and the plain captions
an LLM writes about shapes (counts, sizes, colours, grid positions, pairwise relations,
negation) into mentions and relations; ``placement.place`` then picks attributes
and grid cells that make the caption true.  Anything it cannot represent faithfully makes it
return None instead of guessing, so that the LLM layout path can take over.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from envs.data.scene import Scene
from envs.data.layout.placement import place
from envs.data.layout.lexicon import (
    ARTICLES, BOUNDARIES, COLOR_WORDS, COPULAS, DEFINITES, DIRECTION_RELATIONS, DIRECTIONS,
    EMPTY_WORDS, FILLERS, GENERIC_NOUNS, INTENSIFIED, LIST_BOUNDARIES, NEGATIONS, NUMBERS,
    OFF_COLORS, OFF_SIZES, POSITION_FILLERS, PRONOUNS, QUANTITIES, RELATION_WORDS, RELATIVES,
    SCENE_NOUNS, SHAPE_WORDS, SIZE_WORDS, _tokens)


# -------------------------------------------------------------------------- parser

class _Unparsable(Exception):
    """The caption says something the rules cannot represent faithfully."""


@dataclass
class _Pending:
    """Words of a noun phrase read so far, waiting for their noun."""
    count: int | None = None
    strong: bool = False        # count from a number word, not just an article
    size: str | None = None
    color: str | None = None
    off: bool = False           # an attribute the world cannot draw
    definite: bool = False

    def modifiers(self) -> bool:
        return bool(self.size or self.color or self.off)


@dataclass
class _Mention:
    desc: dict                  # shape / color / size, as far as the caption says
    count: int | None           # None: plural without a number (2 or 3)
    negated: bool = False
    cells: set = field(default_factory=lambda: set(range(9)))
    exclude: set = field(default_factory=set)   # (attr, value) the caption denies


def _merge(desc: dict, key: str, value: str) -> None:
    if desc.get(key, value) != value:
        raise _Unparsable(f"{key} is both {desc[key]} and {value}")
    desc[key] = value


def _cells(rows: set, cols: set) -> set:
    return {3 * r + c for r in rows for c in cols}


class _Parser:
    def __init__(self, tokens: list[str]):
        self.toks = tokens
        self.mentions: list[_Mention] = []
        self.relations: list[tuple[int, str, int]] = []
        self.pend = _Pending()
        self.neg = False
        self.elided: list[tuple[_Pending, bool]] = []  # "a red and a blue circle"
        self.cells: set | None = None                   # position read before its noun
        self.last: int | None = None
        self.detached = True        # a boundary since the last mention
        self.predicate = False      # "the circle is [not] red"
        self.rel: dict | None = None
        self.empty = False

    # -- driver
    def run(self) -> "_Parser":
        i, toks = 0, self.toks
        while i < len(toks):
            t = toks[i]
            prev = toks[i - 1] if i else ""
            if t == ".":
                self._boundary(t)
            elif t in BOUNDARIES:
                self._boundary(t)
                if t in ("without", "nor"):
                    self.neg = True
            elif t in NEGATIONS:
                self.neg = True
            elif t in EMPTY_WORDS:
                self.empty = True
            elif t in ("one", "ones") and self.pend.modifiers():
                self._noun(self._pronoun_shape(), t == "ones")
            elif t in NUMBERS or t.isdigit():
                n = int(t) if t.isdigit() else NUMBERS[t]
                self._count(n, strong=True, prev=prev)
            elif t in QUANTITIES:
                self._count(QUANTITIES[t], strong=True, prev=prev)
            elif t in ARTICLES:
                if self.pend.count is None:
                    self._count(1, strong=False, prev=prev)
            elif t in DEFINITES:
                self.pend.definite = True
            elif t in SIZE_WORDS:
                self._modifier("size", SIZE_WORDS[t])
            elif t in COLOR_WORDS:
                self._modifier("color", COLOR_WORDS[t])
            elif t in OFF_COLORS or t in OFF_SIZES:
                self.pend.off = True
            elif t in SHAPE_WORDS:
                self._noun(SHAPE_WORDS[t], t.endswith("s"))
            elif t in GENERIC_NOUNS:
                self._noun(None, t.endswith("s"))
            elif t in SCENE_NOUNS:
                self.pend = _Pending()  # "a white background", "an image with ..."
            elif t in DIRECTIONS:
                i = self._direction(i)
                continue
            elif t in RELATION_WORDS:
                self._relation(RELATION_WORDS[t])
            elif t in PRONOUNS:
                self._pronoun()
            elif t in COPULAS:
                self.predicate = self.last is not None and not self.detached
            elif t in RELATIVES:
                self.detached = self.last is None
            elif t not in FILLERS and t not in POSITION_FILLERS:
                raise _Unparsable(f"unknown word {t!r}")
            i += 1
        self._boundary(".")
        return self

    # -- noun phrases
    def _count(self, n: int, strong: bool, prev: str) -> None:
        if n == 0:
            self.neg = True
            return
        # "not a circle" keeps the negation; "no red objects, just a green square" ends it.
        if prev not in NEGATIONS:
            self.neg = False
        self.pend.count, self.pend.strong = n, strong

    def _modifier(self, key: str, value: str) -> None:
        if getattr(self.pend, key) not in (None, value):
            raise _Unparsable(f"two {key}s in one phrase")
        setattr(self.pend, key, value)

    def _pronoun_shape(self) -> str | None:
        """Shape of "one" in "a red circle and a blue one"."""
        for m in reversed(self.mentions):
            if not m.negated:
                return m.desc.get("shape")
        return None

    def _noun(self, shape: str | None, plural: bool) -> None:
        p, self.pend = self.pend, _Pending()
        if p.off:
            raise _Unparsable("an object with a colour or size outside the vocabulary")
        desc = {k: v for k, v in (("shape", shape), ("color", p.color), ("size", p.size)) if v}
        elided, self.elided = self.elided, []
        for ep, eneg in elided:  # the shared noun completes the earlier phrases
            if ep.off:
                raise _Unparsable("an object with a colour or size outside the vocabulary")
            edesc = {k: v for k, v in (("shape", shape), ("color", ep.color),
                                      ("size", ep.size)) if v}
            self._add(_Mention(edesc, ep.count or 1, eneg))
        if self.neg:
            idx = self._add(_Mention(desc, 0, True))
        elif p.definite and (idx := self._antecedent(desc, plural, p.count if p.strong else None)) \
                is not None:
            for k, v in desc.items():
                _merge(self.mentions[idx].desc, k, v)
        else:
            count = p.count if p.strong else (None if plural and not elided else 1)
            idx = self._add(_Mention(desc, count))
        if self.cells is not None:
            self._place(idx, self.cells)
            self.cells = None
        self.last, self.detached, self.predicate = idx, False, False
        self._link(idx)

    def _add(self, m: _Mention) -> int:
        self.mentions.append(m)
        return len(self.mentions) - 1

    def _antecedent(self, desc: dict, plural: bool, count: int | None) -> int | None:
        """"the circle" after "a red circle" is the same object."""
        for i in range(len(self.mentions) - 1, -1, -1):
            m = self.mentions[i]
            if m.negated or (m.count != 1) != plural or count not in (None, m.count):
                continue
            if all(m.desc.get(k, v) == v for k, v in desc.items()):
                return i
        return None

    def _place(self, idx: int, cells: set) -> None:
        m = self.mentions[idx]
        m.cells = m.cells & cells
        if not m.cells:
            raise _Unparsable("contradictory positions")

    # -- boundaries, predicates and lists
    def _boundary(self, t: str) -> None:
        p = self.pend
        if p.modifiers():
            if self.predicate and not p.count:
                self._predicate(p)
            elif t in LIST_BOUNDARIES or t == "and":
                self.elided.append((p, self.neg))
            else:
                raise _Unparsable("a description without its noun")
        elif p.strong:
            raise _Unparsable("a number without its noun")
        if t == "." and (self.elided or self.rel or self.cells is not None):
            raise _Unparsable("a description, relation or position without its object")
        self.pend = _Pending()
        self.detached, self.predicate = True, False
        if t not in LIST_BOUNDARIES:
            self.neg = False

    def _predicate(self, p: _Pending) -> None:
        m = self.mentions[self.last]
        for key in ("size", "color"):
            value = getattr(p, key)
            if value is None:
                continue
            if self.neg:
                m.exclude.add((key, value))
            else:
                _merge(m.desc, key, value)
        if p.off and not self.neg:
            raise _Unparsable("a colour or size outside the vocabulary")

    # -- positions and relations
    def _direction(self, i: int) -> int:
        """A run of position words: a grid position, or "left of X" (a relation)."""
        toks, j, run = self.toks, i, []
        self.pend.definite = False  # the "the" of "to the left" belongs to the position
        if toks[i] == "right" and i + 1 < len(toks) and toks[i + 1] in INTENSIFIED:
            return i + 1  # "right above", "right next to": an intensifier, not a side
        while j < len(toks) and (toks[j] in DIRECTIONS or toks[j] in POSITION_FILLERS):
            if toks[j] in DIRECTIONS:
                run.append(toks[j])
            j += 1
        if j < len(toks) and toks[j] == "of":
            k = j + 1
            while k < len(toks) and toks[k] in ARTICLES | DEFINITES:
                k += 1
            if k < len(toks) and toks[k] in SCENE_NOUNS:
                j = k + 1  # "at the top of the image": still a position
            else:
                if len(run) != 1 or run[0] not in DIRECTION_RELATIONS:
                    raise _Unparsable(f"unsupported relation {' '.join(run)} of")
                self._relation(DIRECTION_RELATIONS[run[0]])
                return j + 1
        self._position(run)
        return j

    def _position(self, run: list[str]) -> None:
        kinds: dict[str, set] = {"row": set(), "col": set(), "mid": set()}
        for w in run:
            kind, v = DIRECTIONS[w]
            kinds[kind].add(v)
        rows, cols, mid = kinds["row"], kinds["col"], bool(kinds["mid"])
        if len(rows) > 1 or len(cols) > 1:
            raise _Unparsable("contradictory position words")
        if mid and not rows and not cols:
            rows, cols = {1}, {1}
        elif mid:
            rows, cols = rows or {1}, cols or {1}
        cells = _cells(rows or {0, 1, 2}, cols or {0, 1, 2})
        if self.last is not None and not self.detached and not self.pend.count \
                and not self.pend.modifiers():
            self._place(self.last, cells)
        else:
            self.cells = cells if self.cells is None else self.cells & cells
            if not self.cells:
                raise _Unparsable("contradictory positions")

    def _relation(self, rel: str) -> None:
        # "A circle above a square": the subject came first.  "Above the square is a
        # circle" / "..., and above it a circle": the object comes first.
        subj = self.last if (self.last is not None and not self.detached) else None
        self.rel = {"rel": rel, "subj": subj, "obj": None}
        self.predicate = False

    def _pronoun(self) -> None:
        r = self.rel
        if r is None:
            return
        if r["subj"] is not None:
            found = [i for i in range(len(self.mentions)) if i != r["subj"]]
            if not found:
                raise _Unparsable("'it' refers to nothing")
            self._link(found[-1])
        elif self.last is not None:
            self._link(self.last)

    def _link(self, idx: int) -> None:
        r = self.rel
        if r is None:
            return
        if r["subj"] is not None:
            pair = (r["subj"], idx)
        elif r["obj"] is None:
            r["obj"] = idx
            return
        else:
            pair = (idx, r["obj"])
        self.rel = None
        a, b = pair
        if a == b or self.mentions[a].negated or self.mentions[b].negated:
            raise _Unparsable("a relation the layout cannot express")
        self.relations.append((a, r["rel"], b))


def parse_caption(caption: str, seed: int = 0, canvas: int = 256) -> Scene | None:
    """A scene that makes ``caption`` true, or None when the rules cannot read it.

    Deterministic given (seed, caption).  None means: no object, count or explicit
    "empty" was recognised, a word outside the closed lexicon appeared, or the
    constraints (positions, relations, negations, at most one object per cell) cannot
    all hold.
    """
    try:
        parsed = _Parser(_tokens(caption)).run()
    except _Unparsable:
        return None
    return place(parsed, random.Random(f"vprl-layout:{seed}:{caption}"), canvas)
