"""Policy-gradient objectives (train/objectives.py), the replay buffer and their place
on the one update path (train/update.py)."""

import math

import pytest
import torch

from tests.unit.test_update import _delta, _examples
from train.config import ObjectiveConfig
from train.objectives import group_advantages, reduce_tokens, token_losses
from train.replay import ReplayBuffer, Replayed


@pytest.mark.parametrize("objective", ["rloo", "grpo"])
@pytest.mark.parametrize("rewards", [[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.3, 0.3]])
def test_a_group_whose_rewards_are_all_equal_has_zero_advantages(objective, rewards):
    assert group_advantages(["q"] * len(rewards), rewards, objective) == [0.0] * len(rewards)


def test_rloo_is_the_reward_minus_the_mean_of_the_others():
    groups = ["a"] * 4 + ["b"] * 3
    rewards = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.25]
    adv = group_advantages(groups, rewards, "rloo")
    expected = [1.0, -1 / 3, -1 / 3, -1 / 3, 1 - 0.625, 1 - 0.625, 0.25 - 1.0]
    assert adv == pytest.approx(expected)
    assert sum(adv[:4]) == pytest.approx(0.0) and sum(adv[4:]) == pytest.approx(0.0)


def test_grpo_is_the_group_z_score():
    adv = group_advantages(["q"] * 4, [1.0, 0.0, 0.0, 0.0], "grpo")
    std = math.sqrt((0.75 ** 2 + 3 * 0.25 ** 2) / 3)  # 0.5, the sample std
    assert adv == pytest.approx([0.75 / (std + 1e-4)] + [-0.25 / (std + 1e-4)] * 3)


def test_programs_without_a_reward_get_zero_and_leave_the_baseline_alone():
    adv = group_advantages(["q"] * 4 + ["lone"], [1.0, None, 0.0, float("nan"), 1.0], "rloo")
    assert adv == pytest.approx([1.0, 0.0, -1.0, 0.0, 0.0])  # a group of one has no baseline


@pytest.mark.parametrize("objective", ["rloo", "grpo"])
def test_a_baseline_only_program_moves_the_baseline_and_gets_zero(objective):
    adv = group_advantages(["q"] * 4, [0.0, 0.0, 0.0, 1.0], objective, [False, False, False, True])
    full = group_advantages(["q"] * 4, [0.0, 0.0, 0.0, 1.0], objective)
    assert adv == pytest.approx(full[:3] + [0.0])  # the samples see the same group, the marked one gets 0
    assert adv[0] < 0  # three wrong samples beside a right one are pushed down; alone they tie at 0
    assert group_advantages(["q"] * 3, [0.0] * 3, objective) == [0.0] * 3


def test_unknown_group_objective_is_refused():
    with pytest.raises(ValueError, match="rloo or grpo"):
        group_advantages(["q"], [1.0], "eq8")


def _grad(adv, logp_values, old=None, clip=0.0, ref=None, kl=0.0, clip_high=0.0):
    logp = torch.tensor([logp_values], requires_grad=True)
    loss, _ = token_losses(logp, torch.tensor([adv]), None if old is None else torch.tensor([old]), clip,
                           None if ref is None else torch.tensor([ref]), kl, clip_high)
    loss.sum().backward()
    return logp.grad[0].tolist()


def test_without_ratio_the_gradient_is_minus_advantage_per_token():
    """−A·∇logp: Eq. 8's w·∇NLL with w = A, signed."""
    assert _grad(2.0, [-1.0, -0.5]) == pytest.approx([-2.0, -2.0])
    assert _grad(-0.5, [-1.0, -0.5]) == pytest.approx([0.5, 0.5])


def test_clipping_zeroes_the_gradient_where_the_ratio_left_its_band():
    """ρ = e^(logp − old); with A > 0 a token at ρ > 1+ε gets no gradient, one inside gets −A·ρ;
    with A < 0 the same holds below 1−ε."""
    old = [0.0, 0.0, 0.0]
    logp = [math.log(1.5), math.log(1.1), math.log(0.5)]
    assert _grad(1.0, logp, old, clip=0.2) == pytest.approx([0.0, -1.1, -0.5])
    assert _grad(-1.0, logp, old, clip=0.2) == pytest.approx([1.5, 1.1, 0.0])


def test_decoupled_clip_widens_only_the_upper_bound():
    """DAPO's clip(ρ, 1−ε, 1+ε_high): with ε_high = 4 a right program's token at ρ = 1.5 or 3
    still rises (−A·ρ), while a wrong program's token below 1−ε still gets none."""
    old = [0.0, 0.0, 0.0, 0.0]
    logp = [math.log(1.5), math.log(3.0), math.log(6.0), math.log(0.5)]
    assert _grad(1.0, logp, old, clip=0.2, clip_high=4.0) == pytest.approx([-1.5, -3.0, 0.0, -0.5])
    assert _grad(-1.0, logp, old, clip=0.2, clip_high=4.0) == pytest.approx([1.5, 3.0, 6.0, 0.0])
    assert _grad(1.0, logp, old, clip=0.2) == _grad(1.0, logp, old, clip=0.2, clip_high=0.2)  # 0: symmetric


def test_clipping_bounds_the_ratio_the_objective_rewards():
    """The clipped surrogate of a positive advantage stops growing at ρ = 1+ε: moving
    further buys nothing, so several steps on one batch cannot run away from it."""
    adv, old = torch.tensor([1.0]), torch.zeros(1, 1)
    values = [float(-token_losses(torch.tensor([[math.log(r)]]), adv, old, 0.2)[0]) for r in (1.1, 1.2, 1.5, 3.0)]
    assert values == pytest.approx([1.1, 1.2, 1.2, 1.2])


