"""LoRA adapters that travel: the base model they record, and loading them against it.

peft records the folder the base model was loaded from, which for the embedded model is
a hashed path in this machine's private cache.  ``make_portable`` rewrites it as a name
any machine resolves (``embedded:smollm2-135m-instruct``, a Hub id, or the absolute path
of a model folder), so ``PeftModel.from_pretrained(base, ADAPTER)`` works elsewhere and
``vprl eval --adapter`` / ``vprl export`` know which base to load.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from policies.model import ModelError, hub_id, portable_name, same_model

CONFIG = "adapter_config.json"


class AdapterError(ValueError):
    """An adapter that cannot be used as asked; the message is one line naming the fix."""


def _config(adapter_dir: str | Path) -> dict:
    path = Path(adapter_dir) / CONFIG
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        raise AdapterError(f"{adapter_dir} is not a LoRA adapter folder (no readable {CONFIG}); "
                           "try runs/NAME/best/adapter") from None


def make_portable(adapter_dir: str | Path) -> str:
    """Record the base model of a freshly saved adapter by a name other machines resolve,
    in adapter_config.json and in the model card peft wrote; returns that name. A folder
    that is not a peft save (no adapter_config.json) is left as it is."""
    adapter_dir = Path(adapter_dir)
    if not (adapter_dir / CONFIG).exists():
        return ""
    data = _config(adapter_dir)
    base = portable_name(data.get("base_model_name_or_path") or "")
    data["base_model_name_or_path"] = base or None
    tmp = adapter_dir / (CONFIG + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(adapter_dir / CONFIG)
    card = adapter_dir / "README.md"
    if base and card.exists():  # the card's metadata names a Hub model, never a local path
        text = card.read_text()
        new = re.sub(r"(?m)^base_model: .*$", f"base_model: {hub_id(base) or base}", text, count=1)
        if new != text:
            card.write_text(new)
    return base


def recorded_base(adapter_dir: str | Path) -> str | None:
    """The base model an adapter was trained on: what its adapter_config.json records,
    else the ``model`` of the run's config.yaml (runs/NAME/best/adapter -> runs/NAME)."""
    base = _config(adapter_dir).get("base_model_name_or_path")
    if base:
        return portable_name(base)
    import yaml

    for parent in list(Path(adapter_dir).resolve().parents)[:3]:
        config = parent / "config.yaml"
        if config.is_file():
            model = (yaml.safe_load(config.read_text()) or {}).get("model")
            if model:
                return str(model)
    return None


def base_for(adapter_dir: str | Path, model: str | None, flag: str = "--model") -> str:
    """The base model to load under ``adapter_dir``: the one it records; a different one
    given explicitly (``flag``) is refused in one line rather than failing on tensor shapes."""
    base = recorded_base(adapter_dir)
    if model is None:
        if base is None:
            raise AdapterError(f"the adapter at {adapter_dir} does not record its base model and has "
                               f"no run config.yaml above it; pass {flag} NAME")
        return base
    if base is not None and not same_model(model, base):
        raise AdapterError(f"{flag} {model!r} is not the base model the adapter at {adapter_dir} was "
                           f"trained on ({base!r}); drop {flag} or pass {flag} {base}")
    return model


def attach(model, adapter_dir: str | Path):
    """``PeftModel.from_pretrained(model, adapter_dir)``, with a LoRA made for another base
    (tensors of other shapes) reported in one line instead of a size-mismatch traceback."""
    from peft import PeftModel

    try:
        return PeftModel.from_pretrained(model, str(adapter_dir))
    except RuntimeError as err:
        if "size mismatch" not in str(err):
            raise
        raise AdapterError(f"the adapter at {adapter_dir} does not fit this model: its tensors have "
                           "other shapes, so it was trained on another base model; load the base it "
                           f"records ({recorded_base(adapter_dir) or 'unknown'})") from None


__all__ = ["AdapterError", "ModelError", "attach", "base_for", "make_portable", "recorded_base"]
