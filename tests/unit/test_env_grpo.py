"""The env's questions as a GRPOTrainer dataset, scored the way TRL calls rewards.

The model-backed GRPO step lives in tests/integration/test_trl_grpo.py; this checks, in
a second, that the dataset carries what the registry's rewards read and that they score
it when called with TRL's exact keyword arguments.
"""

import json

import gymnasium as gym

import envs
import rewards
from envs.data.programs import reference_program


def trl_call(fn, dataset, completions):
    """Call `fn` as trl 1.x GRPOTrainer._calculate_rewards does: every column but prompt
    as a keyword list, plus completion_ids, trainer_state, log_extra and log_metric."""
    rows = [dataset[i] for i in range(len(dataset))]
    columns = {k: [r[k] for r in rows] for k in rows[0] if k != "prompt"}
    return fn(prompts=[r["prompt"] for r in rows], completions=completions,
              completion_ids=[[0]] * len(rows), trainer_state=None,
              log_extra=lambda *a, **k: None, log_metric=lambda *a, **k: None, **columns)


def test_grpo_dataset_rows_are_scored_by_unchanged_registry_rewards():
    env = gym.make("vprl/Shapes-v0", size=4, seed=3)
    ds = envs.grpo_dataset(env)
    base = env.unwrapped
    assert [ds[i]["prompt"] for i in range(4)] == [base.prompt(i) for i in range(4)]
    # An empty `images` list per row tells TRL the (text-only) policy sees no images.
    assert ds["images"] == [[]] * 4 and set(ds["metric"]) == {"gqa_accuracy"}
    prefix = base.family.program_prefix
    right = [reference_program(json.loads(s))[len(prefix):] for s in ds["spec"]]
    wrong = ["\n    return 'purple elephant'\n"] * 4
    assert trl_call(rewards.get("correctness"), ds, right) == [1.0] * 4
    assert trl_call(rewards.get("correctness"), ds, wrong) == [0.0] * 4
    assert trl_call(rewards.get("format"), ds, wrong) == [1.0] * 4


def test_grpo_dataset_subset_and_shots():
    env = gym.make("vprl/Shapes-v0", size=4, seed=3,
                   shots=[("Is there a red square?", "    return 'yes'\n")])
    ds = envs.grpo_dataset(env, indices=[2, 0])
    assert ds["id"] == [env.unwrapped.row(2)["id"], env.unwrapped.row(0)["id"]]
    assert "# Query: Is there a red square?\n" in ds[0]["prompt"]
