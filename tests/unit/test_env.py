"""VisualProgramEnv: reset/step semantics, rewards in info, multi-turn refinement, batching.

The dataset is a handful of generated shapes questions; programs are the reference
programs from envs.data.programs (known correct) and deliberately broken variants.
"""

import json
import re

import gymnasium as gym
import pytest
from PIL import Image

import envs  # noqa: F401  (registers the ids)
import rewards
from envs.data.programs import reference_program
from envs.environments import VisualProgramEnv
from envs.environments.sources import _generated, _vqa_families
from envs.environments.spaces import PrintableText
from envs.prompts import get_family


@pytest.fixture(scope="module")
def rows():
    return _generated("train", 6, 11, _vqa_families(), False, 0.0)


def make(rows, **kwargs):
    return VisualProgramEnv(rows, metric="gqa_accuracy", **kwargs)


def solution(env, obs):
    return reference_program(json.loads(env.row(obs["image_index"])["spec"]))


def wrong_answer(env, obs):
    """A program that runs but answers something no shapes question has as its answer."""
    return "def execute_command(image):\n    return 'purple elephant'\n"


CRASHES = "def execute_command(image):\n    return ImagePatch(image).find('square')[99]\n"


def test_observation_carries_prompt_question_and_image_reference(rows):
    env = make(rows)
    obs, info = env.reset(seed=0)
    assert obs in env.observation_space
    row = env.row(obs["image_index"])
    assert obs["question"] == row["question"] and info["id"] == row["id"]
    # The prompt ends where every program starts; the question is its last query.
    prefix = get_family("viper_compact").program_prefix
    assert obs["prompt"].endswith(f"# Query: {row['question']}\n{prefix}")
    assert obs["turn"] == 0 and obs["feedback"] == ""
    assert isinstance(info["image"], Image.Image) and info["image"].size == row["image"].size


def test_single_step_correct_program_is_rewarded_and_terminates(rows):
    env = make(rows)
    obs, _ = env.reset(seed=1)
    obs2, reward, terminated, truncated, info = env.step(solution(env, obs))
    assert info["execution"]["status"] == "ok"
    assert info["execution"]["answer"] == env.row(obs["image_index"])["answer"]
    assert reward == 1.0 and info["reward_parts"] == {"correctness": 1.0} and info["solved"]
    assert (terminated, truncated) == (True, False)
    assert obs2 in env.observation_space
    with pytest.raises(RuntimeError, match="reset"):
        env.step(solution(env, obs))


def test_a_completion_continues_the_prompt(rows):
    """Policies emit the body after the prompt's header; the env judges header + body."""
    env = make(rows)
    obs, _ = env.reset(seed=2)
    full = solution(env, obs)
    prefix = get_family("viper_compact").program_prefix
    assert full.startswith(prefix)
    _, reward, _, _, info = env.step(full[len(prefix):])
    assert reward == 1.0 and info["program"].rstrip() == full.rstrip()


def test_single_step_failure_still_terminates_without_truncation(rows):
    env = make(rows)
    env.reset(seed=3)
    _, reward, terminated, truncated, info = env.step(CRASHES)
    assert reward == 0.0 and info["execution"]["status"] == "runtime_error"
    assert (terminated, truncated) == (True, False) and not info["solved"]


def test_weighted_rewards_are_summed_and_each_part_reported(rows):
    env = make(rows, rewards=[("correctness", 2.0), {"name": "format", "weight": 0.5}])
    obs, _ = env.reset(seed=4)
    _, reward, _, _, info = env.step(solution(env, obs))
    assert info["reward_parts"] == {"correctness": 1.0, "format": 1.0} and reward == 2.5
    env.reset(seed=4)
    _, reward, _, _, info = env.step(wrong_answer(env, obs))
    assert info["reward_parts"] == {"correctness": 0.0, "format": 1.0} and reward == 0.5


def test_rewards_receive_the_dataset_columns(rows):
    seen = {}

    def spy(prompts, completions, **columns):
        seen.update(columns)
        return [0.25] * len(completions)

    rewards.register("test_env_column_spy", spy)
    env = make(rows, rewards=["test_env_column_spy"], solved_by=None, solve_threshold=0.2)
    obs, _ = env.reset(seed=5)
    _, reward, terminated, _, info = env.step(wrong_answer(env, obs))
    row = env.row(obs["image_index"])
    assert reward == 0.25 and info["solved"]  # solved by the total, as correctness is absent
    assert seen["question"] == [row["question"]] and seen["answer"] == [row["answer"]]
    assert seen["metric"] == ["gqa_accuracy"] and seen["spec"] == [row["spec"]]
    assert isinstance(seen["image"][0], Image.Image)


def test_bad_configuration_fails_at_construction(rows):
    with pytest.raises(KeyError, match="known: .*correctness"):
        make(rows, rewards=["no_such_reward"])
    with pytest.raises(ValueError, match="answer"):
        VisualProgramEnv(rows.remove_columns(["answer", "answers"]))
    with pytest.raises(ValueError, match="unknown prompt family"):
        make(rows, prompt="nope")
    with pytest.raises(ValueError, match="solved_by='executes' is not among"):
        make(rows, rewards=["correctness"], solved_by="executes")
    with pytest.raises(ValueError, match="max_turns"):
        make(rows, max_turns=0)


