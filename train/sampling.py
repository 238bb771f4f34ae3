"""The sampling side of an iteration: which questions, the rollouts (sample, execute,
reward, refine, admit), DAPO's extra rounds, and the weighted examples the update trains on.

`train/iterate.py` calls these in order; they share a `Loop` (built once there).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace


@dataclass
class Loop:
    """What the phases of an iteration share (built once in `main`)."""

    cfg: object
    accelerator: object
    tokenizer: object
    generator: object
    executor: object
    reward_set: object
    selfplay: object
    train_rows: object
    eval_rows: list

    @property
    def rank(self) -> int:
        return self.accelerator.process_index

    def seed(self, purpose: str, iteration: int) -> int:
        """A sampling seed per (run seed, purpose, iteration, rank): a resumed run draws
        what an uninterrupted one would, and no two ranks or phases share a stream."""
        key = f"{self.cfg.seed}:{purpose}:{iteration}:{self.rank}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:8], "little") >> 1


def questions(loop: Loop, iteration: int | str, count: int | None = None, round_: int = 0) -> list[dict]:
    """This rank's shard of the iteration's questions (the same draw on any world size).
    Round r > 0 (dynamic sampling) draws questions that no earlier round of the iteration drew."""
    cfg, world = loop.cfg, loop.accelerator.num_processes
    order = list(range(len(loop.train_rows)))
    count = min(count or cfg.questions_per_iteration, len(order))
    taken: set = set()
    for r in range(round_ + 1):
        left = [i for i in order if i not in taken]
        picks = random.Random(f"{cfg.seed}:{iteration}" + (f":{r}" if r else "")).sample(left, min(count, len(left)))
        taken.update(picks)
    return [loop.train_rows[i] for i in picks[loop.rank :: world]]


def rollout(loop: Loop, batch: list[dict], iteration: int, admit: bool = True,
            purpose: str = "rollout", round_: int = 0) -> tuple[list, dict]:
    """Sample, execute and reward programs for `batch` in every prompt family; refine
    errors and grow the few-shot pools (over all ranks) as self-play asks."""
    from accelerate.utils import gather_object

    from train.rollout import collect

    cfg, sp = loop.cfg, loop.selfplay
    # A probe samples with one seed for every adapter: alike adapters draw alike programs.
    stream = f"{purpose}/{round_}" if round_ else purpose  # each dynamic-sampling round its own stream
    loop.generator.reseed(loop.seed(stream, iteration if purpose == "rollout" else 0))
    rollouts, metrics = [], {}
    for name in sp.names:  # one prompt family (and few-shot pool) after another
        prompts, shots = sp.prompts(name, loop.tokenizer, batch, iteration, cfg.seed)
        # Each rollout's `accuracy` is its label score, for the logs: a label-free reward
        # (viunit) never sees it, but it is how runs with different rewards are compared.
        family = collect(batch, prompts, loop.generator, cfg.programs_per_question, loop.executor, loop.reward_set,
                         metric=cfg.data.metric, progress=loop.accelerator.is_main_process, desc=f"generate {name}",
                         prompt_family=name)
        family, refined = sp.refine(name, loop.tokenizer, batch, family, shots, loop.generator, loop.executor,
                                    loop.reward_set)
        metrics.update(refined)
        rollouts += family
    loop.generator.drain()  # ZeRO-3: no rank leaves generation while another still runs forwards
    if admit:
        for name in sp.names:
            family = [ro for ro in rollouts if ro.prompt_family == name]
            metrics[f"pool/{name}/admitted_now"] = sp.admit(name, batch, family, iteration, gather=gather_object,
                                                             executor=loop.executor)
    return rollouts, metrics


def mean_reward(loop: Loop, batch: list[dict], iteration: int, purpose: str = "rollout") -> float:
    """The current adapter's mean reward on `batch` (over all ranks), with the prompts (shots)
    of `iteration`; no pool admission, no update. Scores the last adapter, or a probe."""
    from accelerate.utils import gather_object

    from train.records import RolloutRecord, rollout_metrics

    done, _ = rollout(loop, batch, iteration, admit=False, purpose=purpose)
    return rollout_metrics(gather_object([RolloutRecord.of(r) for r in done]), [], [])["reward/mean"]


def informative(rollouts: list) -> int:
    """Questions whose programs disagree (rewards not all alike): the only ones a
    group-relative objective learns from."""
    groups: dict = {}
    for ro in rollouts:
        groups.setdefault((ro.prompt_family, ro.row), set()).add(ro.reward)
    return sum(len(rewards) > 1 for rewards in groups.values())


def sample_rollouts(loop: Loop, iteration: int) -> tuple[list[dict], list, dict]:
    """The iteration's questions and rollouts. With `objective.dynamic_sampling` (DAPO),
    rounds of fresh questions follow until `questions_per_iteration` questions over all
    ranks are informative or `objective.max_sampling_rounds` rounds are spent."""
    from accelerate.utils import gather_object

    cfg = loop.cfg
    batch = questions(loop, iteration)
    rollouts, metrics = rollout(loop, batch, iteration)
    rounds, useful = 1, sum(gather_object([informative(rollouts)]))
    while cfg.objective.dynamic_sampling and rounds < cfg.objective.max_sampling_rounds \
            and useful < cfg.questions_per_iteration:
        more = questions(loop, iteration, round_=rounds)
        extra, extra_metrics = rollout(loop, more, iteration, round_=rounds)
        extra = [replace(ro, row=ro.row + len(batch)) for ro in extra]  # rows index the merged batch
        for key, value in extra_metrics.items():  # admissions add up; the rest is the last round's
            metrics[key] = metrics.get(key, 0) + value if key.endswith("admitted_now") else value
        batch, rollouts, rounds = batch + more, rollouts + extra, rounds + 1
        useful = sum(gather_object([informative(rollouts)]))
    metrics.update({"rollout/sampling_rounds": rounds, "rollout/informative_questions": useful})
    return batch, rollouts, metrics


def training_examples(loop: Loop, rollouts: list) -> list:
    """Rewards → weights (Eq. 8's, or group-relative advantages: `objective.name`), and the
    completion each rollout teaches; one Example per rollout, in order: a rollout's weight
    is its Example's."""
    from train.objectives import group_advantages
    from train.update import Example, reward_to_weight, skip_settled

    cfg, eos, examples, w = loop.cfg, loop.tokenizer.eos_token_id, [], loop.cfg.weighting
    groups = [(ro.prompt_family, ro.row) for ro in rollouts]  # a question's programs are all on this rank
    if cfg.objective.name == "eq8":
        weights = [reward_to_weight(ro.reward, w.transform, w.threshold, w.clip_negative) for ro in rollouts]
    else:  # the transform (e.g. ViUniT's threshold) shapes the reward; advantages may be negative
        # A searched program is a demonstration, not a sample of the policy: it weighs its reward
        # clipped at 0 (Eq. 8's default), since a probe question it alone was written for is a
        # group of one (advantage 0) and the proven form would teach nothing there. It stays out
        # of the baseline unless `demo_baseline`: then four wrong samples beside a right
        # demonstration are pushed down, where alone they tie at advantage 0. Either baseline
        # leaves the gradient unbiased, as neither depends on the sample it is subtracted from.
        into_baseline = cfg.objective.demo_baseline
        shaped = [None if ro.reward is None or (ro.searched and not into_baseline)
                  else reward_to_weight(ro.reward, w.transform, w.threshold, False) for ro in rollouts]
        advantages = group_advantages(groups, shaped, cfg.objective.name, [ro.searched for ro in rollouts])
        weights = [reward_to_weight(ro.reward, w.transform, w.threshold, True) if ro.searched else a
                   for ro, a in zip(rollouts, advantages)]
    if w.skip_settled:
        weights = skip_settled(groups, weights)
    for ro, weight in zip(rollouts, weights):
        # A program that ended on its own is taught to end there (EOS); a truncated one is not.
        target = ro.completion_ids + ([eos] if ro.finished else [])
        if ro.refined or ro.searched:  # teach the first prompt the corrected or found program; an unusable one weighs nothing
            corrected = loop.selfplay.training_completion(ro, ro.prompt_family, loop.tokenizer)
            target, weight = (corrected + [eos], weight) if corrected else (target, 0.0)
        examples.append(Example(ro.prompt_ids, target, weight))
    return examples


def replay_candidates(rollouts: list, examples: list, iteration: int, transform) -> list:
    """This iteration's rewarded programs, gathered from every rank, for the replay buffer."""
    from accelerate.utils import gather_object

    from train.replay import Replayed

    mine = [Replayed(tuple(e.prompt_ids), tuple(e.completion_ids), worth, iteration)
            for ro, e in zip(rollouts, examples) if not ((ro.refined or ro.searched) and e.weight == 0)
            and (worth := transform(ro.reward)) > 0]
    return gather_object(mine)


def prompter(loop: Loop, iteration: int):
    """(prompt, ids) in a prompt family for rows no rollout sampled, with the shots of
    `iteration`: the probe questions search teaches a proven form on (`search.teach_probe`)."""
    def render(name: str, rows: list[dict]) -> list[tuple[str, list[int]]]:
        prompts, _ = loop.selfplay.prompts(name, loop.tokenizer, rows, iteration, loop.cfg.seed)
        return [(p, loop.tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts]
    return render
