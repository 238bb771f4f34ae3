"""Few-shot pool self-play inside the training loop (seed 002).

Each prompt family keeps its own pool. Programs that reach the label join their
family's pool and become the in-context shots of the next iteration; compile and
runtime errors get up to `max_refinements` self-refinement rounds. At evaluation the
families' answers are combined by majority vote, an LLM judge, and the oracle bound
(`train.evaluate.family_hits`).
"""

from __future__ import annotations

import random
from collections import Counter

from envs.prompts import get_family
from rewards.combine import execute_and_score
from train.rollout import rescored
from envs.selfplay import (FewShotPool, PoolEntry, pools_from_json, pools_to_json, refine_batch, refine_stats,
                           sample_shots)

MODES = ("rwr_only", "pool_only", "pool_and_rwr")


class SelfPlay:
    def __init__(self, cfg, default_family: str, metric: str, run_dir=None, seed: int = 0):
        self.cfg = cfg
        self.run_dir, self.seed = run_dir, seed  # unit-test suites' cache; counterfactual scenes' seed
        self.names = list(cfg.families) or [default_family]
        self.families = {name: get_family(name) for name in self.names}
        self.metric = metric
        self.embed = None
        if self.uses_pool:  # similar/diverse shots, least_diverse eviction and the diversity metric
            from policies.embed import default_embedder

            self.embed = default_embedder()
        self.pools = {name: self._empty(name) for name in self.names}
        self.admission_counts = {name: Counter() for name in self.names}
        self._unit_tests = None  # the viunit reward that `admission: unit_tests` asks

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

    def refine(self, name, tokenizer, rows, rollouts, shots, generator, executor, reward_set) -> tuple[list, dict]:
        """Self-refinement of errored rollouts: the rollouts, each fixed one replaced by its
        corrected program with that program's reward (`train.rollout.rescored`), and the stats."""
        if not self.cfg.max_refinements:
            return list(rollouts), {}

        def generate(prompts):
            return [s.text for s in generator.generate(prompts, n=1, desc="refine")]

        def execute(programs, indices):
            return executor.run(programs, [rows[rollouts[i].row]["image"] for i in indices])

        refined = refine_batch(generate, execute, self.families[name], tokenizer,
                               [rows[r.row]["question"] for r in rollouts], [r.program for r in rollouts],
                               [r.result for r in rollouts], self.cfg.max_refinements,
                               shots_per_question=[shots[r.row] for r in rollouts])
        fixed = [k for k, item in enumerate(refined) if item.rounds]
        out = list(rollouts)
        if fixed:
            # Score the refined programs on the one path; completions are whole programs.
            scored = execute_and_score([rows[out[k].row] for k in fixed], [""] * len(fixed),
                                       [refined[k].program for k in fixed], executor, reward_set, metric=self.metric)
            for k, sc in zip(fixed, scored):
                out[k] = rescored(out[k], refined[k].program, sc, rows[out[k].row], self.metric)
        return out, refine_stats(refined, prefix=f"refine/{name}/")

    def admit(self, name: str, rows: list[dict], rollouts, iteration: int, gather=None, executor=None) -> int:
        """Programs whose task reward reaches the threshold, and that pass the stricter
        `admission` check when one is configured, join the family's pool.

        `gather` (e.g. `accelerate.utils.gather_object`) collects the candidates of every
        rank, in rank order, so all ranks admit the same list and hold one pool; each rank
        checks its own candidates first (`executor` runs them where the check needs it)."""
        if not self.uses_pool:
            return 0
        scored = [(ro, ro.parts.get("correctness", ro.reward)) for ro in rollouts]
        scored = [(ro, float(s)) for ro, s in scored if s is not None]
        solved = [ro for ro, s in scored if s >= self.pools[name].threshold]
        passed = self._admission_check(rows, solved, executor)
        refused = {id(ro) for ro, ok in zip(solved, passed) if not ok}
        counts = [(len(solved), len(refused))]
        if gather is not None:
            counts = gather(counts)
        self.admission_counts[name]["checked"] += sum(c[0] for c in counts)
        self.admission_counts[name]["refused"] += sum(c[1] for c in counts)
        candidates = []
        for ro, score in scored:
            if id(ro) in refused:
                continue
            row = rows[ro.row]
            candidates.append(PoolEntry(
                question=row["question"], program=ro.program, answer=ro.result.answer, reward=score,
                step=iteration, family=name, source_id=row.get("id")))
        if gather is not None:
            candidates = gather(candidates)
        return sum(bool(self.pools[name].admit(entry)) for entry in candidates)

    def _admission_check(self, rows, solved, executor) -> list[bool]:
        from train.admission import counterfactual_pass, unit_tests_pass

        mode, options = self.cfg.admission, dict(self.cfg.admission_options)
        if mode == "correctness" or not solved:
            return [True] * len(solved)
        if mode == "unit_tests":
            if self._unit_tests is None:  # its own viunit: suites and builders kept across iterations
                from rewards.registry import get

                self._unit_tests = get("viunit")
            return unit_tests_pass([ro.program for ro in solved], [rows[ro.row] for ro in solved], options,
                                   run_dir=self.run_dir, reward=self._unit_tests, executor=executor)
        if executor is None:
            raise ValueError("admission: counterfactual runs the programs: pass executor= to SelfPlay.admit")
        return counterfactual_pass(solved, rows, executor, options, seed=self.seed)

    def label_columns(self) -> tuple[str, ...]:
        """The label columns the pools read (admission checks the label): () without a pool."""
        from train.admission import label_columns

        return label_columns(self.cfg.admission, self.cfg.admission_options) if self.uses_pool else ()

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
            if self.uses_pool and self.cfg.admission != "correctness":  # solved programs the stricter check refused
                out.update({f"pool/{name}/admission/{k}": v for k, v in self.admission_counts[name].items()})
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
