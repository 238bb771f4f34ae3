"""Naming colours with the basic colour terms (Berlin and Kay's eleven, plus teal and cyan).

A colour is named by the term of its nearest prototype in CIELAB, where distances follow
perceived differences better than in RGB.  Each term has a few prototypes spanning its
light, dark and saturated shades; the eight colours the shapes renderer draws are among
them, so our own scenes are named exactly as they were drawn.  Kept free of heavy
imports: sandbox workers import it.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from envs.data.vocab import COLORS

# Prototypes per term, sRGB.  Web colour names and common shade names of each term; a
# prototype is where a colour is called that term, not a boundary.
TERMS: dict[str, tuple[tuple[int, int, int], ...]] = {
    "black": ((0, 0, 0), (35, 35, 35)),
    "white": ((255, 255, 255), (238, 238, 238)),
    "gray": ((128, 128, 128), (90, 90, 90), (169, 169, 169), (60, 60, 60), (200, 200, 200)),
    "brown": ((139, 69, 19), (150, 100, 50), (101, 67, 33), (160, 82, 45), (120, 80, 50)),
    "red": ((255, 0, 0), (200, 0, 0), (139, 0, 0), (220, 20, 60)),
    "orange": ((255, 165, 0), (255, 127, 0), (255, 140, 60)),
    "yellow": ((255, 255, 0), (255, 215, 0), (240, 230, 100)),
    "green": ((0, 128, 0), (0, 255, 0), (0, 100, 0), (50, 205, 50), (107, 142, 35), (144, 238, 144)),
    "teal": ((0, 128, 128), (0, 100, 100), (0, 150, 136)),
    "cyan": ((0, 255, 255), (0, 206, 209), (127, 255, 255)),
    "blue": ((0, 0, 255), (0, 0, 139), (65, 105, 225), (30, 144, 255), (0, 0, 90), (135, 170, 235)),
    "purple": ((128, 0, 128), (148, 0, 211), (75, 0, 130), (186, 85, 211), (160, 120, 220),
               (80, 20, 90)),
    "pink": ((255, 192, 203), (255, 105, 180), (255, 20, 147), (219, 112, 147)),
}
for _name, _rgb in COLORS.items():  # the renderer's palette names itself
    TERMS[_name] = TERMS[_name] + (_rgb,)

BASIC_TERMS: tuple[str, ...] = tuple(TERMS)


def to_lab(rgb) -> np.ndarray:
    """sRGB (..., 3) in 0..255 -> CIELAB (D65)."""
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    c = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92)
    xyz = c @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                        [0.0193, 0.1192, 0.9505]]).T
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]),
                     200 * (f[..., 1] - f[..., 2])], -1)


_NAMES = [t for t, protos in TERMS.items() for _ in protos]
_LAB = to_lab([p for protos in TERMS.values() for p in protos])


def color_name(rgb) -> str:
    """The basic colour term nearest to ``rgb`` (a triple in 0..255)."""
    return _name(tuple(int(round(float(v))) for v in rgb))


@lru_cache(maxsize=65536)
def _name(rgb: tuple) -> str:
    d = ((_LAB - to_lab(rgb)) ** 2).sum(-1)
    return _NAMES[int(d.argmin())]