def test_kl_term_gradient_is_k3s():
    """d/dlogp [e^(ref−logp) − (ref−logp) − 1] = 1 − e^(ref−logp): zero at the reference."""
    logp, ref = [-1.0, -2.0], [-1.0, -1.5]
    got = _grad(0.0, logp, ref=ref, kl=0.5)
    assert got == pytest.approx([0.5 * (1 - math.exp(r - lp)) for lp, r in zip(logp, ref)])
    assert got[0] == pytest.approx(0.0)


def test_reduce_tokens_sums_or_averages_each_rows_own_tokens():
    values, mask = torch.tensor([[1.0, 2.0, 9.0], [4.0, 9.0, 9.0]]), torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert reduce_tokens(values, mask, "sum").tolist() == [3.0, 4.0]
    assert reduce_tokens(values, mask, "mean").tolist() == [1.5, 4.0]


def test_signed_weights_without_ratio_or_kl_are_eq8_on_the_same_path():
    """rloo/grpo advantages train through Eq. 8's Σ w·NLL / N: a negative weight moves the
    adapter exactly opposite to the same positive one."""
    (example,) = _examples(1, weights=[1.0])
    up, _ = _delta([example])
    example.weight = -1.0
    down, _ = _delta([example])
    assert torch.allclose(down, -up, atol=1e-7) and float(up.abs().max()) > 0


def test_first_clipped_step_equals_the_unclipped_one():
    """One step on fresh rollouts: the ratio is 1, so PPO's gradient is plain −A·∇logp."""
    examples = _examples(4, weights=[1.0, -0.5, 0.25, -1.0])
    plain, _ = _delta(examples, batch_size=4)
    clipped, stats = _delta(examples, objective=ObjectiveConfig(name="rloo", clip_eps=0.2), batch_size=4)
    assert torch.allclose(plain, clipped, atol=1e-6)
    assert stats["loss/clip_fraction"] == pytest.approx(0.0)


def test_several_epochs_report_clipping_and_kl():
    examples = _examples(4, weights=[1.0, -0.5, 0.25, -1.0])
    _, stats = _delta(examples, objective=ObjectiveConfig(name="rloo", clip_eps=0.05, kl_coef=0.1), epochs=3,
                      batch_size=2)
    assert stats["loss/clip_fraction"] > 0 and stats["loss/kl"] > 0
    assert stats["loss/steps"] == 6  # 4 programs x 3 epochs, 2 per step


def test_decoupled_clip_through_the_update_counts_tokens_outside_its_own_band():
    """Several epochs under a symmetric clip and under DAPO's wide upper bound: the update
    reads clip_eps_high (the adapters differ) and reports fewer clipped tokens with it."""
    examples = _examples(4, weights=[1.0, -0.5, 0.25, -1.0])
    sym, s_stats = _delta(examples, objective=ObjectiveConfig(name="rloo", clip_eps=0.05), epochs=3, batch_size=2)
    wide, w_stats = _delta(examples, objective=ObjectiveConfig(name="rloo", clip_eps=0.05, clip_eps_high=10.0),
                           epochs=3, batch_size=2)
    assert not torch.allclose(sym, wide, atol=1e-7)
    assert 0 < w_stats["loss/clip_fraction"] < s_stats["loss/clip_fraction"]


def test_kl_trains_zero_advantage_programs_too():
    """A KL term applies to every sampled program; without it weight-0 programs are dropped."""
    examples = _examples(3, weights=[1.0, 0.0, 0.0])
    _, plain = _delta(examples)
    _, with_kl = _delta(examples, objective=ObjectiveConfig(kl_coef=0.1))
    assert (plain["loss/examples"], with_kl["loss/examples"]) == (1, 3)


def _item(tag, reward, iteration):
    return Replayed((1, 2), (tag, 9), reward, iteration)


def test_replay_weight_decays_with_age_and_replays_only_older_programs():
    buffer = ReplayBuffer(capacity=10, decay=0.5)
    buffer.add([_item(3, 1.0, 0), _item(4, 0.5, 1), _item(5, 0.0, 1)])  # reward 0 is not kept
    assert len(buffer.items) == 2
    weights = {tuple(e.completion_ids): e.weight for e in buffer.examples(iteration=2)}
    assert weights == {(3, 9): 0.25, (4, 9): 0.25}  # 1·0.5² and 0.5·0.5¹
    assert [e.completion_ids for e in buffer.examples(iteration=1)] == [[3, 9]]  # not its own iteration's


def test_replay_keeps_the_newest_within_capacity_and_survives_json():
    buffer = ReplayBuffer(capacity=2, decay=0.9)
    buffer.add([_item(3, 1.0, 0)])
    buffer.add([_item(4, 1.0, 1), _item(3, 1.0, 1)])  # the same program again: the newer copy stays
    buffer.add([_item(5, 1.0, 2)])
    assert len(buffer.items) == 3 - 1 and buffer.items[0].iteration == 1  # 3@0 replaced by 3@1, then evicted
    assert [(it.completion_ids[0], it.iteration) for it in buffer.items] == [(4, 1), (5, 2)]
    again = ReplayBuffer(2, 0.9, buffer.to_json())
    assert again.items == buffer.items


def test_replay_shards_are_disjoint_and_whole():
    buffer = ReplayBuffer(capacity=10, decay=1.0)
    buffer.add([_item(t, 1.0, 0) for t in range(3, 8)])
    shards = [buffer.examples(1, rank, 2) for rank in (0, 1)]
    assert sorted(e.completion_ids[0] for s in shards for e in s) == [3, 4, 5, 6, 7]


def test_replay_off_adds_nothing():
    buffer = ReplayBuffer(capacity=0, decay=0.5)
    assert buffer.add([_item(3, 1.0, 0)]) == 0 and buffer.examples(5) == []
