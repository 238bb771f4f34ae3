"""The policy update on LoRA: reward-weighted NLL of completion tokens (ViUniT Eq. 8), or a
policy-gradient surrogate with clipping and KL (train/objectives.py) on the same path.

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
from train.objectives import reduce_tokens, token_losses
from rewards.unit_tests.scoring import THETA, viunit_reward


class NonFiniteLoss(RuntimeError):
    """Too many optimizer steps were skipped for a non-finite loss."""


def reward_to_weight(reward: float | None, transform: str = "identity", threshold: float = THETA,
                     clip_negative: bool = True) -> float:
    """Map a scalar reward to a loss weight; `threshold` is ViUniT Eq. 10."""
    if reward is None or (isinstance(reward, float) and math.isnan(reward)):
        return 0.0
    if transform == "threshold":
        reward = viunit_reward(reward, threshold)
    elif transform != "identity":
        raise ValueError(f"unknown weighting.transform {transform!r}; use identity or threshold")
    return max(reward, 0.0) if clip_negative else reward


def skip_settled(groups: list, weights: list[float]) -> list[float]:
    """`weights` with 0 for every member of a group (one question's programs) whose weights
    are all equal; a group of one is never settled."""
    members: dict = {}
    for g, w in zip(groups, weights):
        members.setdefault(g, []).append(w)
    settled = {g for g, ws in members.items() if len(ws) > 1 and len(set(ws)) == 1}
    return [0.0 if g in settled else w for g, w in zip(groups, weights)]


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
    # Shared or not, every micro-batch then runs the same two forwards (prefix, rest): ranks
    # under ZeRO-3 must run forwards in step, filler batches included.
    p = shared_prefix_length([e.prompt_ids for e in examples]) if share_prefix else 0
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


def token_logprobs(model, batch: dict, prefix_model=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs of the completion tokens [b, c] (0 at padding) and their mask [b, c];
    prompt tokens carry nothing.

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
    return -token_nll, (labels != -100).to(token_nll.dtype)


def completion_nll(model, batch: dict, reduction: str = "mean", prefix_model=None) -> torch.Tensor:
    """Per-example NLL of the completion tokens only (summed, or averaged over its tokens)."""
    logp, mask = token_logprobs(model, batch, prefix_model)
    return reduce_tokens(-logp, mask, reduction)


def weighted_loss(nll: torch.Tensor, weights: torch.Tensor, normalizer: float) -> torch.Tensor:
    """This micro-batch's share of ViUniT Eq. 8: Σ_i w_i · NLL_i / N.

    Eq. 8 is J(w) = E_D[R · L_NLL], an expectation over the iteration's rollouts D, so
    N is a constant of the iteration (|D| over all ranks, or `optim.normalizer`), never
    a per-batch sum of weights: summing this over an iteration's micro-batches gives J
    exactly, a weight of 0.5 counts half as much as 1, and a zero-weight (filler) batch
    adds exactly nothing. `optim.token_reduction` picks L_NLL: `sum` is Eq. 8's literal
    sum over the program's tokens; `mean` divides each program's NLL by its own token
    count so long programs do not dominate (the default; a per-example constant).
    """
    return (weights.to(nll.dtype) * nll).sum() / normalizer


def lr_at(step: int, total: int, base_lr: float, warmup_ratio: float, schedule: str) -> float:
    warmup = math.ceil(total * warmup_ratio)
    if step < warmup:
        return base_lr * (step + 1) / warmup
    if schedule == "constant":
        return base_lr
    if schedule != "linear":
        raise ValueError(f"unknown optim.schedule {schedule!r}; use linear or constant")
    return base_lr * max(0.0, (total - step) / max(1, total - warmup))


def global_batch_size(cfg) -> int:
    """Examples per optimizer step over all ranks (`optim.batch_size`, else one micro-batch)."""
    return cfg.batch_size or cfg.micro_batch_size


def accumulation_steps(cfg, world: int) -> int:
    """Micro-batches each rank runs per optimizer step: a step's `optim.batch_size`
    examples are dealt to `world` ranks, which run them `optim.micro_batch_size` at a time."""
    return math.ceil(math.ceil(global_batch_size(cfg) / world) / cfg.micro_batch_size)


def configure_accelerator(accelerator, cfg, bf16: bool = False) -> None:
    """Set gradient accumulation, and DeepSpeed's "auto" values (micro-batch, accumulation,
    clipping, bf16: accelerate refuses `mixed_precision` beside a DeepSpeed JSON), from
    the config; call before `accelerator.prepare`, where DeepSpeed fixes them."""
    k = accumulation_steps(cfg, accelerator.num_processes)
    accelerator.gradient_accumulation_steps = k
    plugin = getattr(accelerator.state, "deepspeed_plugin", None)
    if plugin is not None:
        ds = plugin.deepspeed_config
        ds["train_micro_batch_size_per_gpu"] = cfg.micro_batch_size
        ds["gradient_accumulation_steps"] = k
        ds.pop("train_batch_size", None)
        ds["gradient_clipping"] = cfg.max_grad_norm or 0.0
        if ds.get("bf16", {}).get("enabled") == "auto":
            ds["bf16"]["enabled"] = bf16 or accelerator.mixed_precision == "bf16"


def _canonical(examples: list[Example]) -> list[Example]:
    """A world-size-independent order: the same rollouts sort the same way however
    they were sharded, so the seeded shuffle makes the same batches."""
    return sorted(examples, key=lambda e: (e.prompt_ids, e.completion_ids, e.weight))


def _padded(rows: list[torch.Tensor], c: int) -> torch.Tensor:
    """Per-example token values laid out like `collate`'s labels: completion first, then 0."""
    out = torch.zeros((len(rows), c), dtype=torch.float32)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


