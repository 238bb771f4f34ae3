"""The reward-weighted NLL update (ViUniT Eq. 8) on a tiny Llama with LoRA."""

import math
import random

import pytest
import torch

from tests.helpers.tiny import tiny_lora_model
from train.config import OptimConfig
from train.update import (Example, collate, completion_nll, lr_at, reward_to_weight, run_update, skip_settled,
                          weighted_loss)


def _examples(n=5, seed=0, weights=None):
    rng = random.Random(seed)
    shared = [rng.randrange(3, 128) for _ in range(20)]
    out = []
    for i in range(n):
        prompt = shared + [rng.randrange(3, 128) for _ in range(rng.randrange(1, 6))]
        completion = [rng.randrange(3, 128) for _ in range(rng.randrange(2, 9))] + [1]
        out.append(Example(prompt, completion, weights[i] if weights else float(i % 3)))
    return out


def _manual_nll(model, example):
    """Reference: full forward of prompt+completion, log-probs of completion tokens only."""
    ids = torch.tensor([example.prompt_ids + example.completion_ids])
    logits = model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    p = len(example.prompt_ids)
    return -sum(logp[p - 1 + k, tok] for k, tok in enumerate(example.completion_ids)) / len(example.completion_ids)


def test_weighted_loss_is_eq8_with_a_constant_normaliser():
    model = tiny_lora_model()
    examples = _examples(weights=[1.0, 0.5, 2.0, 0.0, 0.25])
    batch = collate(examples, pad_id=0)
    loss = weighted_loss(completion_nll(model, batch), batch["weights"], normalizer=8)
    reference = [float(_manual_nll(model, e)) for e in examples]
    expected = sum(e.weight * r for e, r in zip(examples, reference)) / 8
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def _grads(model, examples, normalizer=5.0):
    model.zero_grad()
    batch = collate(examples, 0)
    weighted_loss(completion_nll(model, batch), batch["weights"], normalizer).backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}


def test_halving_every_weight_halves_the_gradient():
    """The old Σw·NLL/Σw made weights [1,1,1] and [0.2,0.2,0.2] the same step."""
    model = tiny_lora_model()
    full = _grads(model, _examples(3, weights=[1.0, 0.6, 0.2]))
    half = _grads(model, _examples(3, weights=[0.5, 0.3, 0.1]))
    for name in full:
        assert torch.allclose(half[name], full[name] / 2, rtol=1e-5, atol=1e-9), name
    assert any(float(g.abs().max()) > 0 for g in full.values())


def _delta(examples, objective=None, **optim):
    """Run the real update (single process) with plain SGD, whose step is lr·gradient,
    and return the adapter's change."""
    from accelerate import Accelerator

    model = tiny_lora_model()
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0)
    accelerator = Accelerator(cpu=True)
    model, optimizer = accelerator.prepare(model, optimizer)
    cfg = OptimConfig(**{"lr": 1.0, "warmup_ratio": 0.0, "schedule": "constant", "max_grad_norm": 0.0,
                         "micro_batch_size": 4, **optim})
    stats = run_update(accelerator, model, optimizer, examples, cfg, pad_id=0, seed=0, progress=False,
                       objective=objective)
    after = {n: p.detach() for n, p in accelerator.unwrap_model(model).named_parameters() if p.requires_grad}
    return torch.cat([(after[n] - before[n]).flatten() for n in before]), stats


def test_one_example_of_weight_005_moves_the_adapter_20x_less_than_weight_1():
    (example,) = _examples(1, weights=[1.0])
    strong, _ = _delta([example])
    weak, _ = _delta([Example(example.prompt_ids, example.completion_ids, 0.05)])
    assert float(strong.norm()) > 0
    # float32 parameters: the small step is read back as a difference of ~0.05-sized weights
    assert float(strong.norm() / weak.norm()) == pytest.approx(20, rel=1e-3)
    assert torch.allclose(weak * 20, strong, rtol=1e-2, atol=1e-6)


