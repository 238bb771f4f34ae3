"""Validation of what sandbox workers send the tool host.

Workers may run hostile code, so a request is trusted for nothing: JSON only, a known
method, arguments of the declared types and sizes, a box inside the image, and an image
whose digest is recomputed from its pixels (a forged digest would otherwise poison the
image cache that every other worker's requests read).
"""
from __future__ import annotations

import numpy as np

from envs.common.images import image_digest
from envs.common.lru import LRU
from envs.tools.backend import View
from envs.tools.host_client import METHODS

ARG_TYPES = {"find": (str,), "exists": (str,), "verify_property": (str, str),
             "simple_query": (str,), "match_score": (str,), "describe": (), "answer": (str,),
             "llm_query": (str, bool)}
MAX_TEXT = 4096
MAX_SIDE = 16384


class NeedImage(Exception):
    """The host does not hold this image (any more): the client resends its pixels."""


def parse_request(header: dict, blob: bytes, images: LRU, vision: bool = True):
    """(method, View or None, args tuple); raises ValueError/TypeError with the reason."""
    method = header.get("method")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}")
    if method != "llm_query" and not vision:
        raise ValueError("this host serves llm_query only (vision runs in the worker)")
    args = header.get("args")
    types = ARG_TYPES[method]
    if not isinstance(args, list) or len(args) != len(types) or not all(
            type(a) is t for a, t in zip(args, types)):
        raise TypeError(f"{method} takes arguments of types {[t.__name__ for t in types]}")
    if any(isinstance(a, str) and len(a) > MAX_TEXT for a in args):
        raise ValueError(f"text arguments are limited to {MAX_TEXT} characters")
    if method == "llm_query":
        return method, None, tuple(args)
    return method, _view(header, blob, images), tuple(args)


def _view(header: dict, blob: bytes, images: LRU) -> View:
    digest, shape, box = header.get("digest"), header.get("shape"), header.get("box")
    if not isinstance(digest, str):
        raise ValueError("missing image digest")
    if not (isinstance(shape, list) and len(shape) == 3 and shape[2] == 3
            and all(type(v) is int and 0 < v <= MAX_SIDE for v in shape)):
        raise ValueError(f"bad image shape {shape!r}")
    if blob:
        if len(blob) != shape[0] * shape[1] * 3:
            raise ValueError("image bytes do not match its shape")
        root = np.frombuffer(blob, dtype=np.uint8).reshape(shape)  # read-only view
        if image_digest(root) != digest:
            raise ValueError("image digest does not match its pixels")
        images.put(digest, root)
    root = images.get(digest)
    if root is None:
        raise NeedImage
    h, w = root.shape[:2]
    if not (isinstance(box, list) and len(box) == 4 and all(type(v) is int for v in box)):
        raise ValueError(f"bad box {box!r}")
    left, lower, right, upper = box
    if not (0 <= left < right <= w and 0 <= lower < upper <= h):
        raise ValueError(f"box {box} is outside the {w}x{h} image")
    return View(root[h - upper:h - lower, left:right], root, tuple(box), digest)


def jsonable(value):
    """Backend results (tuples, numpy scalars) as plain JSON values."""
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return str(value)
