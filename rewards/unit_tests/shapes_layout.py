"""Captions <-> layouts in the shapes world: the image generator M of ViUniT §3.2.3.

A visual unit test is a caption and an expected answer; before a program can run on it
the caption has to become an image.  In the shapes world the image is a pure function
of a scene graph, so M only has to turn a caption into a ``Scene``:

* ``caption_scene`` writes the canonical caption of a scene.  Positions use a coarse
  3x3 grid (top/middle/bottom x left/center/right), so a scene whose objects sit on cell
  centres, one per cell, is described exactly: any question spec has the same answer on
  the scene and on ``parse_caption`` of its caption.
* ``parse_caption`` is a closed-vocabulary rule parser: it understands the canonical
  captions and the plain captions an LLM writes about shapes (counts, sizes, colours,
  grid positions, pairwise relations, negation).  Any word it does not know makes it
  give up (None) rather than guess, because a wrong layout is a wrong unit test.
* ``LLMLayout`` covers what the rules refuse: an LLM writes the layout as JSON boxes,
  as in LM-guided layout-to-image generation.

Grid cells are numbered 0..8 in reading order (0 = top left, 4 = center, 8 = bottom
right); scene coordinates keep the project's bottom-left origin, so "top" is a large y.
"""
from __future__ import annotations

import functools
import itertools
import json
import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from envs.data.scene import EDGE, Obj, Scene, fits
from envs.data.vocab import COLORS, NUMBER_WORDS, SHAPES, SIZES, half_extent

__all__ = ["ROWS", "COLS", "CELL_PHRASES", "cell_center", "cell_of", "on_grid", "caption_scene",
           "parse_caption", "LAYOUT_PROMPT", "layout_prompt", "parse_layout_json", "LLMLayout",
           "caption_to_scene", "captions_to_scenes"]

ROWS = ("top", "middle", "bottom")
COLS = ("left", "center", "right")
CELL_PHRASES = ("at the top left", "at the top center", "at the top right",
                "at the middle left", "in the center", "at the middle right",
                "at the bottom left", "at the bottom center", "at the bottom right")
MAX_OBJECTS = 9  # one per cell


# ---------------------------------------------------------------------------- grid

@functools.lru_cache(maxsize=64)
def cell_center(cell: int, canvas: int = 256) -> tuple[float, float]:
    """Centre of a grid cell in scene coordinates (whole pixels, bottom-left origin)."""
    row, col = divmod(cell, 3)
    return float(round(canvas * (2 * col + 1) / 6)), float(round(canvas * (5 - 2 * row) / 6))


def cell_of(obj: Obj, canvas: int = 256) -> int:
    """The cell containing the object's centre."""
    col = min(2, max(0, int(obj.x * 3 / canvas)))
    row = 2 - min(2, max(0, int(obj.y * 3 / canvas)))
    return 3 * row + col


def on_grid(scene: Scene) -> bool:
    """True when every object sits on a distinct cell centre: then the canonical caption
    pins the scene down exactly."""
    cells = [cell_of(o, scene.size) for o in scene.objects]
    return len(set(cells)) == len(cells) and all(
        (o.x, o.y) == cell_center(c, scene.size) for o, c in zip(scene.objects, cells))


def _assign_cells(scene: Scene) -> list[int]:
    """Cells for the caption.  Off-grid scenes get distinct cells greedily by distance so
    that their (approximate) caption still parses."""
    canvas = scene.size
    if on_grid(scene) or len(scene.objects) > MAX_OBJECTS:
        return [cell_of(o, canvas) for o in scene.objects]
    centres = [cell_center(c, canvas) for c in range(9)]
    pairs = sorted(((o.x - cx) ** 2 + (o.y - cy) ** 2, i, c)
                   for i, o in enumerate(scene.objects) for c, (cx, cy) in enumerate(centres))
    cells: dict[int, int] = {}
    for _, i, c in pairs:
        if i not in cells and c not in cells.values():
            cells[i] = c
    return [cells[i] for i in range(len(scene.objects))]


def _article(text: str) -> str:
    return ("an " if text[0] in "aeiou" else "a ") + text