def test_zero_weight_rollouts_dilute_the_step_through_n_only():
    """N counts every rollout that entered the update: three zero-weight companions make
    the same example's step 4x smaller; `optim.normalizer` fixes N instead."""
    a, *zeros = _examples(4, weights=[1.0, 0.0, 0.0, 0.0])
    alone, _ = _delta([a])
    diluted, stats = _delta([a, *zeros])
    assert float(alone.norm() / diluted.norm()) == pytest.approx(4, rel=1e-3)
    assert torch.allclose(diluted * 4, alone, rtol=1e-2, atol=1e-6)
    assert stats["loss/normalizer"] == 4 and stats["loss/examples"] == 1
    fixed, stats = _delta([a, *zeros], normalizer=2.0)
    assert float(alone.norm() / fixed.norm()) == pytest.approx(2, rel=1e-3) and stats["loss/normalizer"] == 2


def test_filler_micro_batches_add_zero_and_accumulation_is_exact():
    """One step of 3 examples run as one micro-batch, or as 3 micro-batches plus one
    zero-weight filler (batch_size 4, micro-batch 1): the same step."""
    examples = _examples(3, weights=[1.0, 0.5, 2.0])
    together, s1 = _delta(examples, micro_batch_size=4, batch_size=4)
    split, s2 = _delta(examples, micro_batch_size=1, batch_size=4)
    assert s1["loss/steps"] == s2["loss/steps"] == 1
    assert torch.allclose(together, split, rtol=1e-3, atol=1e-6)
    assert s1["loss/tokens"] == s2["loss/tokens"]


def test_loss_metrics_count_completion_tokens_and_report_eq8():
    examples = _examples(5, weights=[1.0, 0.0, 0.5, 2.0, 0.0])
    model = tiny_lora_model()
    reference = [float(_manual_nll(model, e)) for e in examples]  # before the (lr 0) update
    _, stats = _delta(examples, lr=0.0)
    live = [e for e in examples if e.weight]
    assert stats["loss/tokens"] == sum(len(e.completion_ids) for e in live)
    assert stats["loss/examples"] == 3 and stats["loss/normalizer"] == 5 and stats["loss/steps"] == 1
    expected = sum(e.weight * r for e, r in zip(examples, reference))
    assert stats["loss/mean"] == pytest.approx(expected / 5, rel=1e-4)
    assert stats["loss/nll"] == pytest.approx(expected / 3.5, rel=1e-4)


def test_no_weighted_rollouts_means_no_step():
    delta, stats = _delta(_examples(3, weights=[0.0, 0.0, 0.0]))
    assert stats["loss/steps"] == 0 and float(delta.abs().max()) == 0.0
    assert math.isnan(stats["loss/mean"]) and stats["loss/tokens"] == 0


def test_sum_reduction_matches_eq8_token_sum():
    model = tiny_lora_model()
    examples = _examples(3, weights=[1.0, 1.0, 1.0])
    nll = completion_nll(model, collate(examples, 0), reduction="sum")
    for value, e in zip(nll, examples):
        assert float(value) == pytest.approx(float(_manual_nll(model, e)) * len(e.completion_ids), rel=1e-5)


def test_prompt_tokens_carry_no_loss():
    """Changing what the model predicts for prompt tokens cannot change the loss:
    labels cover completion tokens only, and the per-token NLL matches a manual
    completion-only computation."""
    model = tiny_lora_model()
    examples = _examples(4)
    batch = collate(examples, 0)
    assert int((batch["labels"] != -100).sum()) == sum(len(e.completion_ids) for e in examples)
    nll = completion_nll(model, batch)
    for value, e in zip(nll, examples):
        assert float(value) == pytest.approx(float(_manual_nll(model, e)), rel=1e-5)


def test_weight_zero_examples_contribute_no_gradient():
    model = tiny_lora_model()
    a, b = _examples(2, weights=[1.0, 0.0])

    def grads(examples):
        model.zero_grad()
        batch = collate(examples, 0)
        weighted_loss(completion_nll(model, batch), batch["weights"], 2.0).backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}

    alone, with_zero = grads([a]), grads([a, b])
    for name in alone:
        assert torch.allclose(alone[name], with_zero[name], atol=1e-6), name
    model.zero_grad()
    batch = collate([b], 0)
    weighted_loss(completion_nll(model, batch), batch["weights"], 2.0).backward()
    assert all(float(p.grad.abs().max()) == 0.0 for p in model.parameters() if p.requires_grad)


