"""Reading object phrases and simple questions in the shapes world's vocabulary."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from envs.data.vocab import COLORS

_SYNONYMS: dict[str, tuple[str, str]] = {}
for _c in COLORS:
    _SYNONYMS[_c] = ("color", _c)
_SYNONYMS.update({"grey": ("color", "gray"), "violet": ("color", "purple"),
                  "turquoise": ("color", "cyan")})
for _s, _words in {"circle": "circle circles ball balls disk disks disc discs sphere spheres "
                             "round dot dots",
                   "square": "square squares box boxes cube cubes block blocks rectangle "
                             "rectangles",
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
                 "that these those it its colored coloured each every".split())


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
            found[attr].add(value)
        elif w not in GENERIC and w not in STOP and w not in ("or", "and", "with"):
            unknown.append(w)
    return Query(frozenset(found["color"]), frozenset(found["shape"]), frozenset(found["size"]),
                 tuple(unknown))


def value_of(word: str) -> tuple[str, str] | None:
    """('color', 'red') for "red", ('shape', 'circle') for "balls", None otherwise."""
    return _SYNONYMS.get(word)