def caption_scene(scene: Scene) -> str:
    """Canonical caption: every object with size, colour, shape and cell, in reading
    order, e.g. "A large red circle at the top left and a small blue square in the
    center."  Exact for ``on_grid`` scenes; clutter and noise are not described."""
    if not scene.objects:
        return "An empty image with no shapes."
    cells = _assign_cells(scene)
    order = sorted(range(len(cells)), key=lambda i: (cells[i], i))
    parts = [f"{_article(f'{o.size} {o.color} {o.shape}')} {CELL_PHRASES[cells[i]]}"
             for i in order for o in [scene.objects[i]]]
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return text[0].upper() + text[1:] + "."


# ------------------------------------------------------------------------- lexicon

def _plurals(words: dict[str, str]) -> dict[str, str]:
    return {**words, **{w + "s": v for w, v in words.items()}}


COLOR_WORDS = {**{c: c for c in COLORS}, "grey": "gray", "violet": "purple",
               "turquoise": "cyan", "teal": "cyan", "aqua": "cyan"}
# Colours and sizes the world cannot draw: fine for a background, fatal for an object.
OFF_COLORS = {"white", "black", "pink", "brown", "magenta", "gold", "golden", "silver",
              "beige", "maroon", "navy", "indigo", "lime", "olive", "tan", "violet-red"}
OFF_SIZES = {"medium"}
SIZE_WORDS = {"small": "small", "little": "small", "tiny": "small",
              "large": "large", "big": "large", "huge": "large"}
SHAPE_WORDS = _plurals({"circle": "circle", "disk": "circle", "disc": "circle",
                        "square": "square", "triangle": "triangle"})
GENERIC_NOUNS = _plurals({w: "" for w in ("object", "shape", "thing", "item", "figure")})
SCENE_NOUNS = {"image", "picture", "photo", "photograph", "canvas", "scene", "background",
               "frame", "illustration", "drawing", "view", "panel"}
NUMBERS = {w: i for i, w in enumerate(NUMBER_WORDS)}
QUANTITIES = {"another": 1, "some": 2, "couple": 2, "pair": 2, "multiple": 2,
              "several": 3, "few": 3, "many": 4}
NEGATIONS = {"no", "not", "none", "neither", "nor", "without"}
EMPTY_WORDS = {"empty", "blank", "nothing"}
DIRECTIONS = {"top": ("row", 0), "upper": ("row", 0), "bottom": ("row", 2),
              "lower": ("row", 2), "left": ("col", 0), "right": ("col", 2),
              "center": ("mid", 1), "centre": ("mid", 1), "middle": ("mid", 1)}
POSITION_FILLERS = {"side", "corner", "part", "half", "area", "edge", "hand", "far",
                    "region", "section"}
RELATION_WORDS = {"above": "above", "over": "above", "below": "below", "under": "below",
                  "beneath": "below", "underneath": "below"}
DIRECTION_RELATIONS = {"left": "left", "right": "right", "top": "above", "upper": "above",
                       "bottom": "below", "lower": "below"}
# "," and "or" keep a negation going ("no red, blue or green circles"); the rest end it.
LIST_BOUNDARIES = {",", "or", "nor"}
BOUNDARIES = LIST_BOUNDARIES | {"and", "but", "while", "plus", "with", "without", "whereas"}
COPULAS = {"is", "are", "was", "were", "appears", "appear", "looks", "look"}
RELATIVES = {"which", "that", "who"}
INTENSIFIED = set(RELATION_WORDS) | {"next", "beside", "by", "near"}
PRONOUNS = {"it", "them"}
# Words that carry no layout information.  Anything outside the lexicon aborts the parse.
FILLERS = {
    "there", "be", "being", "its", "of", "to", "at", "in", "on", "into", "onto", "this",
    "shows", "show", "showing", "shown", "depicts", "depicting", "depicted", "contains",
    "containing", "contain", "has", "have", "having", "featuring", "features", "just",
    "only", "exactly", "also", "each", "other", "both", "all", "any", "single", "placed",
    "located", "positioned", "sitting", "sits", "lying", "lies", "visible", "present",
    "drawn", "plain", "simple", "solid", "flat", "filled", "colored", "coloured", "bright",
    "dark", "light", "pale", "different", "various", "otherwise", "else", "total",
    "altogether", "together", "here", "next", "beside", "besides", "near", "nearby", "close",
    "by", "alongside", "adjacent", "directly", "slightly", "either", "set", "group",
    "color", "colour", "colors", "colours", "as", "well", "ones",
}
ARTICLES = {"a", "an"}
DEFINITES = {"the", "these", "those"}


