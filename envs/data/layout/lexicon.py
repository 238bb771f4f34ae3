"""The closed vocabulary of the shapes-caption rule parser.

The parser gives up on any word it does not know rather than guess, because a wrong
layout is a wrong unit test; these word tables (and the tokenizer that feeds them) are
therefore the whole of what it can read.  They live apart from the parser so that the
vocabulary can be read and extended in one place, and so that the LLM layout path can
map its JSON replies onto the same words.
"""
from __future__ import annotations

import re

from envs.data.vocab import COLORS, NUMBER_WORDS


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

