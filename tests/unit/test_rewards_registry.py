"""The reward registry, built-in rewards and RewardSet's weighting and failure handling."""

import pytest

import rewards
from rewards.combine import RewardFailure, RewardSet, RewardSpec, execute_and_score


def test_builtins_are_registered_and_unknown_names_list_the_known_ones():
    assert {"correctness", "executes", "format"} <= set(rewards.available())
    with pytest.raises(KeyError, match="known: .*correctness"):
        rewards.get("nope")


def test_register_and_dotted_paths():
    def mine(prompts, completions, **kw):
        return [1.0] * len(completions)

    rewards.register("test_mine", mine)
    assert rewards.get("test_mine") is mine
    assert rewards.get("rewards.builtin:format_reward") is rewards.get("format")
    with pytest.raises(KeyError, match="cannot import"):
        rewards.get("no.such.module:fn")
    with pytest.raises(ValueError, match="already registered"):
        rewards.register("test_mine", lambda *a, **k: [])


def test_format_reward_reads_prompt_tail():
    prompt = "# Query: q\ndef execute_command(image):\n    image_patch = ImagePatch(image)"
    out = rewards.get("format")([prompt] * 4, ["\n    return 'yes'", "\n    return (", "\n  return 1\n    x", ""])
    assert out == [1.0, 0.0, 0.0, 0.0]  # an empty completion adds no return: not a program


def test_weighted_sum_skips_parts_that_do_not_apply():
    rewards.register("test_half", lambda p, c, **k: [0.5] * len(c))
    rewards.register("test_none_first", lambda p, c, **k: [None] + [1.0] * (len(c) - 1))
    rs = RewardSet([RewardSpec("test_half", 2.0), RewardSpec("test_none_first", 3.0)])
    totals, parts = rs.score(["p"] * 2, ["a", "b"], {})
    assert totals == [1.0, 4.0]
    assert parts["test_none_first"] == [None, 1.0]


def test_columns_and_kwargs_reach_the_reward():
    seen = {}

    def spy(prompts, completions, answer=None, scale=1, **kw):
        seen.update(answer=answer, scale=scale)
        return [float(scale)] * len(completions)

    rewards.register("test_spy", spy)
    rs = RewardSet([RewardSpec("test_spy", 1.0, {"scale": 3})])
    totals, _ = rs.score(["p"], ["c"], {"answer": ["yes"]})
    assert seen == {"answer": ["yes"], "scale": 3} and totals == [3.0]


def test_a_raising_reward_is_counted_not_zeroed_and_stops_past_the_limit():
    def boom(prompts, completions, **kw):
        raise RuntimeError("kaboom")

    rewards.register("test_boom", boom)
    rs = RewardSet([RewardSpec("test_boom")], failure_limit=2)
    totals, parts = rs.score(["p"], ["c"], {})
    assert totals == [None] and parts["test_boom"] == [None] and rs.failures["test_boom"] == 1
    with pytest.raises(RewardFailure, match="kaboom"):
        rs.score(["p"], ["c"], {})


def test_wrong_length_counts_as_failure():
    rewards.register("test_short", lambda p, c, **k: [1.0])
    rs = RewardSet([RewardSpec("test_short")], failure_limit=1)
    with pytest.raises(RewardFailure, match="returned 1 values for 2"):
        rs.score(["p", "q"], ["a", "b"], {})


def test_an_option_or_context_entry_wins_over_a_same_named_column():
    seen = {}

    def echo(prompts, completions, scale=1, run_dir=None, **kw):
        seen.update(scale=scale, run_dir=run_dir)
        return [1.0] * len(completions)

    rewards.register("test_echo", echo)
    rs = RewardSet([RewardSpec("test_echo", 1.0, {"scale": 3})], context={"run_dir": "runs/x"})
    rs.score(["p"], ["c"], {"scale": [9], "run_dir": ["column"]})
    assert seen == {"scale": 3, "run_dir": "runs/x"}


def test_rewards_run_on_the_executor_handed_in():
    """Regression (issue 12): rewards got the trainer's execution settings only through the
    process-wide shared_executor(). The executor now reaches them through the context."""
    from PIL import Image

    from envs.execution import Executor, shared

    class Counting:  # the real executor, counting the batches it is asked to run
        def __init__(self, executor):
            self.executor, self.calls = executor, 0

        def run(self, *args, **kwargs):
            self.calls += 1
            return self.executor.run(*args, **kwargs)

    before = shared._executor
    rows = [{"image": Image.new("RGB", (32, 32)), "answer": "yes"}, {"image": Image.new("RGB", (32, 32)), "answer": "no"}]
    program = "def execute_command(image):\n    return 'yes'\n"
    with Executor(workers=1) as ex:
        spy = Counting(ex)
        out = execute_and_score(rows, ["", ""], [program] * 2, spy,
                                RewardSet(["correctness", "executes"]), metric="gqa_accuracy")
        assert spy.calls == 1  # the batch once; the rewards read its results (issue 26)
        # A reward called without results runs them on the executor it is handed.
        assert rewards.get("correctness")(["", ""], [program] * 2, image=[r["image"] for r in rows],
                                          answer=["yes", "no"], executor=spy) == [1.0, 0.0]
        assert spy.calls == 2
    assert [o.parts for o in out] == [{"correctness": 1.0, "executes": 1.0}, {"correctness": 0.0, "executes": 1.0}]
    assert [o.reward for o in out] == [2.0, 1.0] and out[0].result.answer == "yes"
    assert shared._executor is before  # no process-wide executor was made or used


def test_stateful_rewards_are_objects_with_their_own_state():
    """Regression (issue 12): counters and builders lived in module globals and function
    attributes, shared by every caller in the process."""
    a, b = rewards.get("parse"), rewards.get("parse")
    assert isinstance(a, rewards.Reward) and a is not b and a.__name__ == "parse"
    program = "def execute_command(image):\n    return 'yes'\n"
    assert a([""], [program], question=["Is there a red circle?"]) == [1.0]
    assert a.metrics() == {"valid_share": 1.0} and b.metrics() == {}
    rs = RewardSet(["parse", "ensemble_iou"])
    assert all(isinstance(fn, rewards.Reward) for fn in rs.fns) and rs.fns[0] is not a


def test_a_reward_file_path_needs_no_pythonpath(tmp_path, monkeypatch):
    """`my_rewards.py:fn` in a config loads the file from the working directory, once."""
    import rewards

    (tmp_path / "file_rewards_x.py").write_text(
        "import rewards\n\n@rewards.register('file_reward_x')\ndef fn(prompts, completions, **columns):\n"
        "    return [1.0 for _ in completions]\n")
    monkeypatch.chdir(tmp_path)
    fn = rewards.get("file_rewards_x.py:fn")
    assert fn([""], ["x"]) == [1.0]
    assert rewards.get("file_rewards_x.py:fn") is fn is rewards.get("file_reward_x")  # loaded once
    with pytest.raises(KeyError, match="no file missing.py"):
        rewards.get("missing.py:fn")