def _tokens(caption: str) -> list[str]:
    text = caption.lower().replace("n't", " not").replace("'s", " is")
    text = re.sub(r"[-_/]", " ", text)
    out = []
    for t in re.findall(r"[a-z]+|\d+|[.,;:!?]", text):
        out.append("." if t in ".!?" else "," if t in ";:" else t)
    return out


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


# ------------------------------------------------------------------------- layout

_COMBOS = list(itertools.product(SHAPES, COLORS, SIZES))


def _matches(combo: tuple, desc: dict) -> bool:
    shape, color, size = combo
    return all({"shape": shape, "color": color, "size": size}[k] == v for k, v in desc.items())


def _holds(rel: str, a: int, b: int) -> bool:
    (ra, ca), (rb, cb) = divmod(a, 3), divmod(b, 3)
    return {"left": ca < cb, "right": ca > cb, "above": ra < rb, "below": ra > rb}[rel]


def _layout(p: _Parser, rng: random.Random, canvas: int) -> Scene | None:
    positives = [(i, m) for i, m in enumerate(p.mentions) if not m.negated]
    negatives = [m for m in p.mentions if m.negated]
    if not positives:
        return Scene([], size=canvas) if (p.empty or negatives) else None
    counts = {i: (m.count if m.count is not None else rng.randint(2, 3)) for i, m in positives}
    if sum(counts.values()) > MAX_OBJECTS:
        return None
    everywhere = [m.desc for m in negatives if len(m.cells) == 9]
    somewhere = [(m.desc, m.cells) for m in negatives if len(m.cells) < 9]

    # Attributes first: fill what the caption leaves open at random, never creating an
    # object it negates and, when possible, no extra match for another mention (so
    # "two circles and a red object" keeps two circles and one red object).
    objects: list[tuple[int, tuple]] = []
    for i, m in positives:
        allowed = [c for c in _COMBOS if _matches(c, m.desc)
                   and not any(_matches(c, {k: v}) for k, v in m.exclude)
                   and not any(_matches(c, d) for d in everywhere)]
        if not allowed:
            return None
        others = [o.desc for j, o in positives if j != i and not o.desc.items() <= m.desc.items()]
        preferred = [c for c in allowed if not any(_matches(c, d) for d in others)] or allowed
        objects += [(i, rng.choice(preferred)) for _ in range(counts[i])]

    domains = []
    for i, combo in objects:
        cells = set(p.mentions[i].cells)
        for d, banned in somewhere:
            if _matches(combo, d):
                cells -= banned
        domains.append(sorted(cells))
        rng.shuffle(domains[-1])
    constraints: list[list[tuple[int, str, bool]]] = [[] for _ in objects]
    for a, rel, b in p.relations:
        for u, (i, _) in enumerate(objects):
            for v, (j, _) in enumerate(objects):
                if i == a and j == b:
                    constraints[u].append((v, rel, True))   # u rel v
                    constraints[v].append((u, rel, False))  # v is the object of rel
    cells = _search(domains, constraints)
    if cells is None:
        return None
    placed: list[Obj] = []
    for (_, (shape, color, size)), cell in zip(objects, cells):
        x, y = cell_center(cell, canvas)
        o = Obj(shape, color, size, x, y)
        if not fits(o, placed, canvas, overlap=False):
            return None  # only on canvases too small for the grid
        placed.append(o)
    return Scene(placed, size=canvas)


