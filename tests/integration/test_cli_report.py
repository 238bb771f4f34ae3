"""The `vprl` CLI end to end on the embedded default (issue 16): `vprl train --dry-run`, a run whose
W&B service dies mid-run, its train.log and tables, and `vprl report` opened in headless Chromium."""

import io
import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml
from PIL import Image

from tests.helpers.browser import chromium_paths, open_page
from tests.helpers.runs import ROOT, TINY, run_env
from train.report import SECTIONS


def _vprl(*args, cwd, timeout=300):
    return subprocess.run([sys.executable, "-m", "train.cli", *args], cwd=cwd, env={**run_env(), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_dry_run_loads_data_and_model_and_writes_nothing(tmp_path):
    runs = tmp_path / "runs"
    proc = _vprl("train", "--config", str(ROOT / "configs/shapes_rwr_cpu.yaml"), "--dry-run", f"output_dir={runs}",
                 *TINY, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "data: 24 train rows, 4 validation rows" in out
    assert "model: embedded:smollm2-135m-instruct (136.4M parameters" in out and "trainable in the LoRA adapter" in out
    assert f"dry run: nothing written; the run would write {runs}/shapes-rwr-cpu/" in out
    assert list(tmp_path.iterdir()) == [], "a dry run wrote files"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """Two iterations; W&B's service is killed during the second (tests/helpers/wandb_killer.py)."""
    root = tmp_path_factory.mktemp("report")
    proc = subprocess.run([sys.executable, "train/iterate.py", "--config", "configs/shapes_rwr_cpu.yaml",
                           f"output_dir={root / 'runs'}", *TINY, "run_name=r", "iterations=2", "tracking.report=true",
                           "questions_per_iteration=2", "eval_questions=1", "eval_counterfactuals=1",
                           "rewards=[format, correctness, tests.helpers.wandb_killer:reward]"],
                          cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=3600)
    return root, proc


@pytest.mark.slow
def test_a_run_whose_wandb_dies_goes_on_and_logs_everything(finished_run):
    root, proc = finished_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = root / "runs" / "r"
    assert "warning: W&B stopped working" in proc.stderr and "Traceback" not in proc.stderr
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in metrics] == [0, 1] and "eval/accuracy" in metrics[1]
    # train.log: the console without progress-bar noise, with the warning
    log = (run_dir / "train.log").read_text()
    assert "=== iteration 2/2 ===" in log and "iteration 2: reward" in log and "warning: W&B stopped working" in log
    assert "\r" not in log and "  0%|" not in log
    assert f"report: {run_dir / 'report.html'}" in proc.stdout.splitlines()[-1]  # the run ends with its report
    # the rollout table carries each failed program's error text
    rows = [json.loads(line) for line in (run_dir / "tables/iter_000/rollout/completions.jsonl").read_text().splitlines()]
    assert rows and all("error" in r and "reward/format" in r for r in rows)
    assert all(r["error"] for r in rows if r["status"] != "ok")
    assert all(r["image"]["image"].startswith("media/") for r in rows)


@pytest.mark.slow
def test_report_of_two_runs_opens_in_headless_chromium_without_errors(finished_run, tmp_path):
    root, proc = finished_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    browser, driver = chromium_paths()
    if not (browser and driver):
        if os.environ.get("VPRL_REQUIRE_BROWSER"):
            pytest.fail("chromium/chromedriver missing; `make system-deps` installs them")
        pytest.skip("chromium and chromium-driver are not installed (make system-deps)")
    second = root / "runs" / "r_copy"  # a second run folder, so the page compares two
    if not second.exists():
        shutil.copytree(root / "runs" / "r", second)
    out = tmp_path / "report.html"
    result = _vprl("report", str(root / "runs" / "r"), str(second), "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"report: {out}" in result.stdout
    pngs = sorted(p.name for p in (tmp_path / "report_plots").iterdir())
    assert {"curves.png", "errors.png", "timings.png"} <= set(pngs)
    html = out.read_text()
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in html, sid

    page = open_page(out)
    assert page.console_errors == [], page.console_errors  # CSP violations (anything not inlined) land here
    assert page.broken_images == [] and page.image_count >= 5
    assert page.section_ids == list(SECTIONS)
    shot = Image.open(io.BytesIO(page.screenshot)).convert("RGB")
    assert shot.size[0] >= 1000 and shot.size[1] >= 1000
    assert len(shot.resize((200, 200)).getcolors(maxcolors=40_000)) > 50, "the screenshot is blank"


@pytest.mark.slow
def test_readme_seeing_a_run_commands_run_as_written(finished_run, tmp_path):
    """The README's "Seeing a run, checking a config" block, line by line, in a folder whose
    runs/shapes-rwr-cpu and runs/my-run are copies of the real run."""
    from tests.integration.test_readme import blocks

    root, proc = finished_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("shapes-rwr-cpu", "my-run"):
        shutil.copytree(root / "runs" / "r", tmp_path / "runs" / name)
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    (block,) = [b for b in blocks("bash", "Training") if "vprl report" in b]
    env = {**run_env(), "PYTHONPATH": str(ROOT), "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    outputs = []
    for line in block.splitlines():
        result = subprocess.run(shlex.split(line, comments=True), cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, f"{line}\n{result.stderr[-2000:]}"
        outputs.append(result.stdout)
    assert (tmp_path / "runs/shapes-rwr-cpu/report.html").exists()
    assert (tmp_path / "compare.html").exists() and (tmp_path / "compare_plots" / "curves.png").exists()
    assert "optim.lr: float > 0" in outputs[2]
    assert yaml.safe_load(outputs[3])["optim"]["lr"] == 1e-4
    assert "dry run: nothing written; the run would write runs/lr-1e-4/" in outputs[4]
