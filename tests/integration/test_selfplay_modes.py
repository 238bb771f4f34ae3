"""Self-play training modes end to end on the embedded model (tiny budgets)."""

import json

import pytest
from safetensors.torch import load_file


def _metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_pool_only_grows_pools_without_touching_lora_and_resumes_them(run_iterate, tmp_path):
    common = ("run_name=sp", "selfplay.mode=pool_only", "selfplay.families=[viper_compact, tool_api]",
              "selfplay.shots_per_step=[0, 2]", "selfplay.threshold=0.0", "selfplay.max_refinements=1",
              "rewards=[correctness]")
    # One iteration, then a resume to two: the second both restores the pool and grows it.
    proc = run_iterate(*common, "iterations=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "sp"
    first = _metrics(run_dir)[0]
    pool = json.loads((run_dir / "iterations/iter_000/pool.json").read_text())
    assert {e["family"] for e in pool} == {"viper_compact", "tool_api"}
    assert first["pool/viper_compact/size"] == sum(e["family"] == "viper_compact" for e in pool) > 0
    for key in ("eval/family/viper_compact/accuracy", "eval/family/tool_api/accuracy",
                "eval/aggregate/majority/accuracy", "eval/aggregate/judge/accuracy",
                "eval/aggregate/oracle/accuracy", "refine/viper_compact/tried", "rollout/tool_api/pass_rate"):
        assert key in first, key
    assert first["eval/aggregate/oracle/accuracy"] >= max(
        first["eval/family/viper_compact/accuracy"], first["eval/family/tool_api/accuracy"])

    again = run_iterate(*common, "iterations=2", "resume=true")
    assert again.returncode == 0, again.stderr[-3000:]
    metrics = _metrics(run_dir)
    assert [m["loss/steps"] for m in metrics] == [0, 0]  # pool_only: no gradient step
    initial = load_file(str(run_dir / "iterations/initial/adapter/adapter_model.safetensors"))
    last = load_file(str(run_dir / "iterations/iter_001/adapter/adapter_model.safetensors"))
    assert all(bool((initial[k] == last[k]).all()) for k in initial)
    # the restored pool keeps growing from where the checkpoint left it (tiny: nothing is evicted)
    later = json.loads((run_dir / "iterations/iter_001/pool.json").read_text())
    assert all(entry in later for entry in pool)
    assert metrics[1]["pool/viper_compact/size"] >= first["pool/viper_compact/size"]
    assert metrics[1]["pool/viper_compact/unique_questions"] >= first["pool/viper_compact/unique_questions"]
