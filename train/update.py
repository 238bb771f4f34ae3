"""The policy update: reward-weighted NLL of completion tokens (ViUniT Eq. 8) on LoRA.

A plain accelerate loop rather than a TRL trainer: the loss needs one weight per
example, the batches come from this iteration's rollouts (not a fixed dataset), and
the same loop must run unchanged under DDP and DeepSpeed through `accelerate launch`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from policies.kv import cache_of, forward, shared_prefix_length


def reward_to_weight(reward: float | None, transform: str = "identity", threshold: float = 0.8,
                     clip_negative: bool = True) -> float:
    """Map a scalar reward to a loss weight; `threshold` is ViUniT Eq. 10."""
    if reward is None or (isinstance(reward, float) and math.isnan(reward)):
        return 0.0
    if transform == "threshold":
        reward = 1.0 if reward >= threshold else reward
    elif transform != "identity":
        raise ValueError(f"unknown weighting.transform {transform!r}; use identity or threshold")
    return max(reward, 0.0) if clip_negative else reward


@dataclass
class Example:
    prompt_ids: list[int]
    completion_ids: list[int]  # ends with EOS when the program ended on its own
    weight: float


def collate(examples: list[Example], pad_id: int, share_prefix: bool = True) -> dict[str, torch.Tensor]:
    """Lay a batch out as [shared prompt prefix | left-padded prompt rest | completion | pad].

    The prompt prefix common to the batch (API text and in-context examples, ~400 of
    ~420 prompt tokens) is run once and its KV copied to every row, as in generation.
    Every completion starts at the same column, so the LM head runs only on the
    completion block (`logits_to_keep`).
    """
    b = len(examples)
    p = shared_prefix_length([e.prompt_ids for e in examples]) if share_prefix and b > 1 else 0
    s = max(len(e.prompt_ids) - p for e in examples)
    c = max(len(e.completion_ids) for e in examples)
    rest = torch.full((b, s + c), pad_id, dtype=torch.long)
    mask = torch.zeros((b, p + s + c), dtype=torch.long)
    mask[:, :p] = 1
    labels = torch.full((b, c), -100, dtype=torch.long)
    for i, e in enumerate(examples):
        own = e.prompt_ids[p:]
        rest[i, s - len(own) : s] = torch.tensor(own, dtype=torch.long)
        rest[i, s : s + len(e.completion_ids)] = torch.tensor(e.completion_ids, dtype=torch.long)
        mask[i, p + s - len(own) : p + s + len(e.completion_ids)] = 1
        labels[i, : len(e.completion_ids)] = torch.tensor(e.completion_ids, dtype=torch.long)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, p:]
    return {
        "prefix_ids": torch.tensor([examples[0].prompt_ids[:p]], dtype=torch.long),
        "input_ids": rest, "attention_mask": mask, "position_ids": positions, "labels": labels,
        "weights": torch.tensor([e.weight for e in examples], dtype=torch.float32),
    }


def completion_nll(model, batch: dict, reduction: str = "mean", prefix_model=None) -> torch.Tensor:
    """Per-example NLL of the completion tokens only; prompt tokens carry no loss.

    `prefix_model` is the unwrapped module for the shared-prefix pass: DDP and DeepSpeed
    expect one forward through their wrapper per backward, and gradients from the
    prefix reach the same parameters either way.
    """
    c = batch["labels"].shape[1]
    b = batch["input_ids"].shape[0]
    cache = None
    if batch["prefix_ids"].shape[1]:
        prefix_out = forward(prefix_model or model, input_ids=batch["prefix_ids"], use_cache=True, logits_to_keep=1)
        cache = cache_of(prefix_out)
        cache.batch_repeat_interleave(b)
    out = forward(
        model, cache, input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"], logits_to_keep=c + 1, use_cache=cache is not None,
    )
    # Position t predicts token t+1: the last prompt position predicts the first completion token.
    logits = out.logits[:, :-1].float()
    labels = batch["labels"]
    token_nll = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100, reduction="none"
    ).view(labels.shape)
    total = token_nll.sum(-1)
    if reduction == "sum":
        return total
    if reduction != "mean":
        raise ValueError(f"unknown optim.token_reduction {reduction!r}; use mean or sum")
    return total / (labels != -100).sum(-1).clamp(min=1)


def weighted_loss(nll: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Σ w·NLL / Σ|w|; a batch whose weights are all 0 gives a zero loss that still backprops.

    |w| in the denominator keeps negative weights (`clip_negative: false`) an unlikelihood
    push of bounded size rather than flipping or blowing up the normaliser.
    """
    weights = weights.to(nll.dtype)
    return (weights * nll).sum() / weights.abs().sum().clamp(min=1e-8)