def test_multi_turn_feedback_shows_the_error_then_terminates_when_solved(rows):
    env = make(rows, max_turns=3)
    obs, _ = env.reset(seed=6)
    obs, reward, terminated, truncated, info = env.step(CRASHES)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs["turn"] == 1 and obs["feedback"].startswith("Error: IndexError")
    assert obs in env.observation_space
    prompt = obs["prompt"]
    # The refinement prompt shows the failed program and its error, then a fresh header.
    assert "# Incorrect program:\n" + CRASHES.rstrip() in prompt
    assert "# " + obs["feedback"] in prompt
    assert prompt.endswith("# Corrected program:\n" + get_family("viper_compact").program_prefix)
    obs, reward, terminated, truncated, info = env.step(solution(env, obs))
    assert (reward, terminated, truncated) == (1.0, True, False) and obs["feedback"] == ""


def test_multi_turn_wrong_answer_note_and_truncation(rows):
    env = make(rows, max_turns=2)
    obs, _ = env.reset(seed=7)
    obs, _, terminated, truncated, _ = env.step(wrong_answer(env, obs))
    assert not terminated and not truncated
    note = obs["feedback"]
    assert "'purple elephant'" in note and "wrong" in note
    # The note says the answer is wrong without giving the gold one away.
    assert env.row(obs["image_index"])["answer"] not in re.findall(r"\w+", note)
    obs, _, terminated, truncated, info = env.step(wrong_answer(env, obs))
    assert (terminated, truncated) == (False, True) and info["turn"] == 2 == obs["turn"]


def test_custom_feedback_replaces_the_default(rows):
    env = make(rows, max_turns=2, feedback=lambda row, outcome: "Unit tests: 1 of 3 passed")
    env.reset(seed=8)
    obs, *_ = env.step(CRASHES)
    assert obs["feedback"] == "Unit tests: 1 of 3 passed"
    assert "# Unit tests: 1 of 3 passed\n# Corrected program:" in obs["prompt"]


def test_seeded_resets_are_reproducible_and_options_pick_rows(rows):
    env = make(rows)
    def draws(seed):
        return [env.reset(seed=seed)[0]["image_index"]] + [env.reset()[0]["image_index"]
                                                             for _ in range(5)]

    first = draws(9)
    assert draws(9) == first and len(set(first)) > 1 and draws(10) != first
    assert env.reset(options={"index": 4})[0]["image_index"] == 4
    shot = ("Is there a tiny dragon?", "    image_patch = ImagePatch(image)\n    return 'no'\n")
    obs, _ = env.reset(options={"index": 4, "shots": [shot]})
    assert "# Query: Is there a tiny dragon?\n" in obs["prompt"]
    assert "tiny dragon" in env.reset(options={"index": 1})[0]["prompt"]  # the pool stays
    with pytest.raises(IndexError):
        env.reset(options={"index": len(rows)})
    seq = make(rows, order="sequential")
    assert [seq.reset(seed=0)[0]["image_index"]] + [seq.reset()[0]["image_index"]
                                                     for _ in range(6)] == [0, 1, 2, 3, 4, 5, 0]


def test_score_batch_runs_every_program_once_and_scores_each(rows):
    env = make(rows, rewards=["correctness", "executes"])
    good = [reference_program(json.loads(env.row(i)["spec"])) for i in range(3)]
    indices = [0, 0, 1, 1, 2, 2]
    completions = [good[0], CRASHES, good[1], wrong_answer(env, None), good[2], good[2]]
    before = dict(env.executor.stats)
    outcomes = env.score_batch(indices, completions)
    assert [o.reward for o in outcomes] == [2.0, 0.0, 2.0, 1.0, 2.0, 2.0]
    assert [o.solved for o in outcomes] == [True, False, True, False, True, True]
    assert [o.index for o in outcomes] == indices
    # Rewards read the executor's cache: each distinct (program, image) ran at most once.
    assert env.executor.stats["executed"] - before["executed"] <= 5


def test_render_modes(rows):
    env = make(rows, render_mode="ansi")
    obs, _ = env.reset(seed=10)
    env.step(CRASHES)
    text = env.render()
    assert obs["question"] in text and "runtime_error" in text
    img_env = make(rows, render_mode="rgb_array")
    obs, _ = img_env.reset(seed=10)
    frame = img_env.render()
    assert frame.shape == (*rows[0]["image"].size[::-1], 3) and frame.dtype.name == "uint8"


def test_printable_text_space_holds_programs_and_real_questions():
    space = PrintableText(200)
    assert "def f(x):\n\treturn {'a': [1, 2]}  # ok\n" in space
    assert "What’s the café’s name — “Chez Émile”?" in space  # typographic characters
    assert "\x00" not in space and 3 not in space and "x" * 201 not in space
    space.seed(0)
    assert all(space.sample() in space for _ in range(20))
    assert "a b" not in gym.spaces.Text(10)  # why: the default charset is alphanumeric
