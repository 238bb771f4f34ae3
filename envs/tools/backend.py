"""What a perception backend implements for the ImagePatch API.

Every method receives a ``View``: the crop being asked about plus the full image it
came from.  Boxes are ``(left, lower, right, upper)`` in pixels of ``view.image`` with
the origin at its bottom-left corner; the API layer turns them into full-image
coordinates.  Results must be immutable (tuples, str, bool, float): they are memoised
per (image, crop, call) and shared by every program a worker runs.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class View(NamedTuple):
    image: np.ndarray  # HxWx3 uint8 crop, read-only
    root: np.ndarray   # the full image the crop was cut from, read-only
    box: tuple         # the crop in the full image: (left, lower, right, upper)
    digest: str        # content hash of the full image


class Backend:
    """Base class; ``find``, ``verify_property`` and ``simple_query`` are required."""

    name = "base"

    @property
    def cache_key(self) -> str:
        """Distinguishes backends whose answers differ (e.g. other model names)."""
        return self.name

    def find(self, view: View, phrase: str) -> tuple:
        raise NotImplementedError

    def exists(self, view: View, phrase: str) -> bool:
        return len(self.find(view, phrase)) > 0

    def verify_property(self, view: View, object_name: str, prop: str) -> bool:
        raise NotImplementedError

    def simple_query(self, view: View, question: str) -> str:
        raise NotImplementedError

    def match_score(self, view: View, text: str) -> float:
        """How well ``view`` shows ``text``; higher is better (best_image_match)."""
        return float(self.exists(view, text))

    def describe(self, view: View) -> str:
        return self.simple_query(view, "What is this?")

    def answer(self, view: View, question: str) -> str:
        return self.simple_query(view, question)

    def llm_query(self, question: str, long_answer: bool = True) -> str:
        raise RuntimeError(
            f"llm_query needs a text LLM backend; the {self.name!r} backend has none "
            "(pass llm=<callable(question) -> str> to envs.tools.build_namespace)")


class BackendError(ValueError):
    """A backend that cannot serve; the message is one line naming the setting to change."""
