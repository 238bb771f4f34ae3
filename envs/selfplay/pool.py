"""The few-shot pool of self-play (seed 002, section 3): solved examples become shots.

A program that reaches the label on a training example is admitted; the next step
samples its shots from the pool instead of the hand-written examples. The pool is plain
data (JSON list) so the trainer can save it with every checkpoint and restore it on
resume, and its statistics (size, mean reward, diversity) go to W&B next to the loss.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

Embedder = Callable[[Sequence[str]], np.ndarray]
EVICTIONS = ("oldest", "lowest_reward", "least_diverse")


@dataclass
class PoolEntry:
    """One solved example: what a shot is made of, plus where it came from."""

    question: str
    program: str                # the executed program, header included (or a bare body)
    answer: str | None
    reward: float
    step: int                   # the self-play step (trainer iteration) that found it
    family: str                 # the prompt family it was written in: shots stay per family
    source_id: str | int | None = None  # the training example it solved

    def __post_init__(self):
        # Rewards and steps often arrive as numpy scalars, which json.dumps refuses.
        if self.reward is not None:
            self.reward = float(self.reward)
        self.step = int(self.step)
        if self.source_id is not None and not isinstance(self.source_id, (str, int)):
            self.source_id = self.source_id.item() if hasattr(self.source_id, "item") else str(self.source_id)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "PoolEntry":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        missing = sorted(f.name for f in fields(cls) if f.name != "source_id" and f.name not in data)
        if unknown or missing:
            raise ValueError(f"pool entry with unknown keys {unknown} / missing keys {missing}; "
                             f"expected {sorted(known)}")
        return cls(**data)


def _program_key(program: str) -> str:
    # Trailing whitespace differs between a completion and the same program re-extracted;
    # it must not make a duplicate look new.
    return "\n".join(line.rstrip() for line in program.strip("\n").splitlines())


class FewShotPool:
    """Solved examples kept as shots, with admission by reward and a bounded size.

    capacity: the most entries kept; admitting one more evicts by `eviction`:
        "oldest" (earliest step, then earliest admitted), "lowest_reward" (ties: oldest),
        or "least_diverse" (the entry whose question is nearest another entry's; needs
        `embed`).
    threshold: an entry is admitted when its reward is at least this (the task metric at
        1.0 by default, i.e. only exactly solved examples).
    embed: `fn(list[str]) -> np.ndarray` of L2-normalised rows
        (`policies.embed.default_embedder()`); used for least_diverse eviction, the
        diversity statistic and the similar/diverse shot strategies.
    """

    def __init__(self, capacity: int, eviction: str = "oldest", threshold: float = 1.0,
                 embed: Embedder | None = None):
        if capacity < 1:
            raise ValueError(f"pool capacity must be at least 1, got {capacity}")
        if eviction not in EVICTIONS:
            raise ValueError(f"unknown eviction {eviction!r}; choose one of {', '.join(EVICTIONS)}")
        if eviction == "least_diverse" and embed is None:
            raise ValueError("eviction='least_diverse' needs embed= "
                             "(e.g. policies.embed.default_embedder())")
        self.capacity, self.eviction, self.threshold = int(capacity), eviction, float(threshold)
        self.embed = embed
        self.entries: list[PoolEntry] = []   # admission order: index 0 is the oldest admitted
        self._keys: set[tuple] = set()
        self._vectors: dict[str, np.ndarray] = {}  # question text -> embedding
        self.counts = Counter()               # admitted / rejected / duplicate / evicted

    # ----------------------------------------------------------------- admission
    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    @staticmethod
    def _key(entry: PoolEntry) -> tuple:
        # Without a source id the question stands in, so two unlabeled copies still dedupe.
        source = entry.source_id if entry.source_id is not None else ("question", entry.question)
        return (str(source), _program_key(entry.program))

    def admit(self, entry: PoolEntry) -> bool:
        """Add `entry` if it earned the threshold and is new; True if it is in the pool after.

        An admitted entry can be the one evicted at once (a least_diverse near-duplicate),
        which also answers False.
        """
        reward = entry.reward
        # Written as `not >=` so NaN of any float type is rejected too.
        if reward is None or not reward >= self.threshold:
            self.counts["rejected"] += 1
            return False
        key = self._key(entry)
        if key in self._keys:
            self.counts["duplicate"] += 1
            return False
        self.entries.append(entry)
        self._keys.add(key)
        self.counts["admitted"] += 1
        evicted = None
        while len(self.entries) > self.capacity:
            evicted = self._evict()
        return evicted is not entry

    def admit_many(self, entries: Sequence[PoolEntry]) -> int:
        """Admit each entry in order; returns how many were admitted."""
        if self.eviction == "least_diverse":
            # One batched encode instead of one per admission.
            self.embeddings([e for e in entries if e.reward is not None and e.reward >= self.threshold])
        return sum(self.admit(e) for e in entries)

    # ------------------------------------------------------------------ eviction
    def _evict(self) -> PoolEntry:
        if self.eviction == "oldest":
            # min() keeps the first of equal steps, i.e. the earliest admitted.
            index = min(range(len(self.entries)), key=lambda i: self.entries[i].step)
        elif self.eviction == "lowest_reward":
            index = min(range(len(self.entries)),
                        key=lambda i: (self.entries[i].reward, self.entries[i].step))
        else:
            index = self._least_diverse_index()
        entry = self.entries.pop(index)
        self._keys.discard(self._key(entry))
        if all(e.question != entry.question for e in self.entries):
            self._vectors.pop(entry.question, None)  # keep the cache as small as the pool
        self.counts["evicted"] += 1
        return entry

    def _least_diverse_index(self) -> int:
        sims = self._similarity_matrix(self.entries)
        np.fill_diagonal(sims, -np.inf)
        nearest = sims.max(axis=1)
        np.fill_diagonal(sims, 0.0)
        mean = sims.sum(axis=1) / max(len(self.entries) - 1, 1)
        # Both ends of the closest pair share the same nearest-neighbour similarity; the
        # one closer to everyone else on average adds less coverage, then the lower
        # reward, then the older one goes.
        order = sorted(range(len(self.entries)),
                       key=lambda i: (-round(float(nearest[i]), 6), -round(float(mean[i]), 6),
                                      self.entries[i].reward, self.entries[i].step, i))
        return order[0]

    # ---------------------------------------------------------------- embeddings
    def embeddings(self, entries: Sequence[PoolEntry] | None = None) -> np.ndarray:
        """Question embeddings of `entries` (default: the pool), computed once per question."""
        if self.embed is None:
            raise ValueError("this pool has no embed=; pass one to FewShotPool or FewShotPool.from_json")
        entries = self.entries if entries is None else entries
        todo = list(dict.fromkeys(e.question for e in entries if e.question not in self._vectors))
        if todo:
            vectors = np.asarray(self.embed(todo), dtype=np.float32)
            if vectors.shape[0] != len(todo):
                raise ValueError(f"embed returned {vectors.shape[0]} rows for {len(todo)} texts")
            self._vectors.update(zip(todo, vectors))
        if not entries:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[e.question] for e in entries])

    def _similarity_matrix(self, entries: Sequence[PoolEntry]) -> np.ndarray:
        vectors = self.embeddings(entries)
        # Re-normalise: a custom embedder may not, and cosine is what the policies promise.
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0, 1.0, norms)
        return vectors @ vectors.T

    # ------------------------------------------------------------------- queries
    def for_family(self, family: str | None) -> list[PoolEntry]:
        return list(self.entries) if family is None else [e for e in self.entries if e.family == family]

    def stats(self) -> dict:
        """Size, mean reward, diversity (mean pairwise cosine distance, needs embed), families."""
        n = len(self.entries)
        diversity = None
        if self.embed is not None and n >= 2:
            sims = self._similarity_matrix(self.entries)
            upper = sims[np.triu_indices(n, k=1)]
            diversity = float(np.mean(1.0 - upper))
        return {
            "size": n,
            "capacity": self.capacity,
            "mean_reward": float(np.mean([e.reward for e in self.entries])) if n else None,
            "diversity": diversity,
            "unique_questions": len({e.question for e in self.entries}),
            "by_family": dict(Counter(e.family for e in self.entries)),
            **{k: self.counts[k] for k in ("admitted", "rejected", "duplicate", "evicted")},
        }

    def metrics(self, prefix: str = "pool/") -> dict:
        """`stats()` flattened for metrics.jsonl / W&B (`pool/size`, `pool/by_family/pot`, ...)."""
        stats = self.stats()
        flat = {f"{prefix}{k}": v for k, v in stats.items() if k != "by_family" and v is not None}
        flat.update({f"{prefix}by_family/{k}": v for k, v in stats["by_family"].items()})
        return flat

    def table_rows(self) -> list[dict]:
        """One row per entry with fixed columns, for a `wandb.Table` of the pool's contents."""
        return [{"question": e.question, "program": e.program, "answer": e.answer,
                 "reward": float(e.reward), "step": int(e.step), "family": e.family,
                 "source_id": None if e.source_id is None else str(e.source_id)}
                for e in self.entries]

    # --------------------------------------------------------------- persistence
    def to_json(self) -> list[dict]:
        """The entries in admission order: the `pool` list `train.checkpoint.save_iteration` stores.

        Settings (capacity, eviction, threshold) come from the config on resume, so a run
        resumed with a smaller capacity trims the restored pool by its own policy.
        """
        return [e.to_dict() for e in self.entries]

    @classmethod
    def from_json(cls, items: Sequence[dict], capacity: int, eviction: str = "oldest",
                  threshold: float = 1.0, embed: Embedder | None = None) -> "FewShotPool":
        pool = cls(capacity, eviction=eviction, threshold=threshold, embed=embed)
        for item in items:
            entry = PoolEntry.from_dict(item)
            key = cls._key(entry)
            if key in pool._keys:
                continue
            # Restored entries were admitted under the run's threshold already: no re-check.
            pool.entries.append(entry)
            pool._keys.add(key)
        while len(pool.entries) > pool.capacity:
            pool._evict()
        pool.counts.clear()
        return pool

    def save(self, path: str | Path) -> None:
        """Write the JSON list atomically: a kill mid-write leaves the previous file whole."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(self.to_json(), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path, capacity: int, **kwargs) -> "FewShotPool":
        return cls.from_json(json.loads(Path(path).read_text()), capacity, **kwargs)


def pools_to_json(pools: dict[str, FewShotPool]) -> list[dict]:
    """Several per-family pools as one JSON list (each entry names its family)."""
    return [item for pool in pools.values() for item in pool.to_json()]


def pools_from_json(items: Sequence[dict], families: Sequence[str],
                    make_pool: Callable[[str], FewShotPool]) -> dict[str, FewShotPool]:
    """Split a saved list back into one pool per family; `make_pool(family)` gives the empty pool."""
    pools = {family: make_pool(family) for family in families}
    by_family: dict[str, list[dict]] = {family: [] for family in families}
    for item in items:
        # Entries of a family the resumed config no longer runs are dropped, not mixed in.
        if item.get("family") in by_family:
            by_family[item["family"]].append(item)
    return {family: FewShotPool.from_json(by_family[family], pools[family].capacity,
                                          eviction=pools[family].eviction,
                                          threshold=pools[family].threshold,
                                          embed=pools[family].embed)
            for family in families}
