"""Few-shot pool self-play inside the training loop (seed 002).

Each prompt family keeps its own pool. Programs that reach the label join their
family's pool and become the in-context shots of the next iteration; compile and
runtime errors get up to `max_refinements` self-refinement rounds. At evaluation the
families' answers are combined by majority vote, an LLM judge, and the oracle bound
(`train.evaluate.family_hits`).
"""

from __future__ import annotations

import random

from envs.prompts import get_family
from rewards.combine import execute_and_score
from envs.selfplay import (FewShotPool, PoolEntry, pools_from_json, pools_to_json, refine_batch, refine_stats,
                           sample_shots)

MODES = ("rwr_only", "pool_only", "pool_and_rwr")


class SelfPlay:
    def __init__(self, cfg, default_family: str, metric: str):
        self.cfg = cfg
        self.names = list(cfg.families) or [default_family]
        self.families = {name: get_family(name) for name in self.names}
        self.metric = metric
        self.embed = None
        if self.uses_pool:  # similar/diverse shots, least_diverse eviction and the diversity metric
            from policies.embed import default_embedder

            self.embed = default_embedder()
        self.pools = {name: self._empty(name) for name in self.names}

    def _empty(self, _family: str) -> FewShotPool:
        return FewShotPool(self.cfg.capacity, eviction=self.cfg.eviction, threshold=self.cfg.threshold,
                           embed=self.embed)

    @property
    def uses_pool(self) -> bool:
        return self.cfg.mode != "rwr_only"

    @property
    def updates(self) -> bool:
        return self.cfg.mode != "pool_only"

    def k_at(self, iteration: int) -> int:
        if not self.uses_pool or not self.cfg.shots_per_step:
            return 0
        return self.cfg.shots_per_step[min(iteration, len(self.cfg.shots_per_step) - 1)]

    def prompts(self, name: str, tokenizer, rows: list[dict], iteration: int, seed: int) -> tuple[list[str], list]:
        """Prompts for `rows` in family `name`, with k shots from its pool (zero-shot until it holds k)."""
        k = self.k_at(iteration)
        rng = random.Random(f"{seed}:{iteration}:{name}")
        shots = [sample_shots(self.pools[name], row["question"], k, self.cfg.strategy, rng, self.embed,
                              family=name, exclude_source_id=row.get("id")) if k else []
                 for row in rows]
        family = self.families[name]
        return [family.render(tokenizer, row["question"], s) for row, s in zip(rows, shots)], shots

    def refine(self, name, tokenizer, rows, rollouts, shots, generator, executor, reward_set) -> dict:
        """Self-refinement of errored rollouts; fixed ones take the corrected program and its reward."""
        if not self.cfg.max_refinements:
            return {}

        def generate(prompts):
            return [s.text for s in generator.generate(prompts, n=1, desc="refine")]

        def execute(programs, indices):
            return executor.run(programs, [rows[rollouts[i].row]["image"] for i in indices])

        refined = refine_batch(generate, execute, self.families[name], tokenizer,
                               [rows[r.row]["question"] for r in rollouts], [r.program for r in rollouts],
                               [r.result for r in rollouts], self.cfg.max_refinements,
                               shots_per_question=[shots[r.row] for r in rollouts])
        fixed = [(ro, item) for ro, item in zip(rollouts, refined) if item.rounds]
        if fixed:
            # Score the refined programs on the one path; completions are whole programs.
            scored = execute_and_score([rows[ro.row] for ro, _ in fixed], [""] * len(fixed),
                                       [item.program for _, item in fixed], executor, reward_set, metric=self.metric)
            for (ro, item), sc in zip(fixed, scored):
                ro.program, ro.result, ro.reward, ro.parts = item.program, sc.result, sc.reward, sc.parts
                ro.refined = True
        return refine_stats(refined, prefix=f"refine/{name}/")

    def admit(self, name: str, rows: list[dict], rollouts, iteration: int, gather=None) -> int:
        """Programs whose task reward reaches the threshold join the family's pool.

        `gather` (e.g. `accelerate.utils.gather_object`) collects the candidates of every
        rank, in rank order, so all ranks admit the same list and hold one pool."""
        if not self.uses_pool:
            return 0
        candidates = []
        for ro in rollouts:
            score = ro.parts.get("correctness", ro.reward)
            if score is None:
                continue
            row = rows[ro.row]
            candidates.append(PoolEntry(
                question=row["question"], program=ro.program, answer=ro.result.answer, reward=float(score),
                step=iteration, family=name, source_id=row.get("id")))
        if gather is not None:
            candidates = gather(candidates)
        return sum(bool(self.pools[name].admit(entry)) for entry in candidates)

    def training_completion(self, ro, name: str, tokenizer) -> list[int] | None:
        """Completion ids that teach the original prompt the refined program (None: unusable)."""
        prefix = self.families[name].program_prefix
        if not ro.program.startswith(prefix):
            return None
        return tokenizer(ro.program[len(prefix):].rstrip("\n"), add_special_tokens=False)["input_ids"]

    def metrics(self) -> dict:
        out = {}
        for name, pool in self.pools.items():
            out.update(pool.metrics(prefix=f"pool/{name}/"))
        return out

    def table_rows(self) -> list[dict]:
        return [row for pool in self.pools.values() for row in pool.table_rows()] if self.uses_pool else []

    def to_json(self) -> list[dict]:
        return pools_to_json(self.pools)

    def load_json(self, items: list[dict]) -> None:
        self.pools = pools_from_json(items, self.names, self._empty)


def judge_reply(generator, prompt: str, max_new_tokens: int = 8) -> str:
    """The policy answering the judge's multiple-choice prompt, greedily and briefly."""
    return generator.generate([prompt], n=1, temperature=0.0, max_new_tokens=max_new_tokens, desc="judge")[0].text
