"""PropTest end to end on the embedded default: the README's commands as written, training
with the label-free `proptest` reward and the test-conditioned prompt, then
`vprl eval --strategy proptest` on the trained adapter with the real embedded LLM
writing the property tests."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.helpers.runs import ROOT, run_env

FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text().split("\n### Property tests (PropTest)\n", 1)[1]
    text = re.split(r"\n##+ ", text, maxsplit=1)[0]
    (block,) = [body for kind, body in FENCE.findall(text) if kind == "bash"]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_commands_run_as_written(tmp_path):
    env = {**run_env(), "PYTHONPATH": str(ROOT), "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    outputs = []
    for command in readme_commands():
        proc = subprocess.run(shlex.split(command), cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=1200)
        assert proc.returncode == 0, (command, proc.stderr[-3000:])
        outputs.append(proc.stdout)
    tested, plain = (json.loads(o) for o in outputs[1:])
    assert tested["strategy"] == "proptest" and tested["prompt"] == "proptest" and tested["questions"] == 4
    assert plain["prompt"] == "proptest_baseline" and "property_tests" not in plain
    for result in (tested, plain):
        assert set(result["errors"]) == {"assertion", "runtime", "compile"} and 0 <= result["accuracy"] <= 1
    assert plain["errors"]["assertion"] == 0  # no tests, no assertion errors


@pytest.mark.slow
def test_train_with_proptest_then_eval_with_llm_written_tests(run_iterate, tmp_path):
    # The test-conditioned prompt is ~3x longer than viper_compact: allow the slower start.
    # The reward monitor (the config's): after the last update a final scoring pass builds
    # suites for the next questions, and best.json counts them with that pass.
    proc = run_iterate("run_name=pt", "iterations=1", config="configs/shapes_proptest_cpu.yaml", timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "pt"
    m = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert math.isfinite(m["rewards/proptest/mean"]) and 0.0 <= m["rewards/proptest/mean"] <= 1.0
    assert m["rewards/proptest/suites_built"] >= 1 and m["rewards/proptest/test_invalid"] == 0
    assert 0.0 <= m["rollout/accuracy"] <= 1.0  # labels are logged, never read by the reward
    suites = [json.loads(p.read_text()) for p in (run_dir / "property_tests").glob("*.json")]
    final_pass = json.loads((run_dir / "best" / "best.json").read_text())["final_pass"]
    assert final_pass["rewards/proptest/suites_built"] >= m["rewards/proptest/suites_built"]
    assert len(suites) == final_pass["rewards/proptest/suites_built"]
    assert all(s["test_source"] == "template" for s in suites)

    data = tmp_path / "shapes"
    subprocess.run([sys.executable, "-m", "train.cli", "data", "shapes", "--out", str(data), "--train", "0",
                    "--val", "2", "--test", "0", "--no-progress"], cwd=ROOT, env=run_env(), check=True)
    out = tmp_path / "eval.json"
    proc = subprocess.run([sys.executable, "-m", "train.cli", "eval", "--data", str(data), "--strategy", "proptest",
                           "--tests", "basic", "--max-new-tokens", "40", "--counterfactuals", "0",
                           "--adapter", str(run_dir / "best" / "adapter"), "--cache", str(tmp_path / "cache"),
                           "--out", str(out)], cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["strategy"] == "proptest" and result["prompt"] == "proptest" and result["questions"] == 2
    assert result["property_tests"] == "basic" and set(result["errors"]) == {"assertion", "runtime", "compile"}
    choices = json.loads(out.read_text())["choices"]
    for c in choices:
        # Any failure sends the question to the fallback; after one, its answer is never the program's.
        assert c["refused"] == (c["failure"] is not None)
        if c["refused"]:
            assert "simple_query" in c["program"]
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2  # the LLM's tests, cached per question
