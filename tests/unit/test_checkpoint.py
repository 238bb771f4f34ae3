"""Checkpoint bookkeeping: only whole iterations count, metrics stay valid JSON."""

import json

from train import checkpoint as ckpt
from train.rollout import status_rates


def test_partial_and_unfinished_folders_are_not_iterations(tmp_path):
    root = tmp_path / ckpt.ITER_DIR
    (root / "iter_000").mkdir(parents=True)
    (root / "iter_000" / "state.json").write_text("{}")
    (root / "iter_001").mkdir()  # no state.json: killed mid-write
    (root / "iter_002.tmp").mkdir()  # killed between state.json and the rename
    (root / "iter_002.tmp" / "state.json").write_text("{}")
    (root / "initial").mkdir()
    assert ckpt.completed_iterations(tmp_path) == [0]
    ckpt.clean_partial(tmp_path)
    assert not (root / "iter_002.tmp").exists()


def test_rebuilt_metrics_are_valid_json_without_nan(tmp_path):
    d = ckpt.iteration_dir(tmp_path, 0)
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps(ckpt.metrics_json({"iteration": 0, "loss/mean": float("nan")})))
    ckpt.rebuild_metrics(tmp_path, [0])
    line = (tmp_path / "metrics.jsonl").read_text()
    assert "NaN" not in line and json.loads(line) == {"iteration": 0, "loss/mean": None}


def test_no_evaluation_reports_no_rate_instead_of_zero():
    rates = status_rates([], "eval")
    assert all(v != v for v in rates.values())  # NaN
    assert status_rates(["ok", "timeout"], "eval")["eval/error/timeout"] == 0.5
