"""Programs run once per scored batch (issue 26): `execute_and_score` hands the rewards
its execution results, and a reward that reads them never runs those programs again;
a reward called TRL's way (no results) still runs them itself. Also: one label scorer,
one answer for a row without a label."""

import pytest

import rewards
from envs.data.render import render
from envs.data.scene import Obj, Scene
from envs.execution import Executor
from rewards.combine import RewardSet, execute_and_score
from rewards.labels import answer_score, result_score
from train.evaluate import evaluate_choices

YES = "def execute_command(image):\n    return 'yes'\n"
NO = "def execute_command(image):\n    return 'no'\n"
QUESTION = "Is there a red circle?"


class Counting:
    """Keeps the programs of every batch `Executor.run` is asked to run (the real run follows)."""

    def __init__(self, monkeypatch):
        self.batches, run = [], Executor.run

        def counted(executor, programs, images, *args, **kwargs):
            self.batches.append(list(programs))
            return run(executor, programs, images, *args, **kwargs)

        monkeypatch.setattr(Executor, "run", counted)

    def runs_of(self, programs) -> int:
        return sum(bool(set(batch) & set(programs)) for batch in self.batches)


class CaptionJudge:
    """Stands in for caption_agreement's LLM judge: reads the caption literally."""

    def batch(self, prompts, long_answers):
        return ["Yes" if "yes or no" in p else "A" if "A or B" in p else "Yes, there is." for p in prompts]


@pytest.fixture
def rows():
    image = render(Scene([Obj("circle", "red", "large", 60, 128), Obj("square", "blue", "small", 180, 60)]))
    return [{"image": image, "question": QUESTION, "answer": "yes"}, {"image": image, "question": QUESTION,
                                                                      "answer": "yes"}]


# Every shipped reward that reads a program's own answer; proptest gates correctness, so
# the gated reward is handed the results too.
READERS = ["correctness", "executes", {"name": "proptest", "kwargs": {"mode": "gate", "reward": "correctness"}},
           "caption_agreement"]


def test_rewards_read_the_results_handed_to_them(rows, monkeypatch):
    monkeypatch.setattr("rewards.vlagent.reward.judge_for", lambda name: CaptionJudge())
    spy = Counting(monkeypatch)
    with Executor(workers=1) as ex:
        out = execute_and_score(rows, ["", ""], [YES, NO], ex, RewardSet(READERS), metric="gqa_accuracy")
    assert spy.runs_of([YES, NO]) == 1  # the batch itself; no reward ran a program again
    assert [o.parts["correctness"] for o in out] == [1.0, 0.0]
    assert [o.parts["executes"] for o in out] == [1.0, 1.0]
    assert [o.result.answer for o in out] == ["yes", "no"]
    assert out[1].parts["proptest"] == 0.0 and out[0].parts["proptest"] in (0.0, 1.0)
    assert out[0].parts["caption_agreement"] is not None


def test_a_reward_called_the_trl_way_runs_the_programs_itself(rows, monkeypatch):
    monkeypatch.setattr("rewards.vlagent.reward.judge_for", lambda name: CaptionJudge())
    columns = {"image": [r["image"] for r in rows], "question": [QUESTION] * 2, "answer": ["yes", "yes"]}
    spy = Counting(monkeypatch)
    with Executor(workers=1) as ex:
        for k, reward in enumerate(READERS, start=1):
            spec = reward if isinstance(reward, dict) else {"name": reward, "kwargs": {}}
            values = rewards.get(spec["name"])(["", ""], [YES, NO], executor=ex, **columns, **spec["kwargs"])
            assert len(values) == 2 and spy.runs_of([YES, NO]) >= k, spec["name"]


def test_results_of_another_batch_are_refused(rows):
    with Executor(workers=1) as ex:
        [result] = ex.run([YES], [rows[0]["image"]])
    with pytest.raises(ValueError, match="one ExecutionResult per completion"):
        rewards.get("correctness")(["", ""], [YES, NO], image=[r["image"] for r in rows], answer=["yes"] * 2,
                                   results=[result])


class _Result:
    def __init__(self, answer, status="ok"):
        self.answer, self.status = answer, status


def test_a_row_without_a_label_scores_none_everywhere():
    """Regression (issue 26): the correctness reward scored a failed run 0.0 on a row
    without a label (and crashed on an answered one) where the evaluation said None."""
    unlabelled, labelled = {"question": "q?"}, {"question": "q?", "answer": "yes"}
    failed, answered = _Result(None, "runtime_error"), _Result("yes")
    for result in (failed, answered):
        assert result_score(result, unlabelled, "gqa_accuracy") is None
    assert result_score(failed, labelled, "gqa_accuracy") == 0.0
    assert result_score(answered, labelled, "gqa_accuracy") == 1.0
    assert answer_score(None, labelled, "gqa_accuracy") == 0.0 and answer_score("yes", unlabelled, "x") is None
    reward = rewards.get("correctness")
    images = [None, None]
    assert reward(["", ""], [YES, NO], image=images, answer=["yes", None], results=[answered, failed]) == [1.0, None]
    assert reward(["", ""], [YES, NO], image=images, answer=[None, "yes"], results=[answered, failed]) == [None, 0.0]

    class Choice:
        def __init__(self, row, result):
            self.row, self.result, self.refused, self.score, self.failure = row, result, False, None, None

    # vprl eval's accuracy leaves the unlabelled row out rather than counting it wrong.
    metrics = evaluate_choices([Choice(0, answered), Choice(1, failed)], [labelled, unlabelled], None,
                               "gqa_accuracy")
    assert metrics["accuracy"] == 1.0
