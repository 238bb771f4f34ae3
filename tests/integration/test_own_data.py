"""After the demo: train one iteration and evaluate on a folder of images in a format that
is not ours, then take the adapter elsewhere and export a merged model.

The folder is made here: 36 PNGs in pics/, and a CSV whose columns are img_file, prompt
and label (file names relative to the CSV). Everything runs as a user runs it
(train/iterate.py, `vprl eval`, `vprl export`) on the embedded model, tiny budgets.
"""
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT, TINY, _env

COLUMNS = ["data.columns.question=prompt", "data.columns.answer=label",
           "data.columns.image=img_file"]


@pytest.fixture(scope="module")
def foreign(tmp_path_factory) -> Path:
    from envs.data.shapes import build_dataset

    root = tmp_path_factory.mktemp("their-data")
    (root / "pics").mkdir()
    rows = build_dataset(train=36, validation=0, test=0, seed=5, progress=False)["train"]
    with (root / "qa.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["img_file", "prompt", "label"])
        writer.writeheader()
        for i, row in enumerate(rows):
            row["image"].save(root / "pics" / f"scene_{i:02d}.png")
            writer.writerow({"img_file": f"pics/scene_{i:02d}.png", "prompt": row["question"],
                             "label": row["answer"]})
    return root / "qa.csv"


def _vprl(*args, timeout=600):
    return subprocess.run([str(Path(sys.executable).with_name("vprl")), *args], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=timeout)


def test_train_evaluate_and_export_on_your_own_files(run_iterate, foreign, tmp_path):
    proc = run_iterate("run_name=mine", "iterations=1", "rewards=[format, correctness]",
                       "data.name=files", f"data.path={foreign}",
                       *COLUMNS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "4 of 36 rows held out as 'validation' by seed 0" in proc.stderr
    run_dir = tmp_path / "runs" / "mine"
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 1 and metrics[0]["eval/questions"] == 2
    adapter = run_dir / "iterations" / "iter_000" / "adapter"  # the trained one (best may be the start)
    recorded = json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"]
    assert recorded == "embedded:smollm2-135m-instruct"  # not this machine's private cache path
    assert "metric: gqa_accuracy" in (run_dir / "config.yaml").read_text()

    # Evaluate the adapter on their files; its base model comes from the adapter itself.
    proc = _vprl("eval", "--data", str(foreign), "--columns", "question=prompt,answer=label,image=img_file",
                 "--adapter", str(adapter), "--questions", "2", "--max-new-tokens", "40",
                 "--counterfactuals", "0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["questions"] == 2 and 0.0 <= result["accuracy"] <= 1.0

    # The adapter in another folder layout loads with plain peft over the recorded base.
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from policies.model import load_model

    elsewhere = shutil.copytree(adapter, tmp_path / "shared" / "their-lora")
    base, tokenizer = load_model(recorded)
    ids = tokenizer("def execute_command(image):", return_tensors="pt").input_ids
    untuned = base(ids).logits
    tuned = PeftModel.from_pretrained(base, str(elsewhere))
    expected = tuned(ids).logits
    assert (expected - untuned).abs().max() > 1e-4  # the adapter was trained: it changes the model

    proc = _vprl("export", str(adapter), "--merge", "--out", str(tmp_path / "merged"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    merged = AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged"))
    assert (merged(ids).logits - expected).abs().max() < 1e-3
    card = (tmp_path / "merged" / "README.md").read_text()
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in card and "| 0 (exported) |" in card


def test_their_files_with_unmapped_columns_fail_before_the_model_loads(run_iterate, foreign, tmp_path):
    proc = run_iterate("run_name=bad", "data.name=files", f"data.path={foreign}", timeout=180)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "data.columns.question=<column>" in lines[0], proc.stderr[-2000:]
    assert not (tmp_path / "runs" / "bad").exists()
