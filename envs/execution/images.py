"""Image inputs from a user: files, encoded bytes, dataset cells, arrays -> HxWx3 uint8."""
from __future__ import annotations

import io
import os

import numpy as np

from envs.common.images import rgb_array


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
    return rgb_array(image)