@torch.no_grad()
def _anchor_logprobs(accelerator, model, steps, rank, world, mb, k, filler, cfg, pad_id, old: bool, ref: bool):
    """Before the first optimizer step: the sampling policy's (old) and the reference's
    (adapter disabled) log-probs of every completion this rank will train on, keyed by
    `id(example)`. Every rank runs the same number of forwards as its update will (fillers
    included), as ZeRO-3 needs."""
    unwrapped = accelerator.unwrap_model(model)
    model.eval()  # the sampler ran without dropout
    anchors: dict = {}
    for step in steps:
        mine = step[rank::world]
        micro = [mine[i : i + mb] for i in range(0, len(mine), mb)]
        micro += [filler] * (k - len(micro))
        for part in micro:
            batch = {key: v.to(accelerator.device) for key, v in collate(part, pad_id, cfg.share_prefix).items()}
            got = {}
            if old:
                got["old"] = token_logprobs(model, batch, prefix_model=unwrapped)[0].cpu()
            if ref:
                with unwrapped.disable_adapter():  # the starting policy: base weights, no LoRA
                    got["ref"] = token_logprobs(model, batch, prefix_model=unwrapped)[0].cpu()
            for i, e in enumerate(part):
                n = len(e.completion_ids)
                anchors.setdefault(id(e), {k_: v[i, :n] for k_, v in got.items()})
    model.train()
    return anchors


