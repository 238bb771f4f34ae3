"""metrics.jsonl and the W&B run (offline: no network here)."""

import json

import pytest

from train.config import TrackingConfig
from train.tracking import Tracker, wandb_mode


def test_auto_mode_is_offline_without_credentials(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert wandb_mode("auto") == "offline"
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert wandb_mode("auto") == "online"
    assert wandb_mode("disabled") == "disabled"
    with pytest.raises(ValueError, match="auto, online, offline or disabled"):
        wandb_mode("sometimes")


def test_tracker_writes_jsonl_and_a_real_offline_wandb_run(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    tracker = Tracker(TrackingConfig(), tmp_path, {"lr": 1e-4})
    tracker.log({"iteration": 0, "reward/mean": 0.5, "loss/mean": float("nan")},
                [{"question": "q?", "program": "def f(): pass", "reward": 1.0}])
    run_id = tracker.run_id
    tracker.finish()
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert lines == [{"iteration": 0, "reward/mean": 0.5, "loss/mean": None}]
    (run_dir,) = list((tmp_path / "wandb").glob(f"offline-run-*-{run_id}"))
    assert list(run_dir.glob("run-*.wandb"))


def test_non_main_process_writes_nothing(tmp_path):
    tracker = Tracker(TrackingConfig(), tmp_path, {}, enabled=False)
    tracker.log({"iteration": 0})
    assert not (tmp_path / "metrics.jsonl").exists() and tracker.run is None
