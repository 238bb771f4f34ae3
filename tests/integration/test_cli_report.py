"""The `vprl` CLI end to end on the embedded default: `vprl train --dry-run` (issue 16)."""

import subprocess
import sys

from tests.integration.conftest import ROOT, TINY, _env


def test_dry_run_loads_data_and_model_and_writes_nothing(tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.run([sys.executable, "-m", "train.cli", "train", "--config", str(ROOT / "configs/shapes_rwr_cpu.yaml"),
                           "--dry-run", f"output_dir={runs}", *TINY], cwd=tmp_path, env={**_env(), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "data: 24 train rows, 4 validation rows" in out
    assert "model: embedded:smollm2-135m-instruct (136.4M parameters" in out and "trainable in the LoRA adapter" in out
    assert f"dry run: nothing written; the run would write {runs}/shapes-rwr-cpu/" in out
    assert list(tmp_path.iterdir()) == [], "a dry run wrote files"
