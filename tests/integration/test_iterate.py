"""End-to-end runs of train/iterate.py on the embedded default, with tiny budgets."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.helpers.runs import ROOT, TINY, run_env


def _adapter(run_dir: Path, name: str) -> dict:
    return load_file(str(run_dir / name / "adapter" / "adapter_model.safetensors"))


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_accelerate_launch_trains_lora_and_logs(run_iterate, tmp_path):
    """accelerate launch, 2 iterations; the format reward pays any parsable program, so
    there is always something to learn from."""
    proc = run_iterate("run_name=it", "iterations=2", "rewards=[format, correctness]",
                       launcher=("--config_file", "configs/accelerate/cpu.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "it"
    metrics = _metrics(run_dir)
    assert [m["iteration"] for m in metrics] == [0, 1]
    for key in ("reward/mean", "rewards/format/mean", "rewards/correctness/mean", "rollout/pass_rate",
                "loss/mean", "eval/accuracy", "eval/error/compile", "time/iteration"):
        assert key in metrics[0], key
    assert metrics[0]["rollout/samples"] == 6 and metrics[0]["loss/steps"] >= 1
    # The starting policy is the curve's first point: evaluated before any update, per question on disk.
    base = json.loads((run_dir / "eval" / "base.json").read_text())
    assert metrics[1]["eval/base_accuracy"] == base["eval/accuracy"]
    for point in ("base", "iter_000", "iter_001"):
        records = [json.loads(x) for x in (run_dir / "eval" / f"{point}.jsonl").read_text().splitlines()]
        assert len(records) == 2 and {"id", "accuracy", "logical_accuracy", "answer"} <= set(records[0])
    assert 0 <= metrics[0]["eval/constant_answer_accuracy"] <= 1 and 0 < metrics[0]["time/eval_share"] < 1
    assert metrics[0]["reward/label_free"] == 0.0  # correctness reads the labels
    initial = _adapter(run_dir, "iterations/initial")
    first, second = _adapter(run_dir, "iterations/iter_000"), _adapter(run_dir, "iterations/iter_001")
    assert not _same(initial, first) and not _same(first, second), "LoRA parameters did not change"
    assert any(k.endswith("lora_B.weight") for k in first)
    # The W&B run: offline (no API key in the test's environment), with our metrics in it.
    offline = list((run_dir / "wandb").glob("offline-run-*"))
    assert offline and list(offline[0].glob("run-*.wandb"))
    assert (run_dir / "config.yaml").exists() and (run_dir / "best" / "best.json").exists()


@pytest.mark.slow
def test_early_stopping_restores_the_best_adapter(run_iterate, tmp_path):
    # The monitor is the rollout reward: a held-out evaluation would be time nothing reads.
    proc = run_iterate("run_name=es", "iterations=5", "rewards=[tests.helpers.declining:reward]",
                       "early_stopping.patience=2", "eval_questions=0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "es"
    metrics = _metrics(run_dir)
    # rewards 1.0, 0.7, 0.4: two declines in a row stop the run after the third iteration
    assert [m["iteration"] for m in metrics] == [0, 1, 2]
    best = json.loads((run_dir / "best" / "best.json").read_text())
    assert (best["iteration"], best["adapter"], best["monitor"], best["value"], best["stopped_early"]) == \
        (-1, "initial", "reward/mean", 1.0, True)
    assert best["scores"] == pytest.approx({"initial": 1.0, "iter_000": 0.7, "iter_001": 0.4})
    # iteration 0's reward scored the initial adapter, so that is the one restored
    assert _same(_adapter(run_dir, "best"), _adapter(run_dir, "iterations/initial"))
    assert not _same(_adapter(run_dir, "best"), _adapter(run_dir, "iterations/iter_002"))


@pytest.mark.slow
def test_probe_monitor_scores_every_adapter_on_the_same_batch(run_iterate, tmp_path):
    """`early_stopping.monitor: probe/reward`. The declining reward falls at each rollout
    pass: the initial adapter's probe 1.0, iteration 0's rollouts 0.7, its probe 0.4,
    iteration 1's rollouts 0.1, its probe -0.2. The probes decline twice: stop, initial."""
    proc = run_iterate("run_name=probe", "iterations=5", "rewards=[tests.helpers.declining:reward]",
                       "early_stopping.monitor=probe/reward", "early_stopping.probe_questions=2",
                       "eval_questions=0")  # the probe decides; no held-out set is read
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "probe"
    metrics = _metrics(run_dir)
    assert [m["iteration"] for m in metrics] == [0, 1]
    assert [m["reward/mean"] for m in metrics] == pytest.approx([0.7, 0.1])
    assert [m["probe/reward"] for m in metrics] == pytest.approx([0.4, -0.2]) and metrics[0]["time/probe"] > 0
    best = json.loads((run_dir / "best" / "best.json").read_text())
    assert (best["adapter"], best["monitor"], best["stopped_early"]) == ("initial", "probe/reward", True)
    assert best["scores"] == pytest.approx({"initial": 1.0, "iter_000": 0.4, "iter_001": -0.2})
    assert "same 2 training questions" in best["why"] and "final_pass" not in best
    assert _same(_adapter(run_dir, "best"), _adapter(run_dir, "iterations/initial"))


