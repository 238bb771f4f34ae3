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


# ---------------------------------------------------------------- W&B failing never stops a run (issue 17 item 7)

def test_wandb_that_cannot_start_is_a_warning_and_metrics_still_reach_the_file(monkeypatch, tmp_path, capsys):
    """mode=online with no login: the real wandb.init raises; the run goes on without W&B."""
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    tracker = Tracker(TrackingConfig(mode="online"), tmp_path, {})
    assert tracker.run is None
    tracker.log({"iteration": 0, "reward/mean": 0.25})
    tracker.summary({"best": 0})
    tracker.finish()
    assert "warning: W&B could not start" in capsys.readouterr().err
    assert [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [
        {"iteration": 0, "reward/mean": 0.25}]


def test_wandb_service_that_dies_mid_run_is_a_warning(monkeypatch, tmp_path, capsys):
    """The W&B service process is really killed; the next log raises inside W&B."""
    import psutil

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_SERVICE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    tracker = Tracker(TrackingConfig(), tmp_path, {})
    tracker.log({"iteration": 0, "reward/mean": 0.5})
    service = [p for p in psutil.Process().children(recursive=True) if p.name().startswith("wandb-core")]
    assert service, "no W&B service process to kill"
    for p in service:
        p.kill()
        p.wait(10)
    tracker.log({"iteration": 1, "reward/mean": 0.75}, [{"question": "q", "reward": 1.0}])
    tracker.log({"iteration": 2, "reward/mean": 1.0})
    tracker.finish()
    err = capsys.readouterr().err
    assert err.count("warning: W&B stopped working") == 1, err
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in lines] == [0, 1, 2]
    assert (tmp_path / "tables" / "iter_001" / "rollout" / "completions.jsonl").exists()


def test_wandb_keeps_the_console(monkeypatch, tmp_path):
    """Console capture is on: what the run printed is in the W&B run's output.log."""
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    tracker = Tracker(TrackingConfig(), tmp_path, {})
    print("iteration 1: reward 0.123 (console line)", flush=True)
    tracker.log({"iteration": 0})
    run_id = tracker.run_id
    tracker.finish()
    (run_dir,) = list((tmp_path / "wandb").glob(f"offline-run-*-{run_id}"))
    assert "reward 0.123 (console line)" in (run_dir / "files" / "output.log").read_text()


def test_tables_are_written_without_wandb_with_images_stored_once(tmp_path):
    from PIL import Image

    from train.tracking import write_tables

    image = Image.new("RGB", (8, 8), "red")
    rows = [{"question": "q?", "image": image, "error": "Error: boom", "reward": float("nan")},
            {"question": "q?", "image": image, "error": None, "reward": 1.0}]
    write_tables(tmp_path, 3, {"rollout/completions": rows})
    lines = [json.loads(x) for x in (tmp_path / "tables/iter_003/rollout/completions.jsonl").read_text().splitlines()]
    assert lines[0]["error"] == "Error: boom" and lines[0]["reward"] is None
    assert lines[0]["image"] == lines[1]["image"] and lines[0]["image"]["image"].startswith("media/")
    assert Image.open(tmp_path / "tables" / lines[0]["image"]["image"]).size == (8, 8)
    assert len(list((tmp_path / "tables/media").iterdir())) == 1
