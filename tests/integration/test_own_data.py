"""The README's path after the demo, run exactly as written: your own data in a format
that is not ours (a CSV of img_file/prompt/label beside a folder of PNGs, made by the
README's own snippet), one training iteration and an evaluation on it; your own model
(a Hub id from the local cache); portable adapters and `vprl export`; the `hf` tools.

Each README code block of a section runs in a fresh folder, as a user in a fresh clone
would run it (`configs/` linked in). Mock boundary: the Hugging Face cache holding
HuggingFaceTB/SmolLM2-135M-Instruct is filled from the embedded copy of that model, and
the hf detector is a tiny random OWLv2, because nothing can be downloaded here.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.runs import ROOT, run_env

BIN = Path(sys.executable).parent


def readme_blocks(section: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block under the README heading ``section``."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 4)
    return re.findall(r"```(\w+)\n(.*?)```", text[start:end], re.S)


def run_block(lang: str, code: str, cwd: Path, env: dict, timeout=1500):
    cmd = [sys.executable, "-c", code] if lang == "python" else ["bash", "-e", "-c", code]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{lang} block failed:\n{code}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture
def user(tmp_path):
    """A user's working folder and environment: the vprl script on PATH, no network."""
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    env = run_env()
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env["HF_HUB_OFFLINE"] = "1"
    env["HF_HUB_CACHE"] = str(tmp_path / "hf-cache")
    return tmp_path, env


def cache_smollm2(cache: Path) -> None:
    """HuggingFaceTB/SmolLM2-135M-Instruct in the layout `hf download` leaves, from the
    embedded copy of that model (its de-quantised weights)."""
    from policies.model import resolve

    source = resolve("embedded:smollm2-135m-instruct")
    rev = "0" * 40
    snapshot = cache / "models--HuggingFaceTB--SmolLM2-135M-Instruct" / "snapshots" / rev
    snapshot.mkdir(parents=True)
    for item in source.iterdir():
        (snapshot / item.name).symlink_to(item)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text(rev)


@pytest.mark.slow
def test_train_on_your_own_data_and_use_your_own_model_as_the_readme_says(user):
    work, env = user
    make_data, commands = readme_blocks("Train on your own data")
    run_block(*make_data, work, env)
    assert (work / "their_vqa" / "qa.csv").read_text().startswith("img_file,prompt,label")
    proc = run_block(*commands, work, env)
    assert "ok: train 32, validation 8 questions" in proc.stdout
    result = json.loads(proc.stdout[proc.stdout.rindex('{\n  "strategy"'):])  # vprl eval's JSON
    assert result["questions"] == 4 and 0.0 <= result["accuracy"] <= 1.0
    run = work / "runs" / "mine"
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 1
    adapter = run / "iterations" / "iter_000" / "adapter"
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "embedded:smollm2-135m-instruct"

    cache_smollm2(work / "hf-cache")
    dry_run, export, load = readme_blocks("Use your own model")
    assert "dry run: nothing written" in run_block(*dry_run, work, env).stdout
    run_block(*export, work, env)
    card = (work / "my-policy" / "README.md").read_text()
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in card and "| 0 (exported) |" in card
    run_block(*load, work, env)  # the README's loading snippet, as written
    # The merged model gives what its adapter, copied into another folder layout and
    # loaded with plain peft, gives.
    elsewhere = work / "shared" / "their-lora"
    elsewhere.parent.mkdir()
    os.symlink(adapter, elsewhere)
    check = load[1].replace('"my-adapter"', f'"{elsewhere}"') + (
        "\nids = tokenizer('def execute_command(image):', return_tensors='pt').input_ids\n"
        "print(float((merged(ids).logits - tuned(ids).logits).abs().max()))\n")
    gap = float(run_block("python", check, work, env).stdout.strip().splitlines()[-1])
    assert gap < 1e-3


def test_your_files_with_unmapped_columns_fail_before_the_model_loads(user):
    work, env = user
    make_data, _ = readme_blocks("Train on your own data")
    run_block(*make_data, work, env)
    proc = subprocess.run(["vprl", "data", "check", "their_vqa/qa.csv"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]  # beside progress bars
    assert proc.returncode == 2 and len(errors) == 1 and errors[0].startswith("vprl data check: error:")
    assert "--columns question=<column>" in errors[0]
    proc = subprocess.run(["vprl", "train", "--config", "configs/shapes_rwr_cpu.yaml", "data.name=files",
                           "data.path=their_vqa/qa.csv", "run_name=bad"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(lines) == 1 and "data.columns.question=<column>" in lines[0]
    assert not (work / "runs").exists()


@pytest.mark.slow
def test_real_image_tools_as_the_readme_shows(user):
    from tests.helpers.standins import tiny_owl_at

    work, env = user
    config, command = readme_blocks("Real-image tools (the `hf` backend)")
    (work / "hf.yaml").write_text(config[1])
    proc = subprocess.run(["vprl", "train", "--config", "hf.yaml", "--dry-run"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    # A dry run names what only a download (or a GPU) would fix as skipped, one line each.
    skipped = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("skipped: tools:")]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(skipped) == 1 and "set env.backend_kwargs.detector" in skipped[0]

    tiny_owl_at(work / "models" / "owlv2")
    (work / "program.py").write_text("def execute_command(image):\n"
                                     "    return str(len(ImagePatch(image).find('dog')) >= 0)\n")
    from PIL import Image

    Image.new("RGB", (64, 48), "white").save(work / "image.png")
    result = json.loads(run_block(*command, work, env).stdout.strip().splitlines()[-1])
    assert (result["status"], result["answer"]) == ("ok", "true"), result
