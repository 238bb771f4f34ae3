"""Reading object phrases and simple questions in the shapes world's vocabulary."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from envs.tools.colors import BASIC_TERMS

_SYNONYMS: dict[str, tuple[str, str]] = {}
for _c in BASIC_TERMS:
    _SYNONYMS[_c] = ("color", _c)
# Other names of colours, by the basic term their usual shade is nearest to.
for _c, _words in {"gray": "grey silver", "purple": "violet indigo lavender", "cyan": "turquoise aqua",
                   "blue": "navy azure", "red": "crimson scarlet maroon", "green": "lime olive",
                   "pink": "magenta", "yellow": "gold", "brown": "tan"}.items():
    for _w in _words.split():
        _SYNONYMS[_w] = ("color", _c)
for _s, _words in {"circle": "circle circles ball balls disk disks disc discs sphere spheres "
                             "round dot dots",
                   "square": "square squares cube cubes",
                   "rectangle": "rectangle rectangles rectangular box boxes block blocks oblong",
                   "triangle": "triangle triangles triangular pyramid pyramids"}.items():
    for _w in _words.split():
        _SYNONYMS[_w] = ("shape", _s)
for _z, _words in {"small": "small smaller smallest little tiny", "large":
                   "large larger largest big bigger biggest huge"}.items():
    for _w in _words.split():
        _SYNONYMS[_w] = ("size", _z)

GENERIC = frozenset("object objects shape shapes thing things item items figure figures one "
                    "ones".split())
STOP = frozenset("a an the of any all some in on at image picture photo there is are this "
                 "that these those it its colored coloured each every dark light bright pale "
                 "deep".split())  # shade words: a dark blue shape is a blue shape


def shapes_named(shape: str) -> frozenset:
    """The shapes a shape word finds: a square is a rectangle, so "rectangle" finds both."""
    return frozenset({"rectangle", "square"}) if shape == "rectangle" else frozenset({shape})


@dataclass(frozen=True)
class Query:
    """Attribute constraints of a phrase; ``unknown`` holds words outside the vocabulary
    (e.g. "dog"), which no shape can satisfy."""
    color: frozenset = frozenset()
    shape: frozenset = frozenset()
    size: frozenset = frozenset()
    unknown: tuple = ()

    @property
    def empty(self) -> bool:
        return not (self.color or self.shape or self.size)

    def accepts(self, color: str, shape: str, size: str) -> bool:
        if self.unknown:
            return False
        return ((not self.color or color in self.color) and (not self.shape or shape in self.shape)
                and (not self.size or size in self.size))

    def known(self) -> "Query":
        """The same constraints without the unknown words."""
        return Query(self.color, self.shape, self.size)

    def score(self, color: str, shape: str, size: str) -> float:
        """Fraction of the phrase's constraints met (best_image_match)."""
        parts = [(self.color, color), (self.shape, shape), (self.size, size)]
        asked = [(want, got) for want, got in parts if want] + [None] * len(self.unknown)
        if not asked:
            return 1.0
        return sum(1 for p in asked if p is not None and p[1] in p[0]) / len(asked)


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", str(text).lower())


@lru_cache(maxsize=4096)
def parse(text: str) -> Query:
    found: dict[str, set] = {"color": set(), "shape": set(), "size": set()}
    unknown = []
    for w in words(text):
        if w in _SYNONYMS:
            attr, value = _SYNONYMS[w]
            found[attr] |= shapes_named(value) if attr == "shape" else {value}
        elif w not in GENERIC and w not in STOP and w not in ("or", "and", "with"):
            unknown.append(w)
    return Query(frozenset(found["color"]), frozenset(found["shape"]), frozenset(found["size"]),
                 tuple(unknown))


def value_of(word: str) -> tuple[str, str] | None:
    """('color', 'red') for "red", ('shape', 'circle') for "balls", None otherwise."""
    return _SYNONYMS.get(word)

