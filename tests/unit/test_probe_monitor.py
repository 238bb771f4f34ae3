"""bench/probe_monitor.py's replay of early stopping over probe scores: it must publish and
stop exactly where the trainer's EarlyStopper would, given the same scores in the same order."""

import json

from bench.probe_monitor import held_out, replay
from train.curves import read_run


def test_the_best_adapter_is_published_and_a_tie_goes_to_the_later_one():
    assert replay({-1: 0.1, 0: 0.5, 1: 0.7, 2: 0.7, 3: 0.6}, patience=2, min_delta=0.0, enabled=True) == (2, None)


def test_two_declines_in_a_row_stop_the_run_after_the_second():
    scores = {-1: 0.1, 0: 0.8, 1: 0.7, 2: 0.75, 3: 0.9}  # 3 is never reached: the run stopped after 2
    assert replay(scores, patience=2, min_delta=0.0, enabled=True) == (0, 2)
    assert replay(scores, patience=2, min_delta=0.0, enabled=False) == (3, None)
    assert replay(scores, patience=3, min_delta=0.0, enabled=True) == (3, None)


def test_a_decline_within_min_delta_resets_the_count():
    scores = {-1: 0.1, 0: 0.8, 1: 0.79, 2: 0.7, 3: 0.7}
    assert replay(scores, patience=2, min_delta=0.05, enabled=True) == (0, 3)


def test_the_initial_adapter_can_be_published():
    assert replay({-1: 0.5, 0: 0.4, 1: 0.3}, patience=2, min_delta=0.0, enabled=True) == (-1, 1)


def test_held_out_accuracy_is_read_from_the_run_records_or_is_none(tmp_path):
    (tmp_path / "eval").mkdir()
    rows = [{"accuracy": 1.0}, {"accuracy": 0.0}, {"accuracy": 1.0}, {"accuracy": 1.0}]
    (tmp_path / "eval" / "iter_004.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "eval" / "base.jsonl").write_text(json.dumps({"accuracy": 0.0}) + "\n")
    points = read_run(tmp_path)["points"]
    assert held_out(points, 4) == 75.0 and held_out(points, -1) == 0.0
    assert held_out(points, 3) is None