def _search(domains: list[list[int]], constraints, budget: int = 20000) -> list[int] | None:
    """Distinct cells satisfying the relations: backtracking, smallest domains first."""
    order = sorted(range(len(domains)), key=lambda k: len(domains[k]))
    got: dict[int, int] = {}
    steps = [0]

    def ok(u: int, cell: int) -> bool:
        for v, rel, subject in constraints[u]:
            if v in got and not (_holds(rel, cell, got[v]) if subject
                                 else _holds(rel, got[v], cell)):
                return False
        return True

    def go(k: int) -> bool:
        if k == len(order):
            return True
        u = order[k]
        used = set(got.values())
        for cell in domains[u]:
            steps[0] += 1
            if steps[0] > budget:
                return False
            if cell not in used and ok(u, cell):
                got[u] = cell
                if go(k + 1):
                    return True
                del got[u]
        return False

    return [got[u] for u in range(len(domains))] if go(0) else None


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
    return _layout(parsed, random.Random(f"vprl-layout:{seed}:{caption}"), canvas)


# ----------------------------------------------------------------------- LLM layout

LAYOUT_PROMPT = """\
You draw layouts for captions of synthetic images: flat shapes on a plain background.
Every object has a shape (circle, square or triangle), a color (red, orange, yellow,
green, cyan, blue, purple or gray), a size (small or large) and a box [x0, y0, x1, y1]
in fractions of the image width and height, origin at the TOP-LEFT corner, y growing
downward.  A small object's box is about 0.09 wide, a large one about 0.17.  Boxes must
not overlap.  Reply with one JSON object and nothing else.

Caption: A large red circle to the left of a small blue square.
Layout: {"objects": [{"shape": "circle", "color": "red", "size": "large", "box": [0.15, 0.42, 0.32, 0.59]}, {"shape": "square", "color": "blue", "size": "small", "box": [0.65, 0.46, 0.74, 0.55]}]}

Caption: Two green triangles near the top and a yellow square below them.
Layout: {"objects": [{"shape": "triangle", "color": "green", "size": "small", "box": [0.2, 0.1, 0.29, 0.19]}, {"shape": "triangle", "color": "green", "size": "large", "box": [0.6, 0.08, 0.77, 0.25]}, {"shape": "square", "color": "yellow", "size": "small", "box": [0.45, 0.7, 0.54, 0.79]}]}

Caption: An empty canvas.
Layout: {"objects": []}

Caption: A purple circle in the middle, with three small squares in a row along the bottom.
Layout: {"objects": [{"shape": "circle", "color": "purple", "size": "large", "box": [0.41, 0.41, 0.58, 0.58]}, {"shape": "square", "color": "orange", "size": "small", "box": [0.15, 0.82, 0.24, 0.91]}, {"shape": "square", "color": "gray", "size": "small", "box": [0.45, 0.82, 0.54, 0.91]}, {"shape": "square", "color": "cyan", "size": "small", "box": [0.75, 0.82, 0.84, 0.91]}]}

Caption: {caption}
Layout:"""

MAX_LAYOUT_OBJECTS = 12


def layout_prompt(caption: str) -> str:
    return LAYOUT_PROMPT.replace("{caption}", " ".join(caption.split()))


def _json_candidates(text: str):
    """Every JSON value embedded in ``text`` (code fences and prose around it allowed)."""
    text = re.sub(r"```[a-zA-Z]*", "", text)
    for variant in (text, re.sub(r",\s*([}\]])", r"\1", text).replace("'", '"')):
        dec = json.JSONDecoder()
        for m in re.finditer(r"[\[{]", variant):
            try:
                yield dec.raw_decode(variant, m.start())[0]
            except ValueError:
                continue


def _vocab(value, table: dict) -> str | None:
    if not isinstance(value, str):
        return None
    return table.get(value.strip().lower())


def _layout_object(item, canvas: int) -> Obj | None:
    """One JSON object -> Obj centred on its box, or None when it is not drawable."""
    if not isinstance(item, dict):
        return None
    shape = _vocab(item.get("shape"), SHAPE_WORDS)
    color = _vocab(item.get("color", item.get("colour")), COLOR_WORDS)
    box = item.get("box", item.get("bbox"))
    if shape is None or color is None or not isinstance(box, (list, tuple)) or len(box) != 4:
        return None
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        return None
    # Fractions as asked; a reply in pixels of this canvas is tolerated.
    scale = 1.0 if max(x0, y0, x1, y1) <= 1.0 else float(canvas)
    x0, x1 = sorted((min(max(x0 / scale, 0.0), 1.0), min(max(x1 / scale, 0.0), 1.0)))
    y0, y1 = sorted((min(max(y0 / scale, 0.0), 1.0), min(max(y1 / scale, 0.0), 1.0)))
    size = _vocab(item.get("size"), SIZE_WORDS)
    if size is None:
        if item.get("size") is not None:
            return None  # e.g. "medium": not drawable
        half = max(x1 - x0, y1 - y0) * canvas / 2
        cut = (half_extent("small", canvas) + half_extent("large", canvas)) / 2
        size = "large" if half >= cut else "small"
    r = half_extent(size, canvas)
    lo, hi = EDGE + r, canvas - EDGE - r
    x = min(max((x0 + x1) / 2 * canvas, lo), hi)
    y = min(max((1.0 - (y0 + y1) / 2) * canvas, lo), hi)  # flip to the bottom-left origin
    return Obj(shape, color, size, float(round(x)), float(round(y)))