def run_update(accelerator, model, optimizer, examples: list[Example], cfg, pad_id: int, seed: int,
               progress: bool = True, objective=None) -> dict:
    """One iteration's update over every rank's rollouts: Eq. 8's reward-weighted NLL, or
    a policy-gradient surrogate (`objective`: train.objectives, with PPO clipping against
    the sampling policy and a KL term to the starting policy) on the same path.

    The update is one global computation whatever the world size. All ranks see all
    rollouts (gathered, in a canonical order), shuffle them with `seed`, and cut them
    into optimizer steps of `optim.batch_size` examples. Each step's examples are dealt
    to the ranks, which run them in micro-batches with gradient accumulation; a rank
    with fewer than its share runs zero-weight filler micro-batches (the same shapes
    and forwards as real ones, as ZeRO-3 needs), which add exactly zero. A step in which
    any micro-batch's loss is not finite is skipped on every rank and counted (under
    DeepSpeed exactly so when a step is one micro-batch per rank: DeepSpeed keeps the
    gradients of earlier micro-batches of a step to itself). Each
    micro-batch's loss is its share of Σ_i ℓ_i / N with N fixed for the iteration
    (`weighted_loss`; ℓ_i = w_i·NLL_i under Eq. 8), scaled by the world size and
    accumulation steps that DDP / DeepSpeed / accelerate divide by, so the summed
    gradient is exactly ∇J: the same rollouts give the same adapter on 1 or W processes
    (tested with 1 and 2 CPU processes), and a rank holding only zero-weight rollouts
    changes nothing.
    """
    from accelerate.utils import gather_object

    clip_eps = float(getattr(objective, "clip_eps", 0.0) or 0.0)
    clip_high = float(getattr(objective, "clip_eps_high", 0.0) or 0.0) or clip_eps
    kl_coef = float(getattr(objective, "kl_coef", 0.0) or 0.0)
    world, rank = accelerator.num_processes, accelerator.process_index
    everything = gather_object(list(examples)) if world > 1 else list(examples)
    normalizer = float(cfg.normalizer or len(everything))
    # A KL term pulls every program toward the reference, a zero-advantage one too.
    live = _canonical([e for e in everything if e.weight != 0 or kl_coef > 0])
    rng = random.Random(seed)
    order = []
    for _ in range(cfg.epochs):
        epoch = live[:]
        rng.shuffle(epoch)
        order += epoch
    size, mb = global_batch_size(cfg), cfg.micro_batch_size
    steps = [order[i : i + size] for i in range(0, len(order), size)]
    k = accumulation_steps(cfg, world)
    if accelerator.gradient_accumulation_steps != k:
        if getattr(accelerator.state, "deepspeed_plugin", None) is not None:
            raise RuntimeError("call train.update.configure_accelerator(accelerator, cfg.optim) before "
                               "accelerator.prepare: DeepSpeed fixes gradient accumulation there")
        accelerator.gradient_accumulation_steps = k
    accelerator.step = 0  # accumulate() counts micro-batches: start each update on a boundary
    scale = world * k  # undo DDP's mean over ranks and accelerate's 1/k
    filler = [Example(live[0].prompt_ids, live[0].completion_ids, 0.0)] if live else []
    anchors = (_anchor_logprobs(accelerator, model, steps, rank, world, mb, k, filler, cfg, pad_id,
                                old=clip_eps > 0, ref=kl_coef > 0) if clip_eps > 0 or kl_coef > 0 else {})

    # Σ w·NLL, Σ |w|, completion tokens, real micro-batches, Σ KL (per-row mean), clipped tokens
    sums = torch.zeros(6, dtype=torch.float64)
    grad_norms, skipped = [], 0
    model.train()
    bar = tqdm(range(len(steps)), desc="update", unit="step", disable=not progress, leave=False)
    for step in bar:
        lr = lr_at(step, len(steps), cfg.lr, cfg.warmup_ratio, cfg.schedule)
        for group in optimizer.param_groups:
            group["lr"] = lr
        mine = steps[step][rank::world]
        micro = [mine[i : i + mb] for i in range(0, len(mine), mb)]
        micro += [filler] * (k - len(micro))
        broken = False  # a non-finite loss in this step: the whole step is skipped on every rank
        for part in micro:
            batch = {key: v.to(accelerator.device) for key, v in collate(part, pad_id, cfg.share_prefix).items()}
            with accelerator.accumulate(model):
                logp, mask = token_logprobs(model, batch, prefix_model=accelerator.unwrap_model(model))
                nll = reduce_tokens(-logp, mask, cfg.token_reduction)
                kl = clipped = torch.zeros((), dtype=torch.float64)
                if anchors:
                    c = mask.shape[1]
                    old = _padded([anchors[id(e)]["old"] for e in part], c).to(logp.device) if clip_eps else None
                    ref = _padded([anchors[id(e)]["ref"] for e in part], c).to(logp.device) if kl_coef else None
                    per_token, kl_tokens = token_losses(logp, batch["weights"], old, clip_eps, ref, kl_coef, clip_high)
                    share = reduce_tokens(per_token, mask, cfg.token_reduction).sum() / normalizer
                    if part is filler:  # its zero weight does not silence the KL term: it must add nothing
                        share = share * 0.0
                    kl = reduce_tokens(kl_tokens.detach(), mask, "mean").double().sum().cpu()
                    if old is not None:
                        ratio = torch.exp(logp.detach() - old)
                        outside = (ratio < 1 - clip_eps) | (ratio > 1 + clip_high)
                        clipped = (outside * mask).double().sum().cpu()
                else:  # Eq. 8 (and rloo/grpo without ratio or KL): Σ w·NLL / N
                    share = weighted_loss(nll, batch["weights"], normalizer)
                if _finite_everywhere(accelerator, share):
                    accelerator.backward(share * scale)
                else:  # no backward: NaN/inf would reach every rank's gradients through the all-reduce
                    broken = True
                if accelerator.sync_gradients:
                    if broken:
                        skipped += 1
                    else:
                        if cfg.max_grad_norm:
                            norm = accelerator.clip_grad_norm_([p for p in model.parameters() if p.requires_grad],
                                                               cfg.max_grad_norm)
                            if norm is not None:
                                grad_norms.append(float(norm))
                        optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
            if part is not filler and not broken:
                w = batch["weights"].double().cpu()
                sums += torch.tensor([float((w * nll.detach().double().cpu()).sum()), float(w.abs().sum()),
                                      float(mask.sum()), 1.0, float(kl), float(clipped)], dtype=torch.float64)
        bar.set_postfix(lr=f"{lr:.2e}")
    bar.close()
    if world > 1:
        sums = accelerator.reduce(sums.to(accelerator.device), reduction="sum").cpu()
    weighted_nll, weight_sum, tokens, _, kl_sum, clipped_sum = sums.tolist()
    trained = len(live) * cfg.epochs
    return {
        # Eq. 8's J = Σ w·NLL / N over the iteration (each example's NLL when it was trained), per epoch.
        "loss/mean": weighted_nll / normalizer / cfg.epochs if live else float("nan"),
        "loss/nll": weighted_nll / weight_sum if weight_sum else float("nan"),  # Σ w·NLL / Σ |w|
        "loss/normalizer": normalizer,
        "loss/steps": len(steps),
        "loss/examples": len(live),
        "loss/grad_norm": sum(grad_norms) / len(grad_norms) if grad_norms else float("nan"),
        "loss/tokens": int(tokens),  # completion tokens that carried loss, all ranks and epochs
        "loss/skipped_steps": skipped,  # steps dropped for a non-finite loss (the same on every rank)
        # KL(π‖π_start) per token (k3), averaged over trained programs; NaN without kl_coef
        "loss/kl": kl_sum / trained if kl_coef > 0 and trained else float("nan"),
        # share of tokens whose ratio to the sampling policy left [1-ε, 1+ε]; NaN without clipping
        "loss/clip_fraction": clipped_sum / tokens if clip_eps > 0 and tokens else float("nan"),
    }


def _finite_everywhere(accelerator, loss: torch.Tensor) -> bool:
    """Whether the loss is finite on every rank (one tiny all-reduce when distributed)."""
    bad = torch.tensor([0.0 if bool(torch.isfinite(loss.detach())) else 1.0], device=accelerator.device)
    if accelerator.num_processes > 1:
        bad = accelerator.reduce(bad, reduction="sum")
    return float(bad) == 0.0
