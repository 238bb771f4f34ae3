"""Bad configs end `train/iterate.py`'s main with one `error:` line and status 2, before
any run folder exists (in-process: main(argv) returns where a subprocess would exit)."""

import pytest

from tests.helpers.runs import TINY
from train.iterate import main


def _run(tmp_path, capsys, *overrides):
    status = main(["--config", "configs/shapes_rwr_cpu.yaml", f"output_dir={tmp_path / 'runs'}", *TINY,
                   "tracking.mode=disabled", *overrides])
    return status, [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("override,message", [
    ("bogus_key=1", "unknown config key 'bogus_key'"),
    ("rewards=[no_such_reward]", "unknown reward 'no_such_reward'"),
    ("data.path=/nonexistent/shapes", "data.path '/nonexistent/shapes' does not exist"),
    ("model=/nonexistent/model", "is not a Hugging Face model folder"),
    ("objective.name=ppo", "objective.name 'ppo' is not allowed"),
    ("programs_per_question=1", "programs_per_question >= 2"),  # with the next override
    ("eval_every=0", "eval_every"),
])
def test_bad_config_fails_fast_with_one_line_and_no_run_folder(tmp_path, capsys, override, message):
    extra = ["objective.name=rloo"] if override == "programs_per_question=1" else []
    status, lines = _run(tmp_path, capsys, "run_name=bad", override, *extra)
    assert status == 2 and len(lines) == 1 and message in lines[0], lines
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_eval_every_cannot_skip_what_the_monitor_reads(tmp_path, capsys):
    status, lines = _run(tmp_path, capsys, "eval_every=2", "early_stopping.monitor=eval/accuracy")
    assert status == 2 and len(lines) == 1 and "set eval_every=1" in lines[0]


def test_existing_run_folder_needs_resume(tmp_path, capsys):
    done = tmp_path / "runs" / "taken" / "iterations" / "iter_000"
    done.mkdir(parents=True)
    (done / "state.json").write_text("{}")
    status, lines = _run(tmp_path, capsys, "run_name=taken")
    assert status == 2 and len(lines) == 1 and "pass resume=true" in lines[0]
