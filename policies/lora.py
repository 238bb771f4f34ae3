"""LoRA through peft, with ViUniT Table 9's defaults."""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch


def attach_lora(model, cfg):
    """Wrap `model` with a fresh LoRA adapter described by a LoraConfig."""
    from peft import LoraConfig, get_peft_model

    peft_cfg = LoraConfig(
        r=cfg.r, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout, bias=cfg.bias,
        target_modules=list(cfg.target_modules), task_type="CAUSAL_LM",
    )
    # peft keeps adapter weights in float32 even over a bf16 base (autocast_adapter_dtype),
    # so the small trainable part stays precise while the frozen base runs in bf16.
    return get_peft_model(model, peft_cfg)


def adapter_weights(model) -> dict[str, torch.Tensor]:
    """The adapter's trainable tensors, whole and on the CPU, under their module names.

    Under ZeRO-3 each rank holds a slice of every parameter (shape (0,) on the others),
    so the weights are gathered first: every rank must call this, and every rank gets
    the full tensors. `model.save_pretrained(dir, state_dict=...)` then writes them.
    """
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    with _gathered([p for _, p in named]):
        return {n: p.detach().to("cpu", copy=True) for n, p in named}


def _gathered(params):
    if any(hasattr(p, "ds_id") for p in params):  # DeepSpeed ZeRO-3 partitioned parameters
        import deepspeed

        return deepspeed.zero.GatheredParameters(params, modifier_rank=None)
    return contextlib.nullcontext()


def load_lora_weights(model, adapter_dir: str | Path) -> None:
    """Load a saved adapter's weights into the already-attached adapter."""
    from peft import set_peft_model_state_dict
    from peft.utils import load_peft_weights

    weights = load_peft_weights(str(adapter_dir), device="cpu")
    result = set_peft_model_state_dict(model, weights)
    missing = [k for k in getattr(result, "unexpected_keys", []) if "lora" in k]
    if missing:
        raise ValueError(f"adapter at {adapter_dir} does not match the model: {missing[:3]}")


def reset_lora(model) -> None:
    """Re-initialise the adapter (config `lora.init: base`): B = 0 makes it the identity."""
    for module in model.modules():
        if hasattr(module, "reset_lora_parameters") and hasattr(module, "active_adapter"):
            for name in module.active_adapters:
                module.reset_lora_parameters(name, True)
