"""VLAgent's model selection for the ensemble verifier: Eqs. 2-7 and Algorithm 1.

For N candidate models (detectors for LOC, VQA models for VQA), each model j gets a score
s_j, the mean over n LOC lines of I_ij (Eq. 1 against the fused pseudo-label of the
models still in play; for VQA, I_ij = 1 when model j's answer shares a word with the
fused answer).  The scores are clustered with 1-D k-means for every K in 1..N, K* is the
K with the largest mean silhouette (Eqs. 3-7), and the cluster holding the best score is
selected; the rest run again until at least M models are selected.

Conventions the paper leaves open:
- **k-means in one dimension** is solved exactly (dynamic programming over the sorted
  scores, clusters are contiguous), so there is no random restart and no seed.
- **S(1) and S(N)**: with one cluster b(j) has no other cluster, with N clusters every
  point is alone (s(j) = 0 by Eq. 5's rule); both score 0.  Ties go to the smaller K, so
  K* = 1 (keep every model) unless some 2 <= K <= N-1 separates the scores (S(K) > 0).
- **a(j) = b(j) = 0** (identical scores): s(j) = 0, as scikit-learn does.
- **Sampling**: each round scores the models on the same items unless ``sample`` (m)
  and ``rng`` are given, in which case every round draws its own m items, as Algorithm 1
  line 5 does.
"""
from __future__ import annotations

import random

import numpy as np

from envs.tools.ensemble import area_iou, fuse_answers, fuse_boxes, normalise_answer


def kmeans_1d(values, k: int) -> list[int]:
    """Optimal k-means labels of 1-D ``values`` (cluster ids ordered by value)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if not 1 <= k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    order = np.argsort(x, kind="stable")
    xs = x[order]
    s1, s2 = np.concatenate([[0], np.cumsum(xs)]), np.concatenate([[0], np.cumsum(xs ** 2)])

    def sse(i, j):  # items i..j-1
        m = j - i
        return s2[j] - s2[i] - (s1[j] - s1[i]) ** 2 / m

    cost = np.full((k + 1, n + 1), np.inf)
    cut = np.zeros((k + 1, n + 1), dtype=int)
    cost[0, 0] = 0.0
    for c in range(1, k + 1):
        for j in range(c, n + 1):
            for i in range(c - 1, j):
                v = cost[c - 1, i] + sse(i, j)
                if v < cost[c, j] - 1e-12:
                    cost[c, j], cut[c, j] = v, i
    labels_sorted = np.zeros(n, dtype=int)
    j = n
    for c in range(k, 0, -1):
        i = cut[c, j]
        labels_sorted[i:j] = c - 1
        j = i
    labels = np.empty(n, dtype=int)
    labels[order] = labels_sorted
    return labels.tolist()


def silhouette(values, labels) -> float:
    """S(K), Eqs. 3-6: the mean over points of (b - a) / max(a, b) with |.| distances;
    a point alone in its cluster scores 0; with one cluster S = 0 (our convention)."""
    x = np.asarray(values, dtype=float)
    labels = np.asarray(labels)
    clusters = sorted(set(labels.tolist()))
    if len(clusters) < 2:
        return 0.0
    s = np.zeros(len(x))
    for j in range(len(x)):
        own = labels == labels[j]
        if own.sum() == 1:
            continue
        a = np.abs(x[own] - x[j]).sum() / (own.sum() - 1)
        b = min(np.abs(x[labels == r] - x[j]).mean() for r in clusters if r != labels[j])
        top = max(a, b)
        s[j] = (b - a) / top if top > 0 else 0.0
    return float(s.mean())


def best_k(values) -> tuple[int, list[int], dict]:
    """(K*, labels, {K: S(K)}), Eq. 7, ties to the smaller K."""
    scores, labelings = {}, {}
    for k in range(1, len(values) + 1):
        labelings[k] = kmeans_1d(values, k)
        scores[k] = silhouette(values, labelings[k])
    k_star = max(scores, key=lambda k: (scores[k], -k))
    return k_star, labelings[k_star], scores


def top_cluster(values) -> list[int]:
    """Indices in the K*-means cluster that holds the largest value (Algorithm 1, l. 36-38)."""
    _, labels, _ = best_k(values)
    best = labels[int(np.argmax(values))]
    return [i for i, lab in enumerate(labels) if lab == best]


def loc_scores(boxes: dict, models: list, iou: float = 0.5, vote: float = 0.5) -> dict:
    """Eqs. 1-2: s_j over the LOC lines, against the pseudo-label of ``models``.
    ``boxes[j][i]`` is model j's box list on line i."""
    n = len(boxes[models[0]])
    pseudo = [fuse_boxes([boxes[j][i] for j in models], iou, vote) for i in range(n)]
    return {j: float(np.mean([area_iou(boxes[j][i], pseudo[i]) for i in range(n)])) if n else 0.0
            for j in models}


def vqa_scores(answers: dict, models: list) -> dict:
    """The VQA form of Eq. 2: I_ij = 1 when model j's answer shares a word with the fused one."""
    n = len(answers[models[0]])
    fused = [set(normalise_answer(fuse_answers([answers[j][i] for j in models])).split())
             for i in range(n)]
    return {j: float(np.mean([bool(set(normalise_answer(answers[j][i]).split()) & fused[i])
                              for i in range(n)])) if n else 0.0 for j in models}


def select_models(outputs: dict, minimum: int, kind: str = "loc", sample: int | None = None,
                  rng: random.Random | None = None, iou: float = 0.5, vote: float = 0.5
                  ) -> tuple[list, list[dict]]:
    """Algorithm 1: (selected models in order of selection, per-round scores).

    outputs[j][i]: model j's output on item i (box lists for kind="loc", answers for
    kind="vqa").  Stops once at least ``minimum`` (M) models are selected or none remain.
    """
    if minimum < 1:
        raise ValueError(f"M (the minimum number of models) must be >= 1, got {minimum}")
    remaining, selected, rounds = list(outputs), [], []
    n = len(next(iter(outputs.values()))) if outputs else 0
    while len(selected) < minimum and remaining:
        items = list(range(n))
        if sample is not None and sample < n:
            items = sorted((rng or random.Random(0)).sample(items, sample))
        view = {j: [outputs[j][i] for i in items] for j in remaining}
        scores = loc_scores(view, remaining, iou, vote) if kind == "loc" else \
            vqa_scores(view, remaining)
        values = [scores[j] for j in remaining]
        chosen = [remaining[i] for i in top_cluster(values)]
        rounds.append({"scores": scores, "chosen": chosen, "K": best_k(values)[0]})
        selected += chosen
        remaining = [j for j in remaining if j not in chosen]
    return selected, rounds