@pytest.mark.slow
def test_resume_after_kill_logs_each_iteration_once(tmp_path):
    run_dir = tmp_path / "runs" / "kill"
    cmd = [sys.executable, "train/iterate.py", "--config", "configs/shapes_rwr_cpu.yaml",
           f"output_dir={tmp_path / 'runs'}", "run_name=kill", "iterations=3", "rewards=[format]", *TINY]
    log = open(tmp_path / "first.log", "w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=run_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 600
    # Kill -9 once iteration 2 (index 1) is under way: iteration 1 is checkpointed, 2 is not.
    while time.time() < deadline and proc.poll() is None:
        if (run_dir / "iterations" / "iter_000" / "state.json").exists() and \
                "iteration 2/3" in (tmp_path / "first.log").read_text():
            time.sleep(3)
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (run_dir / "iterations" / "iter_001" / "state.json").exists()

    again = subprocess.run(cmd + ["resume=true"], cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=4000)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming" in again.stdout + again.stderr
    assert [m["iteration"] for m in _metrics(run_dir)] == [0, 1, 2]
    # The base point was read back, not re-measured on the resumed adapter.
    base = json.loads((run_dir / "eval" / "base.json").read_text())
    assert all(m["eval/base_accuracy"] == base["eval/accuracy"] for m in _metrics(run_dir))
    assert all((run_dir / "iterations" / f"iter_{i:03d}" / "state.json").exists() for i in range(3))
    assert not list((run_dir / "iterations").glob("*.tmp"))


def test_a_failing_reward_stops_the_run_with_its_traceback_and_leaves_nothing(run_iterate, tmp_path):
    proc = run_iterate("run_name=broken", "iterations=1", "rewards=[tests.helpers.broken:reward]",
                       "reward_failure_limit=1", "eval_questions=0")
    assert proc.returncode != 0
    assert "this reward is broken on purpose" in proc.stderr and "RewardFailure" in proc.stderr
    assert not (tmp_path / "runs" / "broken").exists()


@pytest.mark.slow
def test_tools_served_by_a_tool_host(run_iterate, tmp_path):
    """env.tool_host=always: the vision tools (and llm_query) answer from a ToolHost
    process outside the sandbox; the run's programs still execute and score."""
    proc = run_iterate("run_name=host", "iterations=1", "env.tool_host=always", "rewards=[executes]")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics,) = _metrics(tmp_path / "runs" / "host")
    assert metrics["rollout/samples"] == 6 and metrics["eval/pass_rate"] > 0


@pytest.mark.slow
def test_a_short_run_can_publish_its_last_adapter(run_iterate, tmp_path):
    """One iteration: its rollouts score the initial adapter (0.2); one more rollout pass,
    with no update, scores the trained one (0.5), which is then `best/`."""
    proc = run_iterate("run_name=short", "iterations=1", "rewards=[tests.helpers.rising:reward]", "eval_questions=1",
                       "eval_counterfactuals=0", "tracking.mode=disabled")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "short"
    best = json.loads((run_dir / "best" / "best.json").read_text())
    assert (best["iteration"], best["adapter"]) == (0, "iter_000")
    assert best["scores"] == {"initial": pytest.approx(0.2), "iter_000": pytest.approx(0.5)}
    assert "final rollout pass" in best["why"]
    assert _same(_adapter(run_dir, "best"), _adapter(run_dir, "iterations/iter_000"))
    assert not _same(_adapter(run_dir, "best"), _adapter(run_dir, "iterations/initial"))


