"""Pixels as every layer sees them: an HxWx3 uint8 array, and its content digest.

The sandbox's parent keys its image caches by the digest and the tool host checks a
client's image against it, so both sides must compute it the same way."""
from __future__ import annotations

import hashlib

import numpy as np


def rgb_array(image, *, cast: bool = False) -> np.ndarray:
    """A PIL image or an HxW / HxWx3 / HxWx4 array -> a contiguous HxWx3 uint8 array.

    Arrays of another dtype are clipped into 0..255 when ``cast`` is set and refused
    otherwise (a caller handing the sandbox floats has most likely mixed up scales)."""
    if hasattr(image, "convert") and hasattr(image, "size") and not isinstance(image, np.ndarray):
        return np.ascontiguousarray(np.asarray(image.convert("RGB")))
    if not isinstance(image, np.ndarray):
        raise TypeError(f"unsupported image type {type(image).__name__}; pass a PIL image or "
                        "an HxWx3 uint8 numpy array")
    array = image
    if array.dtype != np.uint8:
        if not cast:
            raise TypeError(f"image arrays must be uint8, got {array.dtype}; "
                            "convert with array.astype(np.uint8)")
        array = np.asarray(array).clip(0, 255).astype(np.uint8)
    if array.ndim == 2:
        array = np.stack([array] * 3, axis=-1)
    elif array.ndim == 3 and array.shape[2] == 4:
        array = array[:, :, :3]
    if array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"image arrays must be HxWx3, got shape {image.shape}")
    return np.ascontiguousarray(array)


def image_digest(array: np.ndarray) -> str:
    """A content hash of the pixels and the shape (the same bytes in another shape are
    another image)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr(array.shape).encode())
    digest.update(memoryview(np.ascontiguousarray(array)).cast("B"))
    return digest.hexdigest()
