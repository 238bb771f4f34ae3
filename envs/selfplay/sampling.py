"""Choosing the k shots of one prompt from a few-shot pool.

`random` is the paper's choice (seed 002, 4.3.2: similarity-based sampling made no
significant difference, 54.4% vs 54.0% on ChartQA); `similar` (nearest questions by
sentence embedding) and `diverse` (greedy farthest-point) are here to test that on our
tasks. Until the pool holds k usable entries the prompt stays zero-shot (only the
family's own examples), as in the paper's step 0.

Shots are `(question, body)` pairs for `PromptFamily.render(tokenizer, question, shots=...)`:
the family writes `# Query: {question}\\n{header}{body}`, so a body is the program without
its `def execute_command(image):` line. Programs from the trainer begin with the family's
`body_start` line (the prompt forced it), so the shots repeat the pattern the prompt
ends with.
"""

from __future__ import annotations

import random
from typing import Sequence

import numpy as np

from envs.selfplay.pool import Embedder, FewShotPool, PoolEntry
from policies.programs import program_body

SHOT_STRATEGIES = ("random", "similar", "diverse")


def _candidates(pool: FewShotPool | Sequence[PoolEntry], family: str | None,
                exclude_source_id) -> list[PoolEntry]:
    entries = pool.for_family(family) if isinstance(pool, FewShotPool) else \
        [e for e in pool if family is None or e.family == family]
    seen, out = set(), []
    for entry in entries:
        # The example being solved must not see its own solution as a shot: that would
        # turn training-set accuracy into copying.
        if exclude_source_id is not None and entry.source_id == exclude_source_id:
            continue
        body = program_body(entry.program)
        if not body or (entry.question, body) in seen:
            continue  # the same shot twice wastes a slot of k
        seen.add((entry.question, body))
        out.append(entry)
    return out


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def _vectors(pool, entries: list[PoolEntry], embed: Embedder) -> np.ndarray:
    if isinstance(pool, FewShotPool) and pool.embed is embed:
        return _unit(pool.embeddings(entries))  # reuse the pool's per-question cache
    return _unit(embed([e.question for e in entries]))


def _random_pick(n: int, k: int, rng) -> list[int]:
    if isinstance(rng, random.Random):
        return rng.sample(range(n), k)
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return [int(i) for i in generator.choice(n, size=k, replace=False)]


def farthest_point(vectors: np.ndarray, k: int, start: int) -> list[int]:
    """Greedy farthest-point selection: each next pick maximises its cosine distance to
    the nearest already picked one (ties: the lower index)."""
    chosen = [start]
    nearest_sim = vectors @ vectors[start]
    while len(chosen) < min(k, len(vectors)):
        masked = nearest_sim.copy()
        masked[chosen] = np.inf
        nxt = int(np.argmin(masked))
        chosen.append(nxt)
        nearest_sim = np.maximum(nearest_sim, vectors @ vectors[nxt])
    return chosen


def sample_shots(pool: FewShotPool | Sequence[PoolEntry], question: str, k: int,
                 strategy: str = "random", rng=None, embed: Embedder | None = None,
                 family: str | None = None, exclude_source_id=None) -> list[tuple[str, str]]:
    """k `(question, body)` shots for `question`, or [] while fewer than k entries qualify.

    family: only entries written in this prompt family (a viper program is no example
        for the pot family); None takes every entry.
    exclude_source_id: the id of the example being solved, whose own entries are skipped.
    rng: `np.random.Generator`, `random.Random`, a seed or None (random strategy only).
    embed: for similar/diverse; defaults to the pool's own embedder.
    """
    if strategy not in SHOT_STRATEGIES:
        raise ValueError(f"unknown shot strategy {strategy!r}; choose one of {', '.join(SHOT_STRATEGIES)}")
    if k <= 0:
        return []
    entries = _candidates(pool, family, exclude_source_id)
    if len(entries) < k:
        return []
    if strategy == "random":
        picked = _random_pick(len(entries), k, rng)
    else:
        embed = embed if embed is not None else getattr(pool, "embed", None)
        if embed is None:
            raise ValueError(f"shot strategy {strategy!r} needs embed= "
                             "(e.g. policies.embed.default_embedder())")
        vectors = _vectors(pool, entries, embed)
        query = _unit(embed([question]))[0]
        sims = vectors @ query
        if strategy == "similar":
            # Stable sort so equal similarities keep pool order; the nearest shot goes
            # last, right before the question, where in-context examples weigh most.
            picked = list(np.argsort(-sims, kind="stable")[:k])[::-1]
        else:
            # Anchor on the most relevant entry, then cover the pool: the set stays
            # related to the question without k near-copies of one program.
            picked = farthest_point(vectors, k, start=int(np.argmax(sims)))
    return [(entries[i].question, program_body(entries[i].program)) for i in picked]
