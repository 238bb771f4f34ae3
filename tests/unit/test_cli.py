"""`vprl` follows the conventions researchers rely on: one test per convention (issue 16)."""

import dataclasses
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from train.cli import main
from train.config import Config, load_config, to_dict

ROOT = Path(__file__).resolve().parents[2]


def _keys(obj=Config(), prefix=""):
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from _keys(value, f"{prefix}{f.name}.")
        else:
            yield prefix + f.name


def test_version(capsys):
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"vprl {expected}"


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"]])
def test_closed_pipe_gives_no_traceback(argv):
    """`vprl -h | head`: the reader is gone before vprl writes; it exits quietly."""
    proc = subprocess.Popen([sys.executable, "-m", "train.cli", *argv], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert proc.returncode in (0, 141)


def test_train_help_lists_every_config_key_with_default_and_allowed_values(capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for key in _keys():
        assert f"\n  {key}: " in out, key
    assert "  optim.schedule: linear | constant = linear\n" in out
    assert "  generation.top_p: float > 0 and <= 1 = 0.9\n" in out
    assert "  iterations: int >= 1 = 3\n" in out
    assert "  rewards[].name: str\n" in out
    assert "viper_compact" in out.split("  env.prompt:")[1].splitlines()[0]  # registry names, resolved
    assert "keep training last iteration's adapter" in out  # the field's comment is its help
    assert "--print-config" in out and "--dry-run" in out


def test_print_config_prints_the_resolved_yaml_and_writes_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = ROOT / "configs" / "shapes_rwr_cpu.yaml"
    assert main(["train", "--config", str(config), "--print-config", "optim.lr=1e-3", "iterations=1"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == to_dict(load_config(config, ["optim.lr=1e-3", "iterations=1"]))
    assert printed["optim"]["lr"] == 1e-3 and printed["iterations"] == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("override,message", [
    ("iteratons=2", "unknown config key 'iteratons' (did you mean 'iterations'?)"),
    ("env.timeout_s=0", "env.timeout_s must be > 0"),
    ("data.metric=code_pass_rate", "data.metric 'code_pass_rate' is not a per-question metric"),
])
def test_dry_run_refuses_a_bad_config_with_one_line_and_writes_nothing(capsys, tmp_path, override, message):
    """The full dry run (data and model loaded) is in tests/integration/test_cli_report.py."""
    assert main(["train", "--dry-run", f"output_dir={tmp_path / 'runs'}", override]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
    assert not (tmp_path / "runs").exists()


def test_unknown_command_suggests_the_close_one(capsys):
    assert main(["trian"]) == 2
    assert "did you mean 'train'?" in capsys.readouterr().err


@pytest.mark.parametrize("argv,flag,wanted", [
    (["eval", "--data", "nowhere", "--max-new-tokens", "0"], "--max-new-tokens", "an integer >= 1"),
    (["eval", "--data", "nowhere", "--questions", "-1"], "--questions", "an integer >= 1"),
    (["eval", "--data", "nowhere", "--temperature", "-0.5"], "--temperature", "a finite number >= 0"),
    (["eval", "--data", "nowhere", "--temperature", "inf"], "--temperature", "a finite number >= 0"),
    (["eval", "--data", "nowhere", "--theta", "2"], "--theta", "a finite number >= 0 and <= 1"),
    (["eval", "--data", "nowhere", "--programs", "zero"], "--programs", "an integer >= 1"),
    (["eval", "--data", "nowhere", "--counterfactuals", "-1"], "--counterfactuals", "an integer >= 0"),
    (["data", "shapes", "--out", "nowhere", "--train", "-5"], "--train", "an integer >= 0"),
    (["data", "import", "nowhere", "--out", "x", "--max-bad-fraction", "1.5"], "--max-bad-fraction",
     "a finite number >= 0 and <= 1"),
    (["data", "import", "nowhere", "--out", "x", "--val-size", "0"], "--val-size", "an integer >= 1"),
    (["exec", "p.py", "i.png", "--timeout", "0"], "--timeout", "a finite number > 0"),
    (["exec", "p.py", "i.png", "--timeout", "1e999"], "--timeout", "a finite number > 0"),
    (["unit-tests", "--question", "q", "--out", "x", "--k", "0"], "--k", "an integer >= 1"),
    (["report", "nowhere", "--samples", "-1"], "--samples", "an integer >= 0"),
])
def test_a_number_out_of_range_is_refused_as_the_command_line_is_read(capsys, tmp_path, monkeypatch, argv, flag,
                                                                      wanted):
    """Every command reads its numbers with one bounded type (envs.cliargs.number): a bad value
    is refused before anything else is checked or loaded (the paths here do not exist), in
    one line naming the flag and the range; `--max-new-tokens 0` once ran a whole evaluation."""
    monkeypatch.chdir(tmp_path)
    try:
        status = main(argv)
    except SystemExit as stop:  # the argparse-based commands exit from parse_args
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    line = err.splitlines()[-1]
    assert flag in line and f"expected {wanted}" in line, err
    assert "Traceback" not in err and not any(tmp_path.iterdir())
