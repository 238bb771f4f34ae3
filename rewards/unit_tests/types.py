"""The data a visual unit test is made of (ViUniT §3.2).

A candidate is a caption with its expected answer; sampling picks K of them and image
synthesis turns each picked caption into an image, giving the suite the scorer runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class UnitTest:
    caption: str
    answer: str
    source: str = "llm"              # which test source wrote it: "llm" or "scene"
    scene: str | None = None         # shapes scene-graph JSON, when the test source knows it
    extra: dict = field(default_factory=dict)

    def key(self) -> tuple[str, str]:
        return (self.caption.strip().lower(), self.answer.strip().lower())


# `complete(prompts, n) -> list[list[str]]`: n sampled continuations per prompt. The
# unit-test source and the layout LLMs take one of these, so any model can stand in.
