"""envs/common: the helpers the sandbox, the tools and the rewards share."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from envs.common.images import image_digest, rgb_array
from envs.common.lru import LRU
from envs.common.questions import is_yes_no


def test_remember_computes_once_and_forgets_the_least_recently_used():
    calls = []
    lru = LRU(max_items=2)

    def compute(key):
        calls.append(key)
        return None if key == "none" else key.upper()  # a cached None is still a hit

    for key in ("a", "none", "a", "b", "none"):
        lru.remember(key, lambda: compute(key))
    assert calls == ["a", "none", "b", "none"]  # "a" was used last when "b" came, so "none" went
    assert "none" in lru and "b" in lru and "a" not in lru and len(lru) == 2
    lru.clear()
    assert len(lru) == 0 and lru.bytes == 0


def test_one_digest_for_the_same_pixels_whatever_their_layout():
    pixels = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    strided = np.asfortranarray(pixels)
    assert image_digest(pixels) == image_digest(strided) == image_digest(rgb_array(Image.fromarray(pixels)))
    assert image_digest(pixels) != image_digest(pixels.reshape(5, 4, 3))  # same bytes, another image


def test_rgb_array_refuses_other_dtypes_unless_asked_to_cast():
    with pytest.raises(TypeError, match="must be uint8"):
        rgb_array(np.zeros((2, 2, 3), np.float32))
    cast = rgb_array(np.full((2, 2), 300.0), cast=True)
    assert cast.shape == (2, 2, 3) and cast.dtype == np.uint8 and cast.max() == 255
    assert rgb_array(np.zeros((2, 2, 4), np.uint8)).shape == (2, 2, 3)


@pytest.mark.parametrize("question,expected", [
    ("Is there a red circle?", True), ("isn't the square blue?", True), ("Could it be a cube?", True),
    ("Verify image matches text=a red circle", True), ("What colour is the circle?", False),
    ("How many shapes are there?", False), ("", False)])
def test_yes_no_questions_are_read_from_their_first_word(question, expected):
    assert is_yes_no(question) is expected
