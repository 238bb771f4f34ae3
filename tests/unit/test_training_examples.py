"""train.sampling.training_examples: rewards become Eq. 8 weights, per the weighting config."""

from types import SimpleNamespace

import pytest

from train.config import Config
from train.sampling import training_examples
from train.rollout import Rollout


def _loop(**weighting):
    cfg = Config()
    for key, value in weighting.items():
        setattr(cfg.weighting, key, value)
    return SimpleNamespace(cfg=cfg, tokenizer=SimpleNamespace(eos_token_id=2),
                           selfplay=SimpleNamespace(updates=True))


def _rollout(row, reward, prompt_family="viper_compact"):
    return Rollout(row, "", "", "", prompt_ids=[5, 6], completion_ids=[7], finished=True, result=None, reward=reward,
                   prompt_family=prompt_family)


def _rollouts(rewards_by_question):
    return [_rollout(q, r) for q, rewards in enumerate(rewards_by_question) for r in rewards]


@pytest.mark.parametrize("skip, expected", [(False, [1, 1, 0, 0, 1, 0]), (True, [0, 0, 0, 0, 1, 0])])
def test_skip_settled_leaves_out_questions_every_program_solved_or_none(skip, expected):
    rollouts = _rollouts([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    examples = training_examples(_loop(skip_settled=skip), rollouts)
    assert [e.weight for e in examples] == expected  # a rollout's weight is its Example's
    assert rollouts == _rollouts([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])  # values: weighing them changed none
    assert all(e.completion_ids == [7, 2] for e in examples)  # ended on its own: taught to end (EOS)


def test_rloo_weights_are_signed_advantages_per_question():
    loop = _loop()
    loop.cfg.objective.name = "rloo"
    rollouts = _rollouts([[1.0, 0.0, 0.0], [1.0, 1.0], [None, 1.0, 0.0]])
    weights = [e.weight for e in training_examples(loop, rollouts)]
    assert weights == pytest.approx([1.0, -0.5, -0.5, 0.0, 0.0, 0.0, 1.0, -1.0])


@pytest.mark.parametrize("objective", ["rloo", "grpo"])
def test_a_searched_program_weighs_its_reward_outside_its_questions_baseline(objective):
    """Search's programs are demonstrations, not samples: the samples' advantages are their
    own group's, and a probe question only search wrote for (a group of one) still teaches."""
    from dataclasses import replace

    loop = _loop()
    loop.cfg.objective.name = objective
    loop.selfplay.training_completion = lambda ro, family, tokenizer: [9]  # the found program's tokens
    samples = _rollouts([[0.0, 0.0, 0.0], [1.0, 0.0]])
    found = [replace(_rollout(0, 1.0), searched=True), replace(_rollout(1, 1.0), searched=True),
             replace(_rollout(2, 1.0), searched=True), replace(_rollout(3, 0.0), searched=True)]
    weights = [e.weight for e in training_examples(loop, samples + found)]
    alone = [e.weight for e in training_examples(loop, samples)]
    assert weights[:5] == pytest.approx(alone)  # the searched programs move no sample's advantage
    assert alone[:3] == [0.0, 0.0, 0.0] and alone[3] > 0 > alone[4]
    assert weights[5:] == [1.0, 1.0, 1.0, 0.0]  # the probe-only question (row 2) too; a wrong one weighs 0


def test_with_demo_baseline_a_searched_programs_reward_joins_its_questions_baseline():
    """objective.demo_baseline: three wrong samples beside a right searched program get
    r - mean(others) = 0 - 1/3 each (rloo); the searched program still weighs its reward."""
    from dataclasses import replace

    loop = _loop()
    loop.cfg.objective.name, loop.cfg.objective.demo_baseline = "rloo", True
    loop.selfplay.training_completion = lambda ro, family, tokenizer: [9]
    samples = _rollouts([[0.0, 0.0, 0.0], [1.0, 0.0]])
    found = [replace(_rollout(0, 1.0), searched=True), replace(_rollout(1, 1.0), searched=True),
             replace(_rollout(2, 1.0), searched=True)]
    weights = [e.weight for e in training_examples(loop, samples + found)]
    # question 0: n = 4, mean 1/4, 4/3 (0 - 1/4); question 1: n = 3, mean 2/3, 3/2 (r - 2/3)
    assert weights == pytest.approx([-1 / 3] * 3 + [0.5, -1.0] + [1.0, 1.0, 1.0])


def test_informative_counts_questions_whose_programs_disagree():
    from train.sampling import informative

    assert informative(_rollouts([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.5, 0.0]])) == 2


def test_dynamic_sampling_rounds_draw_questions_no_earlier_round_drew():
    from train.sampling import questions

    cfg = Config()
    cfg.questions_per_iteration = 5
    loop = SimpleNamespace(cfg=cfg, train_rows=[{"id": i} for i in range(12)],
                           accelerator=SimpleNamespace(num_processes=1), rank=0)
    rounds = [[r["id"] for r in questions(loop, 3, round_=k)] for k in range(3)]
    assert rounds[0] == [r["id"] for r in questions(loop, 3)]  # round 0 is the plain draw
    assert len(set(rounds[0]) | set(rounds[1])) == 10 and sorted(rounds[2]) == sorted(
        set(range(12)) - set(rounds[0]) - set(rounds[1]))  # only 2 questions were left


@pytest.mark.parametrize("monitor, free", [("reward/mean", True), ("probe/reward", True),
                                           ("eval/accuracy", False), ("eval/logical_accuracy", False)])
def test_a_run_that_picks_best_on_held_out_labels_is_not_label_free(monitor, free):
    from train.iterate import labels_read

    rewards = SimpleNamespace(label_columns=lambda: {"viunit": ()})  # a label-free reward
    pool = SimpleNamespace(uses_pool=False, label_columns=lambda: ("answer",))
    assert (not any(labels_read(rewards, pool, monitor).values())) is free


def _fake_rollout(rewards_by_round):
    """train.sampling.rollout's stand-in: round r's questions get rewards_by_round[r]."""
    def rollout(loop, batch, iteration, admit=True, purpose="rollout", round_=0):
        rows = [_rollout(q, r, "f") for q in range(len(batch)) for r in rewards_by_round[round_]]
        return rows, {"pool/f/admitted_now": 1, "refine/rounds": round_}
    return rollout


@pytest.mark.parametrize("dynamic, rounds_run", [(False, 1), (True, 3)])
def test_dynamic_sampling_draws_rounds_until_enough_questions_disagree(monkeypatch, dynamic, rounds_run):
    import train.sampling as it

    cfg = Config()
    cfg.questions_per_iteration, cfg.objective.dynamic_sampling, cfg.objective.max_sampling_rounds = 4, dynamic, 5
    loop = SimpleNamespace(cfg=cfg, train_rows=[{"id": i} for i in range(40)],
                           accelerator=SimpleNamespace(num_processes=1), rank=0)
    # Rounds 0 and 1: every question settled (all right, all wrong); round 2: all 4 disagree,
    # which meets the target of 4, so round 3 never runs.
    monkeypatch.setattr(it, "rollout", _fake_rollout([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0]]))
    batch, rollouts, metrics = it.sample_rollouts(loop, 0)
    assert metrics["rollout/sampling_rounds"] == rounds_run
    assert len(batch) == 4 * rounds_run and len({ro.row for ro in rollouts}) == len(batch)  # rows re-indexed
    assert metrics["rollout/informative_questions"] == (4 if dynamic else 0)
    assert metrics["pool/f/admitted_now"] == rounds_run  # admissions add up over rounds
    assert len({r["id"] for r in batch}) == len(batch)  # no question drawn twice
