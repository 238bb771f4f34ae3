"""Policy-gradient objectives beside ViUniT's Eq. 8, on the one update path.

Every objective is a per-token surrogate whose gradient, at the sampling policy, is
`-A · ∇log π(token)`. With A a program's Eq. 8 weight and no ratio or KL this is Eq. 8's
`w · ∇NLL` exactly, so Eq. 8, RLOO and GRPO differ only in how rewards become A:

- `eq8`  (ViUniT §3.4): A = the reward (clipped at 0 unless `weighting.clip_negative` is off);
- `rloo` (Ahmadian et al. 2024, "Back to Basics"): A = r − mean of the *other* programs'
  rewards for the same question: unbiased, and wrong programs get pushed down;
- `grpo` (Shao et al. 2024, DeepSeekMath): A = (r − mean) / (std + ε) over the question's
  programs.

`clip_eps > 0` adds PPO's clipped importance ratio (Schulman et al. 2017) against the
policy that sampled the programs, so several optimizer steps per batch (epochs > 1,
small batches) stay near it; `clip_eps_high` widens its upper bound alone (DAPO, Yu et
al. 2025), so a wrong program's push-down is bounded while a right one's rise is not.
`kl_coef > 0` adds β·KL to the starting policy (the model with its LoRA adapter disabled), with the k3 estimator GRPO uses. A group whose rewards
are all equal teaches nothing under rloo/grpo: every A is exactly 0. A program search
found (`searched`) is not the policy's sample: it weighs its reward, as under Eq. 8, and
stays out of its question's baseline (train/sampling.py).
"""

from __future__ import annotations

import math

import torch

OBJECTIVES = ("eq8", "rloo", "grpo")
GRPO_EPS = 1e-4  # keeps A finite for a group of near-equal rewards


def group_advantages(groups: list, rewards: list[float | None], objective: str,
                     baseline_only: list[bool] | None = None) -> list[float]:
    """One advantage per program from its question's group (`groups[i]` is program i's
    question key). A program without a reward (None/NaN) gets 0 and leaves its group's
    baseline alone; a group with one rewarded program has no baseline and gets 0. A program
    marked in `baseline_only` counts in its group's baseline and gets 0 itself."""
    if objective not in ("rloo", "grpo"):
        raise ValueError(f"unknown group objective {objective!r}; use rloo or grpo")
    members: dict = {}
    for i, (g, r) in enumerate(zip(groups, rewards)):
        if r is not None and not (isinstance(r, float) and math.isnan(r)):
            members.setdefault(g, []).append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        n = len(idx)
        if n < 2:
            continue
        values = [float(rewards[i]) for i in idx]
        mean = sum(values) / n
        std = math.sqrt(sum((r - mean) ** 2 for r in values) / (n - 1))
        for i, r in zip(idx, values):
            if baseline_only and baseline_only[i]:
                continue
            if objective == "rloo":  # r_i − (Σ_j≠i r_j)/(n−1) = n/(n−1) · (r_i − mean)
                out[i] = (r - mean) * n / (n - 1)
            else:
                out[i] = 0.0 if r == mean else (r - mean) / (std + GRPO_EPS)
    return out


def token_losses(logp: torch.Tensor, advantages: torch.Tensor, old_logp: torch.Tensor | None = None,
                 clip_eps: float = 0.0, ref_logp: torch.Tensor | None = None,
                 kl_coef: float = 0.0, clip_eps_high: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token surrogate loss [b, c] and per-token KL [b, c] (zeros without a reference).

    `logp` are the current log-probs of the completion tokens; `advantages` one per row.
    Without a ratio the loss is −A·logp (Eq. 8's w·NLL for A = w). With `clip_eps` it is
    PPO's −min(ρA, clip(ρ, 1−ε, 1+ε_high)A), ρ = exp(logp − old_logp), with ε_high =
    `clip_eps_high` or, when that is 0, ε (DAPO's decoupled clip): where the clip binds, the
    token's gradient is exactly 0.
    """
    a = advantages.to(logp.dtype)[:, None]
    if clip_eps > 0:
        if old_logp is None:
            raise ValueError("clip_eps > 0 needs the sampling policy's log-probs (old_logp)")
        ratio = torch.exp(logp - old_logp.detach())
        loss = -torch.minimum(ratio * a, ratio.clamp(1 - clip_eps, 1 + (clip_eps_high or clip_eps)) * a)
    else:
        loss = -a * logp
    kl = torch.zeros_like(logp)
    if kl_coef > 0:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs the reference policy's log-probs (ref_logp)")
        d = ref_logp.detach() - logp  # k3: e^d − d − 1 ≥ 0, unbiased for KL(π‖π_ref) under π's samples
        kl = torch.exp(d) - d - 1
        loss = loss + kl_coef * kl
    return loss, kl


def reduce_tokens(values: torch.Tensor, mask: torch.Tensor, reduction: str) -> torch.Tensor:
    """Per-row sum (Eq. 8 literally) or mean over the row's own completion tokens."""
    total = (values * mask).sum(-1)
    if reduction == "sum":
        return total
    if reduction != "mean":
        raise ValueError(f"unknown optim.token_reduction {reduction!r}; use mean or sum")
    return total / mask.sum(-1).clamp(min=1)