def _nearest_free(obj: Obj, placed: list[Obj], canvas: int) -> Obj | None:
    """``obj`` if it fits, else the closest free spot on rings around it."""
    if fits(obj, placed, canvas, overlap=False):
        return obj
    step = max(2, canvas // 64)
    for radius in range(step, canvas, step):
        for k in range(24):
            a = k * 2 * math.pi / 24
            cand = Obj(obj.shape, obj.color, obj.size, float(round(obj.x + radius * math.cos(a))),
                       float(round(obj.y + radius * math.sin(a))))
            if fits(cand, placed, canvas, overlap=False):
                return cand
    return None


def parse_layout_json(text: str, canvas: int = 256) -> Scene | None:
    """The first ``{"objects": [...]}`` (or bare list of objects) in an LLM reply, as a
    Scene.  Boxes are clamped into the canvas and overlapping objects nudged to the
    nearest free spot.  The WHOLE layout is rejected (None) when any object has a shape,
    colour or size outside the vocabulary or lacks a box: dropping that object would
    silently change the answer the caption implies."""
    for data in _json_candidates(text):
        items = data.get("objects") if isinstance(data, dict) else data
        if not isinstance(items, list) or len(items) > MAX_LAYOUT_OBJECTS:
            continue
        if isinstance(data, list) and not all(isinstance(x, dict) for x in data):
            continue
        placed: list[Obj] = []
        for item in items:
            obj = _layout_object(item, canvas)
            if obj is None:
                return None
            obj = _nearest_free(obj, placed, canvas)
            if obj is None:
                return None
            placed.append(obj)
        return Scene(placed, size=canvas)
    return None


class LLMLayout:
    """Caption -> Scene by asking an LLM for a JSON layout.

    ``complete(prompts, n) -> list[list[str]]`` samples n continuations per prompt; the
    first of ``candidates`` continuations that parses to a valid scene wins, and a
    caption with none gets None.  ``stats`` counts "parsed" and "dropped" captions.
    """

    def __init__(self, complete: Callable[[list[str], int], list[list[str]]],
                 candidates: int = 5, canvas: int = 256):
        self.complete = complete
        self.candidates = candidates
        self.canvas = canvas
        self.stats: Counter = Counter()

    def __call__(self, captions: list[str]) -> list[Scene | None]:
        if not captions:
            return []
        replies = self.complete([layout_prompt(c) for c in captions], self.candidates)
        out: list[Scene | None] = []
        for texts in replies:
            scene = next((s for s in (parse_layout_json(t, self.canvas) for t in texts)
                          if s is not None), None)
            self.stats["parsed" if scene is not None else "dropped"] += 1
            out.append(scene)
        return out


def captions_to_scenes(captions: list[str], seed: int = 0, llm_layout=None,
                       canvas: int = 256) -> list[Scene | None]:
    """Rules first; the captions they refuse go to ``llm_layout`` in one batch."""
    scenes = [parse_caption(c, seed, canvas) for c in captions]
    missing = [i for i, s in enumerate(scenes) if s is None]
    if llm_layout is not None and missing:
        for i, s in zip(missing, llm_layout([captions[i] for i in missing])):
            scenes[i] = s
    return scenes


def caption_to_scene(caption: str, seed: int = 0, llm_layout=None,
                     canvas: int = 256) -> Scene | None:
    return captions_to_scenes([caption], seed, llm_layout, canvas)[0]
