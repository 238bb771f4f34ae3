"""runs/<name>/train.log: the console without progress-bar noise, with warnings (issue 16)."""

import subprocess
import sys
from pathlib import Path

import pytest

from train.console_log import ConsoleLog

ROOT = Path(__file__).resolve().parents[2]


SCRIPT = r"""
import logging, sys, warnings
from tqdm import tqdm
from train.console_log import ConsoleLog

log = ConsoleLog()
print("loading data")  # before the run folder exists: kept and written on open
log.open(sys.argv[1])
for _ in tqdm(range(50), desc="generate"):
    pass
for _ in tqdm(range(5), desc="transient", leave=False):
    pass
print("\x1b[1miteration 1: reward 0.500\x1b[0m")
warnings.warn("a deprecation the user should see")
logging.getLogger("rewards.combine").error("reward 'x' raised (1/3)")
log.close()
print("after close")
"""


def test_log_has_the_console_lines_warnings_and_final_progress_bars(tmp_path):
    """In a fresh interpreter, so that warnings and logging take their ordinary paths (pytest reroutes both)."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "train.log")], cwd=ROOT,
                          capture_output=True, timeout=60)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "loading data" in out and "after close" in out  # the console is unchanged
    assert "\r" in err and "transient" in err  # the console did show the bars' redraws
    text = (tmp_path / "train.log").read_text()
    lines = text.splitlines()
    assert lines[0].startswith("--- ") and lines[1] == "loading data"
    bars = [line for line in lines if line.startswith("generate")]
    assert len(bars) == 1 and "50/50" in bars[0], bars  # the bar's final state only
    assert "transient" not in text and "\r" not in text and "\x1b" not in text
    assert "iteration 1: reward 0.500" in lines
    assert any("UserWarning: a deprecation the user should see" in line for line in lines)
    assert "reward 'x' raised (1/3)" in text
    assert "after close" not in text


def test_an_exception_reaches_the_log_and_the_streams_are_restored(tmp_path):
    saved = sys.stdout, sys.stderr
    with pytest.raises(RuntimeError):
        with ConsoleLog() as log:
            log.open(tmp_path / "train.log")
            raise RuntimeError("the sandbox fell over")
    assert (sys.stdout, sys.stderr) == saved
    text = (tmp_path / "train.log").read_text()
    assert "Traceback" in text and "RuntimeError: the sandbox fell over" in text


def test_other_ranks_log_nothing(tmp_path):
    saved = sys.stdout
    log = ConsoleLog(enabled=False)
    log.open(tmp_path / "train.log")
    assert sys.stdout is saved and not (tmp_path / "train.log").exists()
    log.close()


def test_a_line_written_while_a_bar_is_mid_line_is_its_own_line(tmp_path):
    """W&B's thread logged 'socket.send() raised exception.' while an update bar stood at 0%:
    the log had the 0% drawing glued to the warning (CI of stop 33)."""
    with ConsoleLog() as log:
        log.open(tmp_path / "train.log")
        sys.stderr.write("\rupdate:   0%|          | 0/1")
        sys.stderr.write("socket.send() raised exception.\n")
        sys.stderr.write("\rupdate: 100%|##########| 1/1")
        sys.stderr.write("\n")
    lines = (tmp_path / "train.log").read_text().splitlines()[1:]
    assert lines == ["socket.send() raised exception.", "update: 100%|##########| 1/1"]