@pytest.mark.slow
def test_the_adapter_kept_from_an_unevaluated_iteration_is_measured_before_it_is_published(run_iterate, tmp_path):
    """eval_every=3 in 3 iterations evaluates only the last adapter, but the peak reward keeps
    the first update's (iteration 0): it gets its held-out point at the end, with the few-shot
    pool as it stood then (pool_and_rwr: the pool grows every iteration), the one `vprl eval`
    measures for best/adapter (no shots: shots_per_step=[0]), and the curves read it as the
    published point."""
    from train.curves import read_run

    proc = run_iterate("run_name=peak", "iterations=3", "eval_every=3", "rewards=[tests.helpers.peak:reward]",
                       "early_stopping.patience=3", "tracking.mode=disabled", "selfplay.mode=pool_and_rwr",
                       "selfplay.threshold=0.0", "selfplay.shots_per_step=[0]")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "peak"
    assert json.loads((run_dir / "best" / "best.json").read_text())["iteration"] == 0
    assert sorted(p.name for p in (run_dir / "eval").glob("*.jsonl")) == ["base.jsonl", "iter_000.jsonl", "iter_002.jsonl"]
    pools = [len(json.loads((run_dir / "iterations" / f"iter_{i:03d}" / "pool.json").read_text())) for i in (0, 2)]
    assert 0 < pools[0] < pools[1]
    assert f"adapter to publish (iter_000, its pool of {pools[0]} programs): eval acc" in proc.stdout
    assert "eval/accuracy" not in _metrics(run_dir)[0]  # iteration 0 itself was not evaluated
    assert read_run(run_dir)["final"] == "iter_000"
    records = [json.loads(line) for line in (run_dir / "eval" / "iter_000.jsonl").read_text().splitlines()]
    # the same held-out questions, saved for `vprl eval`
    import datasets

    from train.config import load_config
    from train.setup import load_data

    _, validation = load_data(load_config("configs/shapes_rwr_cpu.yaml", TINY), progress=False)
    datasets.DatasetDict({"validation": validation}).save_to_disk(str(tmp_path / "heldout"))
    out = tmp_path / "best.json"
    check = subprocess.run([sys.executable, "-m", "train.cli", "eval", "--data", str(tmp_path / "heldout"), "--questions",
                            "2", "--adapter", str(run_dir / "best" / "adapter"), "--temperature", "0",
                            "--max-new-tokens", "40", "--out", str(out)],
                           cwd=ROOT, env=run_env(), capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stderr[-3000:]
    assert [c["program"] for c in json.loads(out.read_text())["choices"]] == [r["program"] for r in records]


def test_program_search_teaches_what_sampling_missed(run_iterate, tmp_path):
    """search.enabled: the questions whose programs all failed are searched; the general form
    found there (simple_query of the question, which the helper reward pays) is taught beside
    the samples, and the sampled metrics count only the policy's own programs. With
    search.library the kept forms are checkpointed, and a resumed run reads them back."""
    proc = run_iterate("run_name=search", "iterations=1", "rewards=[tests.helpers.asks_the_question:reward]",
                       "search.enabled=true", "search.library=4", "generation.max_new_tokens=64", "eval_questions=0",
                       "tracking.mode=disabled")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics,) = _metrics(tmp_path / "runs" / "search")
    assert metrics["rollout/samples"] == 6 and metrics["rollout/weighted_samples"] == 0
    assert metrics["search/questions"] == 3 and metrics["search/general_forms"] >= 1
    assert metrics["search/kept"] >= 2 and metrics["time/search"] > 0
    assert metrics["loss/steps"] >= 1  # only what search found carried weight
    state = json.loads((tmp_path / "runs" / "search" / "iterations" / "iter_000" / "state.json").read_text())
    assert 1 <= len(state["search_library"]["viper_compact"]) == metrics["search/library"] <= 4
    assert all("__vprl_question__" in form for form in state["search_library"]["viper_compact"])
    # Resumed with nothing to search (the rising reward pays 0.2 or more, above search.below),
    # the second iteration can only hold the forms it read back from the checkpoint.
    proc = run_iterate("run_name=search", "iterations=2", "resume=true", "rewards=[tests.helpers.rising:reward]",
                       "search.enabled=true", "search.library=4", "search.below=0.1", "generation.max_new_tokens=64",
                       "eval_questions=0", "tracking.mode=disabled")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resuming" in proc.stdout + proc.stderr
    second = _metrics(tmp_path / "runs" / "search")[1]
    assert second["search/questions"] == 0 and second["search/library"] == metrics["search/library"]
    resumed = json.loads((tmp_path / "runs" / "search" / "iterations" / "iter_001" / "state.json").read_text())
    assert resumed["search_library"] == state["search_library"]


def test_composed_form_is_proven_and_taught_on_its_probe_questions(run_iterate, tmp_path):
    """search.compose + search.teach_probe through a real run: on count comparisons the
    starting policy does not solve, search composes `len(find(..)) > len(find(..))`, proves
    it on the training questions of its template, and teaches it there too; the update
    trains on what search wrote."""
    from envs.data.shapes import build_dataset

    build_dataset(train=48, validation=2, test=2, seed=0, families=["count_compare"],
                  progress=False).save_to_disk(str(tmp_path / "comparisons"))
    proc = run_iterate("run_name=compose", "iterations=1", "data.name=files", f"data.path={tmp_path / 'comparisons'}",
                       "questions_per_iteration=2", "search.enabled=true", "search.compose=2", "search.probe=8",
                       "search.teach_probe=3", "eval_questions=0", "tracking.mode=disabled")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics,) = _metrics(tmp_path / "runs" / "compose")
    assert metrics.get("search/proven", 0) >= 1
    assert 1 <= metrics.get("search/taught_probe", 0) <= 3 * metrics["search/proven"]
    assert metrics["loss/steps"] >= 1
