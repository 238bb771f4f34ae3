"""Variants of the shapes-cv detector, for VLAgent's ensemble on a CPU.

Each variant changes what the classical pipeline sees, then runs shapes-cv's own
segmentation on it and maps the boxes back to the crop's pixels:

- ``shapes-cv/half``, ``shapes-cv/third``: the crop downsampled 2x / 3x (box filter), as a
  detector with a coarser input resolution; boxes snap to the coarse grid;
- ``shapes-cv/blur``: a 3x3 median filter first (removes thin clutter, rounds corners);
- ``shapes-cv/jpeg``: a JPEG round trip at quality 25 (blocking and colour bleeding).

They are real, different detectors of the same scenes, which err in different places
(small objects vanish at low resolution, compression shifts colours), the situation the
ensemble verifier is for.  They are configurations of ``envs.tools.shapes_cv``, not forks.
"""
from __future__ import annotations

import io

import numpy as np
from PIL import Image
from scipy import ndimage

from envs.common.lru import LRU
from envs.tools import shapes_cv
from envs.tools.backend import View

_CACHE = LRU(max_items=2048)


def _resize(image: np.ndarray, factor: int) -> np.ndarray:
    h, w = image.shape[:2]
    size = (max(1, w // factor), max(1, h // factor))
    return np.asarray(Image.fromarray(image).resize(size, Image.BOX))


def _jpeg(image: np.ndarray, quality: int = 25) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="JPEG", quality=quality)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


def _median(image: np.ndarray) -> np.ndarray:
    return ndimage.median_filter(image, size=(3, 3, 1))


VARIANTS = {"half": lambda im: _resize(im, 2), "third": lambda im: _resize(im, 3),
            "blur": _median, "jpeg": _jpeg}


class ShapesCVVariant(shapes_cv.ShapesCV):
    """shapes-cv on a transformed view (see the module docstring)."""

    def __init__(self, variant: str):
        if variant not in VARIANTS:
            raise ValueError(f"unknown shapes-cv variant {variant!r}; known: {', '.join(VARIANTS)}")
        super().__init__()
        self.variant = variant
        self.name = f"shapes-cv/{variant}"

    def components(self, view: View) -> tuple:
        return _CACHE.remember((self.variant, view.digest, view.box), lambda: self._components(view))

    def _components(self, view: View) -> tuple:
        h, w = view.image.shape[:2]
        seen = VARIANTS[self.variant](np.ascontiguousarray(view.image)) if h and w else view.image
        sh, sw = seen.shape[:2]
        ref = min(view.root.shape[:2]) * min(sh / max(h, 1), sw / max(w, 1))
        comps = shapes_cv.segment(seen, shapes_cv.background(view), max(1, int(round(ref))))
        fx, fy = w / max(sw, 1), h / max(sh, 1)
        return tuple(c._replace(left=int(round(c.left * fx)), right=min(w, int(round(c.right * fx))),
                                lower=int(round(c.lower * fy)), upper=min(h, int(round(c.upper * fy))))
                     for c in comps)


def half():
    return ShapesCVVariant("half")


def third():
    return ShapesCVVariant("third")


def blur():
    return ShapesCVVariant("blur")


def jpeg():
    return ShapesCVVariant("jpeg")
