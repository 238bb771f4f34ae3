"""ViUniT end to end on the embedded default: training with the `viunit` reward through
`accelerate launch`, then `vprl eval` on the trained adapter, and `vprl unit-tests` with
the real embedded LLM writing the tests."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tests.helpers.runs import ROOT, run_env


@pytest.mark.slow
def test_train_with_viunit_then_eval_the_adapter(run_iterate, tmp_path):
    # The eval monitor keeps this run short (no final scoring pass, whose suites best.json
    # counts: tests/integration/test_proptest.py), so the last metrics line counts them all.
    proc = run_iterate("run_name=vu", "iterations=1", "early_stopping.monitor=eval/accuracy",
                       config="configs/shapes_viunit_oracle_cpu.yaml",
                       launcher=("--config_file", "configs/accelerate/cpu.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "vu"
    m = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert math.isfinite(m["rewards/viunit/mean"]) and -0.1 <= m["rewards/viunit/mean"] <= 1.0
    assert m["rewards/viunit/suites_built"] >= 1
    assert 0.0 <= m["rollout/accuracy"] <= 1.0  # label accuracy is logged even though the reward never sees labels
    suites = list((run_dir / "unit_tests").glob("*/tests.jsonl"))
    assert len(suites) == m["rewards/viunit/suites_built"]
    tests = [json.loads(x) for x in suites[0].read_text().splitlines()[1:]]
    assert tests and all((suites[0].parent / t["image"]).exists() for t in tests)
    # The suite table went to W&B with its images.
    offline = next((run_dir / "wandb").glob("offline-run-*"))
    assert list(offline.glob("files/media/images/rewards/viunit/*.png"))

    data = tmp_path / "shapes"
    subprocess.run([sys.executable, "-m", "train.cli", "data", "shapes", "--out", str(data), "--train", "0",
                    "--val", "3", "--test", "0", "--no-progress"], cwd=ROOT, env=run_env(), check=True)
    out = tmp_path / "eval.json"
    proc = subprocess.run([sys.executable, "-m", "train.cli", "eval", "--data", str(data), "--strategy", "refusal",
                           "--programs", "2", "--unit-tests", "3", "--test-source", "scene", "--max-new-tokens", "40",
                           "--adapter", str(run_dir / "best" / "adapter"), "--out", str(out)],
                          cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    for key in ("accuracy", "error_rate", "refusal_rate", "logical_accuracy", "right_for_wrong_reasons",
                "mean_unit_test_score"):
        assert key in result, key
    assert result["questions"] == 3 and result["unit_tests"] == 3
    detail = json.loads(out.read_text())["choices"]
    assert len(detail) == 3 and all(c["refused"] == (c["score"] < 0.8) for c in detail)
    # each question's own scores, which paired comparisons (bench/transfer.py) need
    assert sum(c["accuracy"] for c in detail) / 3 == pytest.approx(result["accuracy"])
    assert all(c["id"] and c["family"] for c in detail)
    logical = [c["logical_accuracy"] for c in detail if c["logical_accuracy"] is not None]
    assert logical and sum(logical) / len(logical) == pytest.approx(result["logical_accuracy"])


@pytest.mark.slow
def test_unit_tests_with_the_embedded_llm(tmp_path):
    out = tmp_path / "suite"
    proc = subprocess.run([sys.executable, "-m", "train.cli", "unit-tests", "--question", "Is there a red circle?",
                           "--k", "3", "--candidates", "10", "--no-layout-llm", "--out", str(out)],
                          cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=600)
    # The 135M model's captions rarely fit the shapes vocabulary; with the layout LLM off
    # an unparsable caption is dropped, so the suite may be short -- but it is well formed.
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert "candidates" in proc.stderr
    lines = (out / "tests.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    assert head["question"] == "Is there a red circle?" and head["stats"]["candidates"] >= 1
    assert len(lines) - 1 == head["stats"]["candidates"] - head["stats"]["dropped"] or len(lines) - 1 == 3


@pytest.mark.slow
def test_eval_reprompting_strategies_with_the_embedded_policy(tmp_path):
    """reprompt and error_reprompt sample corrections from the real policy."""
    data = tmp_path / "shapes"
    subprocess.run([sys.executable, "-m", "train.cli", "data", "shapes", "--out", str(data), "--train", "0",
                    "--val", "2", "--test", "0", "--no-progress"], cwd=ROOT, env=run_env(), check=True)
    for strategy in ("reprompt", "error_reprompt"):
        out = tmp_path / f"{strategy}.json"
        proc = subprocess.run([sys.executable, "-m", "train.cli", "eval", "--data", str(data), "--strategy", strategy,
                               "--programs", "1", "--unit-tests", "3", "--test-source", "scene", "--iterations", "1",
                               "--max-new-tokens", "32", "--counterfactuals", "0", "--out", str(out)],
                              cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        choices = json.loads(out.read_text())["choices"]
        assert len(choices) == 2
        for c in choices:
            # A round happens exactly when the first program failed its criterion.
            assert c["rounds"] in (0, 1)
            if c["rounds"] == 0:  # no round: nothing to correct
                assert c["status"] == "ok" if strategy == "error_reprompt" else c["score"] >= 0.8
