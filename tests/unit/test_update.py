"""The reward-weighted NLL update (ViUniT Eq. 8) on a tiny Llama with LoRA."""

import math
import random

import pytest
import torch

from tests.helpers.tiny import tiny_lora_model
from train.update import Example, collate, completion_nll, lr_at, reward_to_weight, weighted_loss


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


def test_weighted_loss_is_weighted_mean_of_per_example_completion_nll():
    model = tiny_lora_model()
    examples = _examples(weights=[1.0, 0.5, 2.0, 0.0, 0.25])
    batch = collate(examples, pad_id=0)
    loss = weighted_loss(completion_nll(model, batch), batch["weights"])
    reference = [float(_manual_nll(model, e)) for e in examples]
    w = [e.weight for e in examples]
    expected = sum(wi * r for wi, r in zip(w, reference)) / sum(w)
    assert float(loss) == pytest.approx(expected, rel=1e-5)


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
        weighted_loss(completion_nll(model, batch), batch["weights"]).backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}

    alone, with_zero = grads([a]), grads([a, b])
    for name in alone:
        assert torch.allclose(alone[name], with_zero[name], atol=1e-6), name
    model.zero_grad()
    batch = collate([b], 0)
    weighted_loss(completion_nll(model, batch), batch["weights"]).backward()
    assert all(float(p.grad.abs().max()) == 0.0 for p in model.parameters() if p.requires_grad)


def test_shared_prefix_pass_equals_full_pass_in_loss_and_gradient():
    model = tiny_lora_model()
    examples = _examples(5)

    def run(share):
        model.zero_grad()
        batch = collate(examples, 0, share_prefix=share)
        loss = weighted_loss(completion_nll(model, batch), batch["weights"])
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
        losses[dtype] = float(weighted_loss(completion_nll(model, batch), batch["weights"]))
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


def test_negative_weights_push_down_with_a_bounded_normaliser():
    model = tiny_lora_model()
    examples = _examples(2, weights=[1.0, -1.0])
    batch = collate(examples, 0)
    nll = completion_nll(model, batch)
    loss = weighted_loss(nll, batch["weights"])
    assert float(loss) == pytest.approx(float((nll[0] - nll[1]) / 2), rel=1e-5)
