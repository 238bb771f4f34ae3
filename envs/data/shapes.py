"""Synthetic shapes VQA: scenes, rendering, questions and the HF dataset builder.

Public entry point of the shapes world (see docs/INTERFACES.md); the pieces live in
scene.py, render.py, spec.py, questions.py and counterfactual.py.
"""
from __future__ import annotations

import json
import random

from envs.data.heldout import Quota
from envs.data.counterfactual import (counterfactual_items, counterfactual_scenes,
                                      logical_accuracy, logical_eval, logical_report)
from envs.data.programs import reference_program
from envs.data.questions import sample_question
from envs.data.render import png_bytes, render
from envs.data.scene import Obj, Scene, sample_scene
from envs.data.spec import FAMILIES, UndefinedQuestion, answer_spec, well_defined
from envs.data.vocab import COLORS, SHAPES, SIZES

__all__ = [
    "Obj", "Scene", "sample_scene", "render", "sample_question", "answer_spec", "well_defined",
    "UndefinedQuestion", "build_dataset", "generate_rows", "counterfactual_scenes",
    "counterfactual_items", "logical_accuracy", "logical_eval", "logical_report", "FAMILIES",
    "COLORS", "SHAPES", "SIZES", "features", "reference_program",
]

SPLITS = ("train", "validation", "test")


def features():
    import datasets

    return datasets.Features({
        "id": datasets.Value("string"),
        "image": datasets.Image(),
        "question": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "answers": datasets.Sequence(datasets.Value("string")),
        "family": datasets.Value("string"),
        "scene": datasets.Value("string"),
        "spec": datasets.Value("string"),
    })


def generate_rows(n: int, rng: random.Random, split: str = "train", overlap: bool = False,
                  clutter: float = 0.0, families=None, size: int = 256, progress=None,
                  balanced: bool = False) -> dict:
    """``n`` rows as batched columns (one fresh scene per question).

    balanced: the families take turns and answers are capped per family
    (`envs.data.heldout.Quota`), as held-out splits need.
    """
    quota = Quota(families or FAMILIES) if balanced else None
    cols: dict[str, list] = {k: [] for k in features()}
    for i in range(n):
        while True:
            scene = sample_scene(rng, overlap=overlap, clutter=clutter, size=size)
            try:
                q = sample_question(rng, scene, [quota.family(i)] if quota else families)
            except ValueError:  # e.g. a spatial-only family on a one-object scene
                continue
            if quota is None or quota.take(q["family"], q["answer"]):
                break
        cols["id"].append(f"shapes-{split}-{i:06d}")
        cols["image"].append({"bytes": png_bytes(render(scene, size)), "path": None})
        cols["question"].append(q["question"])
        cols["answer"].append(q["answer"])
        cols["answers"].append(q["answers"])
        cols["family"].append(q["family"])
        cols["scene"].append(scene.to_json())
        cols["spec"].append(json.dumps(q["spec"], separators=(",", ":")))
        if progress is not None:
            progress.update(1)
    return cols


def build_dataset(train: int = 1000, validation: int = 200, test: int = 200, seed: int = 0,
                  overlap: bool = False, clutter: float = 0.0, progress: bool = True,
                  families=None, size: int = 256, balanced_eval: bool = True):
    """A ``datasets.DatasetDict`` (train/validation/test), a pure function of its arguments.

    Each split has its own random stream derived from ``seed``, so changing the size of
    one split never changes the rows of another. With ``balanced_eval`` the validation
    and test splits balance families and answers (see `envs.data.heldout`), so the best
    constant answer stays near a quarter; the training split is drawn freely.
    """
    import datasets
    from tqdm.auto import tqdm

    counts = {"train": train, "validation": validation, "test": test}
    for name, n in counts.items():
        if int(n) != n or n < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    bar = tqdm(total=sum(counts.values()), desc="shapes", unit="q", disable=not progress)
    out = {}
    try:
        for name in SPLITS:
            rng = random.Random(f"vprl-shapes:{seed}:{name}")
            cols = generate_rows(counts[name], rng, name, overlap, clutter, families, size, bar,
                                 balanced=balanced_eval and name != "train")
            out[name] = datasets.Dataset.from_dict(cols, features=features())
    finally:
        bar.close()
    return datasets.DatasetDict(out)
