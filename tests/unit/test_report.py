"""`vprl report` on run folders written by the real writers (Tracker, write_tables, save_config).

The page is rendered without its figures here (matplotlib is slow on a shared CPU); the
whole command with its PNGs, in a real browser, is tests/integration/test_cli_report.py.
"""

import json
import re
from dataclasses import asdict

from PIL import Image

from train.config import Config, TrackingConfig, save_config
from train.records import EvalRecord
from train.report import SECTIONS, main, render_html
from train.report_data import load_run
from train.tracking import Tracker


def _run(root, name, rewards, stopped=False):
    """A 3-iteration run folder as train/iterate.py leaves it (W&B off)."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    cfg = Config(run_name=name)
    save_config(cfg, run_dir / "config.yaml")
    tracker = Tracker(TrackingConfig(mode="disabled"), run_dir, {})
    image = Image.new("RGB", (32, 32), "blue")
    for it, reward in enumerate(rewards):
        rollouts = [{"iteration": it, "question": f"Is there a circle? {k}", "image": image, "question_family": "existence",
                     "program": "def execute_command(image):\n    return 'yes'", "family": "viper_compact",
                     "answer": "yes" if k % 2 else None, "expected": "yes",
                     "status": "ok" if k % 2 else "runtime_error",
                     "error": None if k % 2 else f"Error: NameError: name 'foo{k}' is not defined",
                     "refined": False, "reward/correctness": float(k % 2), "reward": float(k % 2) * reward,
                     "weight": float(k % 2)} for k in range(6)]
        # held-out answers as train/heldout.py writes them: one EvalRecord per question
        answers = [EvalRecord(float(i % 2), "ok", id=i, family=fam, question=f"q{i}") for i, fam in
                   enumerate(["counting", "counting", "existence", "existence", "spatial", "spatial"])]
        (run_dir / "eval").mkdir(exist_ok=True)
        (run_dir / "eval" / f"iter_{it:03d}.jsonl").write_text("".join(json.dumps(asdict(a)) + "\n" for a in answers))
        suite = [{"question": "Is there a circle?", "program_index": p, "test": t, "image": image,
                  "caption": f"a red circle {t}", "expected": "yes", "actual": "yes" if t else "no", "passed": bool(t),
                  "program_score": 0.5, "program": "def execute_command(image):\n    return 'yes'"}
                 for p in range(2) for t in range(3)]
        pool = [{"question": "How many squares?", "program": "def execute_command(image):\n    return '2'",
                 "answer": "2", "reward": 1.0, "step": it, "family": "viper_compact", "source_id": "s1"}]
        metrics = {"iteration": it, "reward/mean": reward, "rollout/accuracy": reward / 2, "rollout/pass_rate": 0.5,
                   "rollout/error/compile": 0.1, "rollout/error/runtime": 0.4, "rollout/error/timeout": 0.0,
                   "rollout/error/other": 0.0, "eval/accuracy": 0.4 + 0.1 * it, "eval/logical_accuracy": 0.3,
                   "eval/pass_rate": 0.9, "loss/mean": 1.5, "eval/family/viper_compact/accuracy": 0.4,
                   "time/rollout": 10.0, "time/update": 5.0, "time/eval": 3.0, "time/iteration": 19.0,
                   "early_stopping/declines": 0, "early_stopping/best_iteration": it - 1}
        tracker.log(metrics, rollouts, tables={"pool/contents": pool,
                                               "rewards/viunit/table": suite})
    (run_dir / "best").mkdir()
    (run_dir / "best" / "best.json").write_text(json.dumps({"iteration": 0, "reward": max(rewards),
                                                            "stopped_early": stopped}))
    (run_dir / "train.log").write_text("=== iteration 1/3 ===\nwarning: W&B stopped working (x)\n")
    return run_dir


def test_report_of_two_runs_has_every_section_and_only_inline_images(tmp_path):
    a = _run(tmp_path / "runs", "a", [0.2, 0.5, 0.4])
    b = _run(tmp_path / "runs", "b", [0.3, 0.2, 0.1], stopped=True)
    page = render_html([load_run(a), load_run(b)], plots={}, samples=2)
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in page, sid
    # self-contained: no source or link but data URIs, and a policy that forbids the rest
    assert not re.search(r'(src|href)="(?!data:|#)', page)
    assert "default-src 'none'" in page and page.count("data:image/png;base64,") >= 10
    assert "Error: NameError: name &#x27;foo4&#x27; is not defined" in page  # the rollout's error text
    assert "stopped early after iteration 3" in page and "ran all 3 iteration(s)" in page
    assert "a red circle 2" in page and 'class="pass"' in page  # the suite, with each program's answers
    assert "How many squares?" in page  # pool
    assert "counting" in page and "spatial" in page  # question families
    assert "warning: W&amp;B stopped working" in page  # train.log's warnings
    assert "<th>key</th><th>a</th><th>b</th>" not in page  # configs equal but for run_name: no diff table


def test_report_refuses_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert main([str(tmp_path), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "not a run folder" in err and "\n" not in err
    assert not (tmp_path / "r.html").exists()
    assert main([str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_starting_policy_evaluation_is_the_curves_base_point(tmp_path):
    """A run that evaluated its starting policy (eval/base.json, eval/<point>.jsonl per question)."""
    run_dir = _run(tmp_path / "runs", "a", [0.2, 0.5, 0.4])
    (run_dir / "eval" / "base.json").write_text(json.dumps({"eval/accuracy": 0.25, "time/eval": 3.0}))
    (run_dir / "eval" / "base.jsonl").write_text(
        "".join(json.dumps({"family": f, "accuracy": a}) + "\n" for f, a in [("counting", 0.0), ("counting", 1.0)]))
    run = load_run(run_dir)
    assert run.series("eval/accuracy")[0] == (0, 0.25) and run.series("time/eval")[0] != (0, 3.0)
    page = render_html([run], plots={})
    assert "<th>starting policy</th>" in page
    assert '<td>counting</td><td class="num">2</td><td class="num">0.500</td>' in page
