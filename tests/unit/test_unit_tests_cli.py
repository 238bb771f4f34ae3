"""`vprl unit-tests` and `vprl eval`: bad input gets one line and exit 2, before any
model loads; the scene test source writes a complete suite, and nothing half-written."""

from __future__ import annotations

import json

from rewards.unit_tests.cli import main as unit_tests_main
from train.cli import main as vprl
from train.eval_cli import main as eval_main

SPEC = json.dumps({"family": "existence", "obj": {"color": "red", "shape": "circle"}})


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "error:" in err
    return err


def test_unit_tests_bad_input(tmp_path, capsys):
    assert unit_tests_main(["--question", "q", "--out", str(tmp_path / "o"), "--k", "0"]) == 2
    assert "--k" in _one_line_error(capsys)
    assert unit_tests_main(["--question", "q", "--out", str(tmp_path / "o"), "--test-source", "scene"]) == 2
    assert "--spec" in _one_line_error(capsys)
    # The old flag still works, with a deprecation line before the error.
    assert unit_tests_main(["--question", "q", "--out", str(tmp_path / "o"), "--generator", "scene"]) == 2
    deprecation, error = capsys.readouterr().err.strip().splitlines()
    assert "--generator is deprecated; use --test-source" in deprecation and "--spec" in error
    assert unit_tests_main(["--question", "q", "--out", str(tmp_path / "o"), "--test-source", "scene",
                            "--spec", "{not json"]) == 2
    assert "JSON" in _one_line_error(capsys)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    assert unit_tests_main(["--question", "q", "--out", str(tmp_path / "full"), "--test-source", "scene",
                            "--spec", SPEC]) == 2
    assert "--overwrite" in _one_line_error(capsys)
    assert (tmp_path / "full" / "x").read_text() == "keep me"
    assert unit_tests_main(["--question", "q", "--out", str(tmp_path / "o"), "--synthesis", "diffusers"]) == 2
    assert "diffusion_model" in _one_line_error(capsys)


def test_unit_tests_scene_writes_a_suite(tmp_path, capsys):
    out = tmp_path / "suite"
    assert vprl(["unit-tests", "--question", "Is there a red circle?", "--test-source", "scene", "--spec", SPEC,
                 "--k", "4", "--out", str(out)]) == 0
    lines = (out / "tests.jsonl").read_text().splitlines()
    head, tests = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
    assert head["question"] == "Is there a red circle?" and len(tests) == 4
    assert {t["answer"] for t in tests} == {"yes", "no"}  # answer coverage comes first
    assert all((out / t["image"]).exists() for t in tests)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite"]  # no staging folder left


def test_eval_bad_input(tmp_path, capsys):
    assert eval_main(["--data", str(tmp_path / "nope")]) == 2
    assert "vprl data shapes" in _one_line_error(capsys)
    assert eval_main(["--data", str(tmp_path), "--strategy", "best"]) == 2
    assert "invalid choice" in _one_line_error(capsys)
    assert eval_main(["--data", str(tmp_path), "--programs", "0"]) == 2
    _one_line_error(capsys)
    assert eval_main(["--data", str(tmp_path), "--metric", "bleu"]) == 2
    assert "--metric" in _one_line_error(capsys)
    assert eval_main(["--data", str(tmp_path), "--adapter", str(tmp_path)]) == 2
    assert "adapter_config.json" in _one_line_error(capsys)


def test_help_lists_the_new_commands(capsys):
    assert vprl(["--help"]) == 0
    out = capsys.readouterr().out
    assert "unit-tests" in out and "eval" in out


def test_eval_proptest_strategies_need_a_test_conditioned_prompt(tmp_path, capsys):
    assert eval_main(["--data", str(tmp_path), "--strategy", "proptest", "--prompt", "viper_compact"]) == 2
    assert "--prompt proptest" in _one_line_error(capsys)
    assert eval_main(["--data", str(tmp_path), "--strategy", "tests_not_run", "--prompt", "nope"]) == 2
    assert "unknown" in _one_line_error(capsys)
    assert eval_main(["--data", str(tmp_path), "--strategy", "proptest", "--tests", "oracle"]) == 2
    assert "invalid choice" in _one_line_error(capsys)
