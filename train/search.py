"""Program search where sampling found nothing: expert iteration's search step.

The update can only reinforce programs the policy samples. For each question whose
sampled programs all fall short (best reward below `search.below`), the programs are
the seeds of a local search (`policies.mutation`: genetic-programming edits over the
API the prompt documents, with the question as a terminal). The mutants are run and
scored by the run's own rewards, and those that beat every sampled program of their
question join the batch as rollouts (`searched=True`). Their prompt is taught them, as
a refined program's is; the objective weighs them like any rollout of the question.

No label enters the search itself: a mutant is kept only for its reward, so a label-free
reward stays label-free.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import replace

from policies.mutation import api_methods, mutants
from rewards.combine import execute_and_score
from train.rollout import Rollout, rescored


def search(cfg, rows: list[dict], rollouts: list[Rollout], families: dict, executor, reward_set,
           metric: str | None, seed: int) -> tuple[list[Rollout], dict]:
    """Rollouts for the mutants that beat their question's sampled programs, and stats.

    `families` maps a prompt-family name to its PromptFamily; script families (a `stop`
    rule: not Python) are not searched. The draw depends on the question, not on the
    rank holding it, so any world size searches alike."""
    groups: dict = defaultdict(list)
    for ro in rollouts:
        family = families.get(ro.prompt_family)
        if family is not None and family.stop is None and not ro.searched:
            groups[(ro.prompt_family, ro.row)].append(ro)
    todo, programs, owners = 0, [], []
    for (name, row), group in groups.items():
        best = max((ro.reward for ro in group if ro.reward is not None), default=None)
        if best is not None and best >= cfg.below:
            continue
        todo += 1
        question = rows[row]["question"]
        rng = random.Random(f"{seed}:{name}:{question}:{rows[row].get('id')}")
        found = mutants([ro.program for ro in group], cfg.mutants_per_question, rng, depth=cfg.depth,
                        methods=api_methods(families[name].api), terminals=(question,), beam=cfg.beam)
        prefix = families[name].program_prefix
        found = [p for p in found if p.startswith(prefix)]  # the prompt must be able to continue into it
        programs += found
        owners += [(group[0], best)] * len(found)
    scored = execute_and_score([rows[ro.row] for ro, _ in owners], [""] * len(programs), programs, executor,
                               reward_set, metric=metric) if programs else []
    kept = [replace(rescored(ro, program, sc, rows[ro.row], metric), refined=False, searched=True,
                    completion=program[len(families[ro.prompt_family].program_prefix):], completion_ids=[])
            for (ro, best), program, sc in zip(owners, programs, scored)
            if sc.reward is not None and (best is None or sc.reward > best)]
    solved = {(ro.prompt_family, ro.row) for ro in kept}
    return kept, {"search/questions": todo, "search/mutants": len(programs), "search/kept": len(kept),
                  "search/questions_improved": len(solved)}

