"""Image inputs: normalisation to HxWx3 uint8 arrays and content keys."""
from __future__ import annotations

import hashlib
import io
import os

import numpy as np


def to_array(image) -> np.ndarray:
    """PIL image, HxWx3 (or HxW / HxWx4) uint8 array, a path, encoded bytes, or a
    datasets.Image dict -> HxWx3 uint8 array."""
    if isinstance(image, (str, os.PathLike)):
        from PIL import Image, UnidentifiedImageError

        path = os.fspath(image)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"image file not found: {path!r}; pass an existing image path")
        try:
            with Image.open(path) as img:
                return np.ascontiguousarray(np.asarray(img.convert("RGB")))
        except (UnidentifiedImageError, OSError) as exc:
            raise ValueError(f"cannot read image {path!r} ({exc}); pass a PNG/JPEG file") from exc
    if isinstance(image, dict) and ("bytes" in image or "path" in image):
        # A datasets.Image column read without decoding: {"bytes": ..., "path": ...}
        if image.get("bytes") is not None:
            return to_array(bytes(image["bytes"]))
        if image.get("path"):
            return to_array(image["path"])
        raise ValueError("image dict has neither 'bytes' nor 'path'")
    if isinstance(image, (bytes, bytearray, memoryview)):
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(bytes(image))) as img:
                return np.ascontiguousarray(np.asarray(img.convert("RGB")))
        except (UnidentifiedImageError, OSError) as exc:
            raise ValueError(f"cannot decode image bytes ({exc}); pass PNG/JPEG bytes") from exc
    if hasattr(image, "convert") and hasattr(image, "size") and not isinstance(image, np.ndarray):
        return np.ascontiguousarray(np.asarray(image.convert("RGB")))
    if isinstance(image, np.ndarray):
        array = image
        if array.dtype != np.uint8:
            raise TypeError(f"image arrays must be uint8, got {array.dtype}; "
                            "convert with array.astype(np.uint8)")
        if array.ndim == 2:
            array = np.stack([array] * 3, axis=-1)
        elif array.ndim == 3 and array.shape[2] == 4:
            array = array[:, :, :3]
        if array.ndim != 3 or array.shape[2] != 3:
            raise ValueError(f"image arrays must be HxWx3, got shape {image.shape}")
        return np.ascontiguousarray(array)
    raise TypeError(f"unsupported image type {type(image).__name__}; pass a PIL image, "
                    "an HxWx3 uint8 numpy array, a file path or PNG/JPEG bytes")


def image_key(array: np.ndarray) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr(array.shape).encode())
    digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()
