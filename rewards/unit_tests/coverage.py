"""σ: choosing K of the candidate tests to cover answers and inputs (ViUniT §3.2.2, Alg. 1)."""

from __future__ import annotations

import random

import numpy as np

COVERAGE_STRATEGIES = ("random", "answer", "input", "answer_then_input")
COVERAGE_CRITERIA = ("farthest_point", "paper")


def _answer_key(answer: str) -> str:
    return " ".join(str(answer).lower().strip().rstrip(".").split())


def _next_by_distance(dist: np.ndarray, chosen: list[int], left: list[int], criterion: str) -> int:
    sub = dist[np.ix_(left, chosen)]
    # Eq. 4 read literally scores a candidate by its distance to the FARTHEST chosen test,
    # so two near-duplicates can both be picked; the released code maximises the distance
    # to the NEAREST chosen test instead, which is farthest-point sampling.
    score = sub.max(axis=1) if criterion == "paper" else sub.min(axis=1)
    return left[int(np.argmax(score))]  # ties: the earliest candidate


def coverage_sample(candidates, k: int, embed=None, strategy: str = "answer_then_input",
                    criterion: str = "farthest_point", rng=None) -> list:
    """The chosen candidates, in selection order.

    `candidates` have `.caption` and `.answer`; `embed(list[str]) -> array` encodes
    captions (needed by `input` and `answer_then_input`). `answer` takes one test per
    distinct answer (in order of first appearance) and then cycles through the answers
    again; `answer_then_input` takes one per answer and then adds tests by caption
    distance; `input` starts from a random test.
    """
    if strategy not in COVERAGE_STRATEGIES:
        raise ValueError(f"unknown coverage strategy {strategy!r}; choose one of {', '.join(COVERAGE_STRATEGIES)}")
    if criterion not in COVERAGE_CRITERIA:
        raise ValueError(f"unknown distance criterion {criterion!r}; choose one of {', '.join(COVERAGE_CRITERIA)}")
    candidates = list(candidates)
    rng = rng if isinstance(rng, random.Random) else random.Random(rng)
    if k <= 0 or not candidates:
        return []
    k = min(k, len(candidates))
    order = list(range(len(candidates)))
    if strategy == "random":
        return [candidates[i] for i in rng.sample(order, k)]

    groups: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        groups.setdefault(_answer_key(c.answer), []).append(i)
    chosen: list[int] = []
    if strategy in ("answer", "answer_then_input"):
        chosen = [members[0] for members in groups.values()][:k]
    else:
        chosen = [rng.choice(order)]

    if strategy == "answer":
        queues = [members[1:] for members in groups.values()]
        while len(chosen) < k:
            for q in queues:
                if q and len(chosen) < k:
                    chosen.append(q.pop(0))
        return [candidates[i] for i in chosen]

    if embed is None:
        raise ValueError(f"strategy {strategy!r} needs an embedding function for the captions")
    vectors = np.asarray(embed([c.caption for c in candidates]), dtype=np.float64)
    if vectors.shape[0] != len(candidates):
        raise ValueError(f"embed returned {vectors.shape[0]} vectors for {len(candidates)} captions")
    dist = np.linalg.norm(vectors[:, None, :] - vectors[None, :, :], axis=-1)
    while len(chosen) < k:
        left = [i for i in order if i not in chosen]
        chosen.append(_next_by_distance(dist, chosen, left, criterion))
    return [candidates[i] for i in chosen]
