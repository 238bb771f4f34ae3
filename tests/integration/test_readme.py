"""The README examples of issue 16 run exactly as written: the Gymnasium example, the reward
plug-in (its file, its config and its command). A block whose first line is `# NAME.py`
(or `# NAME.yaml`) is a file the other examples use, written into the test's folder
first. The "Seeing a run, checking a config" commands run against a real run in
tests/integration/test_cli_report.py; other sections' examples are tested by their owners
(test_own_data.py, test_visprog.py, ...).
"""

import os
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from tests.helpers.runs import ROOT, run_env

README = (ROOT / "README.md").read_text()
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)


def blocks(lang: str, section: str | None = None) -> list[str]:
    text = README
    if section is not None:
        text = README.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [body for kind, body in FENCE.findall(text) if kind == lang]


def _file_name(block: str) -> str | None:
    first = block.splitlines()[0]
    match = re.fullmatch(r"# ([\w.-]+\.(py|yaml))", first.strip())
    return match.group(1) if match else None


def _env_here():
    return {**run_env(), "PYTHONPATH": str(ROOT), "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}


def _write_files(folder) -> None:
    for block in blocks("python") + blocks("yaml"):
        if _file_name(block):
            (folder / _file_name(block)).write_text(block)


def test_gymnasium_example_builds_a_program_that_runs():
    """The example used to build a program with a compile error; now it must print `ok`."""
    (block,) = blocks("python", "Environments")
    proc = subprocess.run([sys.executable, "-c", block], cwd=ROOT, env=_env_here(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    status, answer, reward = proc.stdout.splitlines()[-1].split()
    assert status == "ok" and answer in ("yes", "no") and float(reward) in (0.0, 1.0)


def test_reward_plugin_yaml_is_a_valid_config(tmp_path, monkeypatch):
    from train.config import load_config
    from train.setup import validate

    _write_files(tmp_path)
    monkeypatch.chdir(tmp_path)  # file-path rewards are relative to the working directory
    for block in blocks("yaml", "Plugging in a reward"):
        path = tmp_path / "example.yaml"
        path.write_text(block)
        assert isinstance(yaml.safe_load(block), dict)
        validate(load_config(path))


@pytest.mark.slow
def test_reward_plugin_example_runs_as_written(tmp_path):
    """my_rewards.py and my_config.yaml from the README, then the README's command, in that folder."""
    _write_files(tmp_path)
    assert (tmp_path / "my_rewards.py").exists() and (tmp_path / "my_config.yaml").exists()
    (line,) = [cmd for b in blocks("bash", "Plugging in a reward") for cmd in b.splitlines() if cmd.strip()]
    proc = subprocess.run(shlex.split(line, comments=True), cwd=tmp_path, env=_env_here(), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rewards correctness, my_rewards.py:short_program" in proc.stdout
    assert not (tmp_path / "runs").exists()
