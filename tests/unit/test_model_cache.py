"""The embedded model's de-quantised cache: resolution, errors, concurrent writers."""

import os
from pathlib import Path

import pytest

from policies import model as pm


def test_unknown_names_and_bad_paths_say_how_to_fix(tmp_path):
    with pytest.raises(pm.ModelError, match="known: embedded:smollm2-135m-instruct"):
        pm.resolve("embedded:gpt-9")
    with pytest.raises(pm.ModelError, match="no config.json"):
        pm.resolve(str(tmp_path))


def test_a_finished_cache_is_reused_without_loading(tmp_path, monkeypatch):
    monkeypatch.setenv("VPRL_CACHE", str(tmp_path))
    gguf = pm._gguf_location("embedded:smollm2-135m-instruct")
    # Fake a finished cache entry: resolve must return it without touching transformers.
    stat = gguf.stat()
    import hashlib

    key = hashlib.sha1(f"{gguf.name}:{stat.st_size}:{int(stat.st_mtime)}".encode()).hexdigest()[:12]
    target = Path(tmp_path) / "models" / f"smollm2-135m-instruct-{key}"
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"")
    monkeypatch.setattr("transformers.AutoModelForCausalLM.from_pretrained",
                        lambda *a, **k: pytest.fail("the cache should have been used"))
    assert pm.resolve("embedded:smollm2-135m-instruct") == target


def test_losing_the_rename_race_keeps_the_winners_copy(tmp_path, monkeypatch):
    """Two ranks de-quantising at once: the second rename fails on a full folder.
    (Runs the real de-quantisation of the shipped GGUF, about 20 s.)"""
    monkeypatch.setenv("VPRL_CACHE", str(tmp_path))
    real_replace = os.replace

    def racing_replace(src, dst):
        Path(dst).mkdir(parents=True, exist_ok=True)
        (Path(dst) / "model.safetensors").write_bytes(b"winner")
        return real_replace(src, dst)  # fails: dst is a non-empty directory

    monkeypatch.setattr(pm.os, "replace", racing_replace)
    target = pm.resolve("embedded:smollm2-135m-instruct")
    assert (target / "model.safetensors").read_bytes() == b"winner"
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".tmp-")]