def test_shared_prefix_pass_equals_full_pass_in_loss_and_gradient():
    model = tiny_lora_model()
    examples = _examples(5)

    def run(share):
        model.zero_grad()
        batch = collate(examples, 0, share_prefix=share)
        loss = weighted_loss(completion_nll(model, batch), batch["weights"], 5.0)
        loss.backward()
        return float(loss), {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}, batch

    l1, g1, b1 = run(True)
    l2, g2, b2 = run(False)
    assert b1["prefix_ids"].shape[1] >= 20 and b2["prefix_ids"].shape[1] == 0
    assert l1 == pytest.approx(l2, rel=1e-5)
    for name in g1:
        assert torch.allclose(g1[name], g2[name], atol=1e-5, rtol=1e-4), name


def test_bf16_loss_and_gradients_track_fp32():
    """The CPU default runs the frozen base in bf16 with fp32 adapters; the loss it
    optimises must stay close to the fp32 loss."""
    examples = _examples(4, weights=[1.0, 1.0, 0.5, 2.0])
    batch = collate(examples, 0)
    losses = {}
    for dtype in (torch.float32, torch.bfloat16):
        model = tiny_lora_model(dtype=dtype)
        assert all(p.dtype == torch.float32 for p in model.parameters() if p.requires_grad)
        losses[dtype] = float(weighted_loss(completion_nll(model, batch), batch["weights"], 4.0))
    assert losses[torch.bfloat16] == pytest.approx(losses[torch.float32], rel=2e-2)


@pytest.mark.parametrize("reward,transform,expected", [
    (0.5, "identity", 0.5), (-0.3, "identity", 0.0), (None, "identity", 0.0), (float("nan"), "identity", 0.0),
    (0.8, "threshold", 1.0), (0.79, "threshold", 0.79), (-0.1, "threshold", 0.0),
])
def test_reward_to_weight(reward, transform, expected):
    assert reward_to_weight(reward, transform, threshold=0.8) == pytest.approx(expected)


def test_negative_weights_kept_when_clipping_is_off():
    assert reward_to_weight(-0.2, "identity", clip_negative=False) == pytest.approx(-0.2)
    with pytest.raises(ValueError, match="identity or threshold"):
        reward_to_weight(0.1, "softmax")


def test_linear_schedule_warms_up_then_decays_to_zero():
    lrs = [lr_at(s, 10, 1.0, 0.1, "linear") for s in range(10)]
    assert lrs[0] == pytest.approx(1.0)  # one warm-up step reaches the peak
    assert all(a >= b for a, b in zip(lrs[1:], lrs[2:]))
    assert lrs[-1] == pytest.approx(1 / 9) and not math.isnan(lrs[-1])


def test_negative_weights_push_down():
    model = tiny_lora_model()
    examples = _examples(2, weights=[1.0, -1.0])
    batch = collate(examples, 0)
    nll = completion_nll(model, batch)
    loss = weighted_loss(nll, batch["weights"], 2.0)
    assert float(loss) == pytest.approx(float((nll[0] - nll[1]) / 2), rel=1e-5)


def test_a_non_finite_loss_skips_its_step_and_is_counted():
    """An inf weight (or NaN logits) makes the step's loss non-finite: that step is
    skipped whole, the others train, and the adapter stays finite."""
    good = _examples(2, weights=[1.0, 0.5])
    poisoned = _examples(1, seed=5, weights=[float("inf")])
    clean, _ = _delta(good, batch_size=1, micro_batch_size=1)
    delta, stats = _delta(good + poisoned, batch_size=1, micro_batch_size=1, normalizer=3.0)
    assert stats["loss/skipped_steps"] == 1 and stats["loss/steps"] == 3
    assert bool(torch.isfinite(delta).all()) and float(delta.abs().max()) > 0
    skipped_all, stats = _delta(poisoned)
    assert stats["loss/skipped_steps"] == 1 and float(skipped_all.abs().max()) == 0.0
    assert stats["loss/tokens"] == 0 and clean.shape == delta.shape


def test_skip_settled_zeroes_questions_whose_programs_all_scored_alike():
    groups = [("f", 0)] * 3 + [("f", 1)] * 3 + [("f", 2)] * 2 + [("g", 0)] + [("f", 3)] * 2
    weights = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.5, 1.0, 0.3, 0.3]
    # question 0 all solved, question 1 none, question 2 mixed, ("g", 0) alone, question 3 alike but partial
    assert skip_settled(groups, weights) == [0.0] * 6 + [1.0, 0.5, 1.0, 0.0, 0.0]
    assert skip_settled([], []) == []
