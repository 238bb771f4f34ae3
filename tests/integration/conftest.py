import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.runs import ROOT, TINY, run_env


@pytest.fixture
def run_iterate(tmp_path):
    """Run train/iterate.py as a user would, in a subprocess; returns CompletedProcess."""

    def run(*overrides, launcher=("python",), timeout=4000, config="configs/shapes_rwr_cpu.yaml"):
        if launcher == ("python",):
            cmd = [sys.executable, "train/iterate.py"]
        else:
            cmd = [str(Path(sys.executable).with_name("accelerate")), "launch", *launcher, "train/iterate.py"]
        cmd += ["--config", config, f"output_dir={tmp_path / 'runs'}", *TINY, *overrides]
        return subprocess.run(cmd, cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=timeout)

    return run
