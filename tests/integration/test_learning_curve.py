"""bench/learning_curve.py end to end: one arm, one seed, one tiny iteration, then the
table, plot and JSON; a second call reuses the finished run. bench/program_baselines.py
and bench/transfer.py then measure that run's adapter."""

import json
import subprocess
import sys

import pytest

from tests.helpers.runs import ROOT, TINY, run_env

SCRIPT = [sys.executable, "bench/learning_curve.py"]


@pytest.mark.slow
def test_learning_curve_runs_reads_and_reuses(tmp_path):
    out = tmp_path / "curve"
    # TINY sets programs_per_question=2 for every arm; the arm's own 3 wins.
    cmd = SCRIPT + ["--arm", "fmt=configs/shapes_rwr_cpu.yaml rewards=[format] programs_per_question=3",
                    "--iterations", "1", "--seeds", "0",
                    "--out", str(out), "--replicates", "200", "--set", *TINY]
    proc = subprocess.run(cmd, cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads((out / "curve.json").read_text())["fmt"]
    assert [row["point"] for row in result["curve"]] == ["base", "iter_000", "final"]
    base = result["curve"][0]
    mean, low, high = base["accuracy"]
    assert low <= mean <= high and "accuracy_gain" in result["curve"][1] and result["questions"] == 2
    assert result["info"]["label_free"] == 1.0  # the format reward reads no labels
    assert "programs_per_question: 3" in (out / "runs" / "fmt-s0" / "config.yaml").read_text()
    assert (out / "curve.png").stat().st_size > 1000
    assert "| base |" in (out / "curve.md").read_text()
    # A finished run is reused, not trained again.
    again = subprocess.run(cmd, cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "fmt-s0:" not in again.stdout

    # The fixed programs on the same held-out questions, against the run's published adapter.
    base = out / "fixed"
    proc = subprocess.run([sys.executable, "bench/program_baselines.py", "--config", "configs/shapes_rwr_cpu.yaml",
                           "--set", *TINY, "--against", str(out / "runs" / "fmt-s0"), "--out", str(base),
                           "--replicates", "200"], cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "trained - one_line" in proc.stdout and "reference (oracle)" in proc.stdout
    reference = [json.loads(line) for line in (base / "reference" / "eval" / "base.jsonl").read_text().splitlines()]
    trained = [json.loads(line) for line in (out / "runs" / "fmt-s0" / "eval" / "base.jsonl").read_text().splitlines()]
    assert [r["id"] for r in reference] == [r["id"] for r in trained]  # the questions the run evaluated
    assert all(r["accuracy"] == 1.0 and r["logical_accuracy"] == 1.0 for r in reference)

    # Transfer: the starting policy and the adapter through `vprl eval`, on the held-out
    # questions as they are and reworded.
    transfer = out / "transfer"
    proc = subprocess.run([sys.executable, "bench/transfer.py", "--config", "configs/shapes_rwr_cpu.yaml", "--set",
                           *TINY, "--runs", str(out / "runs" / "fmt-s0"), "--out", str(transfer), "--replicates", "200"],
                          cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "reworded: 2 questions" in proc.stdout and "trained - start" in proc.stdout
    start = json.loads((transfer / "original" / "start.json").read_text())["choices"]
    # `vprl eval` with the config's settings gives the run's own base point, program for program
    assert [(c["id"], c["program"], c["accuracy"], c["logical_accuracy"]) for c in start] == \
        [(r["id"], r["program"], r["accuracy"], r["logical_accuracy"]) for r in trained]
    reworded = json.loads((transfer / "reworded" / "start.json").read_text())["choices"]
    assert [c["id"] for c in reworded] == [c["id"] for c in start]
    assert all(a["question"] != b["question"] and a["answer"] == b["answer"] for a, b in zip(reworded, start))


def test_learning_curve_refuses_bad_usage_with_one_line(tmp_path):
    for args, message in ((["configs/nope.yaml"], "does not exist"),
                          (["--arm", "a=configs/shapes_rwr_cpu.yaml lr"], "key=value"),
                          (["--arm", "a=configs/shapes_rwr_cpu.yaml", "--against", "b"], "not one of the arms")):
        proc = subprocess.run(SCRIPT + args + ["--iterations", "1", "--out", str(tmp_path)], cwd=ROOT, env=run_env(),
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr and "error:" in proc.stderr


def test_transfer_refuses_bad_usage_with_one_line(tmp_path):
    script = [sys.executable, "bench/transfer.py", "--out", str(tmp_path / "out")]
    (tmp_path / "run" / "best" / "adapter").mkdir(parents=True)
    for args, message in ((["--config", "configs/shapes_rwr_cpu.yaml", "--runs", str(tmp_path)], "has not published"),
                          (["--config", "configs/nope.yaml", "--runs", str(tmp_path / "run")], "does not exist"),
                          (["--config", "configs/shapes_rwr_cpu.yaml", "--runs", str(tmp_path / "run"),
                            "--no-reworded"], "nothing to evaluate")):
        proc = subprocess.run(script + args, cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1 and message in proc.stderr and "transfer: error:" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_program_baselines_refuses_bad_usage_with_one_line(tmp_path):
    script = [sys.executable, "bench/program_baselines.py"]
    for args, message in ((["--config", "configs/nope.yaml"], "does not exist"),
                          (["--config", "configs/shapes_rwr_cpu.yaml", "--against", str(tmp_path)], "no eval/ records")):
        proc = subprocess.run(script + args, cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1 and message in proc.stderr and "program_baselines: error:" in proc.stderr
        assert "Traceback" not in proc.stderr