def lr_at(step: int, total: int, base_lr: float, warmup_ratio: float, schedule: str) -> float:
    warmup = math.ceil(total * warmup_ratio)
    if step < warmup:
        return base_lr * (step + 1) / warmup
    if schedule == "constant":
        return base_lr
    if schedule != "linear":
        raise ValueError(f"unknown optim.schedule {schedule!r}; use linear or constant")
    return base_lr * max(0.0, (total - step) / max(1, total - warmup))


def run_update(accelerator, model, optimizer, examples: list[Example], cfg, pad_id: int, seed: int,
               progress: bool = True) -> dict:
    """One iteration's fine-tuning pass(es) over the weighted examples of this rank.

    Ranks may hold different numbers of non-zero-weight examples; each takes the same
    number of optimizer steps (the maximum over ranks), padding with zero-weight
    batches, so DDP/DeepSpeed collectives stay in lock-step.
    """
    live = [e for e in examples if e.weight != 0]
    rng = random.Random(seed)
    mb = cfg.micro_batch_size
    batches = []
    for _ in range(cfg.epochs):
        order = live[:]
        rng.shuffle(order)
        batches += [order[i : i + mb] for i in range(0, len(order), mb)]
    steps = len(batches)
    if accelerator.num_processes > 1:
        steps = int(accelerator.gather(torch.tensor([steps], device=accelerator.device)).max())
    # Zero-weight batch for ranks that run out (or never had rollouts): keeps collectives in step.
    filler = [Example(examples[0].prompt_ids, examples[0].completion_ids, 0.0)] if examples else \
        [Example([pad_id, pad_id], [pad_id], 0.0)]
    losses, grad_norms, tokens = [], [], 0
    model.train()
    bar = tqdm(range(steps), desc="update", unit="step", disable=not progress, leave=False)
    for step in bar:
        batch_examples = batches[step] if step < len(batches) else filler
        batch = {k: v.to(accelerator.device) for k, v in collate(batch_examples, pad_id, cfg.share_prefix).items()}
        lr = lr_at(step, steps, cfg.lr, cfg.warmup_ratio, cfg.schedule)
        for group in optimizer.param_groups:
            group["lr"] = lr
        nll = completion_nll(model, batch, cfg.token_reduction, prefix_model=accelerator.unwrap_model(model))
        loss = weighted_loss(nll, batch["weights"])
        accelerator.backward(loss)
        if accelerator.sync_gradients and cfg.max_grad_norm:
            norm = accelerator.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], cfg.max_grad_norm)
            if norm is not None:
                grad_norms.append(float(norm))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step < len(batches):
            losses.append(float(loss.detach()))
            tokens += int(batch["attention_mask"].sum())
        bar.set_postfix(loss=f"{losses[-1]:.3f}" if losses else "-")
    bar.close()
    return {
        "loss/mean": sum(losses) / len(losses) if losses else float("nan"),
        "loss/steps": steps,
        "loss/examples": len(live),
        "loss/grad_norm": sum(grad_norms) / len(grad_norms) if grad_norms else float("nan"),
        "loss/tokens": tokens,
    }
