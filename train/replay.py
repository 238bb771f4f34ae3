"""A replay buffer of rewarded programs from earlier iterations (RAFT / ReST-style).

Under a binary reward only a few sampled programs carry weight, and an on-policy update
sees each success once: the next iteration's questions are new, and what was learnt
fades. The buffer keeps every program that earned a positive reward and trains on it
again in later iterations with weight reward · decay^age, so old successes count less
the further the policy has moved since it wrote them. Every rank holds the same buffer
(programs are gathered before they are added) and contributes its shard of the replayed
examples, so the update does not depend on the world size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Replayed:
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]  # the target as trained (EOS included when it ended on its own)
    reward: float
    iteration: int                   # the iteration whose rollouts it came from


class ReplayBuffer:
    def __init__(self, capacity: int, decay: float, items: list | None = None):
        self.capacity, self.decay = capacity, decay
        self.items: list[Replayed] = [Replayed(tuple(d["prompt_ids"]), tuple(d["completion_ids"]), d["reward"],
                                               d["iteration"]) for d in (items or [])]

    def add(self, items: list[Replayed]) -> int:
        """Add this iteration's rewarded programs (same list on every rank); a program
        already held is replaced by its newer copy; the oldest go first past capacity.
        Returns how many were added."""
        if not self.capacity:
            return 0
        fresh = [it for it in items if it.reward > 0]
        keys = {(it.prompt_ids, it.completion_ids) for it in fresh}
        kept = [it for it in self.items if (it.prompt_ids, it.completion_ids) not in keys]
        # Stable order: by iteration, then content, so every rank and resume agree.
        merged = sorted(kept + fresh, key=lambda it: (it.iteration, it.prompt_ids, it.completion_ids))
        self.items = merged[-self.capacity:]
        return len(fresh)

    def weight(self, item: Replayed, iteration: int) -> float:
        return item.reward * self.decay ** max(iteration - item.iteration, 0)

    def examples(self, iteration: int, rank: int = 0, world: int = 1) -> list:
        """This rank's shard of the programs to train on again at `iteration` (only those
        from earlier iterations), each with its decayed weight."""
        from train.update import Example

        older = [it for it in self.items if it.iteration < iteration]
        return [Example(list(it.prompt_ids), list(it.completion_ids), self.weight(it, iteration))
                for it in older[rank::world]]

    def to_json(self) -> list[dict]:
        return [asdict(it) | {"prompt_ids": list(it.prompt_ids), "completion_ids": list(it.completion_ids)}
                for it in self.items]
