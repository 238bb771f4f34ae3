"""train.evaluate: every answer is scored with its row's metric against the labels that
metric reads, in the loop's per-family/aggregate hits and in `vprl eval` alike."""

import pytest

from rewards.metrics import vqa_soft_accuracy
from rewards.labels import answer_score, result_score
from train.evaluate import family_hits


class _Result:
    def __init__(self, answer, status="ok"):
        self.answer, self.status = answer, status


def test_family_and_aggregate_hits():
    rows = [{"question": "q?", "answer": "yes", "id": "a"}, {"question": "r?", "answer": "2", "id": "b"}]
    hits = family_hits(rows, {"viper_compact": ["yes", "3"], "tool_api": ["no", "2"]}, "gqa_accuracy",
                       ["majority", "oracle"])
    assert hits["family/viper_compact"] == [1.0, 0.0] and hits["family/tool_api"] == [0.0, 1.0]
    assert hits["aggregate/oracle"] == [1.0, 1.0]
    assert hits["aggregate/majority"] == [1.0, 0.0]  # ties go to the first family
    assert set(family_hits(rows, {"viper_compact": ["yes", "3"]}, "gqa_accuracy", ["majority"])) == \
        {"family/viper_compact"}  # one family: nothing to aggregate


def test_vqa_soft_accuracy_hits_read_the_rows_answers():
    """Regression (issue 12): the loop scored eval hits as metric(answer, row['answer']), so
    vqa_soft_accuracy('yes', 'yes') was 0.0 and per-family and aggregate accuracy were wrong."""
    answers = ["yes"] * 3 + ["no"] * 7
    rows = [{"question": "q?", "answer": "yes", "answers": answers},
            {"question": "r?", "answer": "2", "answers": ["2"] * 10, "metric": "vqa_soft_accuracy"}]
    hits = family_hits(rows, {"a": ["yes", "2"], "b": ["no", "two"]}, "vqa_soft_accuracy",
                       ["majority", "oracle"])
    assert hits["family/a"] == [pytest.approx(vqa_soft_accuracy("yes", answers)), 1.0]
    assert hits["family/a"][0] > 0 and hits["family/b"] == [pytest.approx(vqa_soft_accuracy("no", answers)), 1.0]
    # The oracle picks by the row's metric too: "no" (7 of 10 annotators) over "yes" (3 of 10).
    assert hits["aggregate/oracle"][0] == pytest.approx(vqa_soft_accuracy("no", answers))


def test_a_rows_metric_column_wins_over_the_dataset_default():
    row = {"answer": "yes", "answers": ["yes"] * 2 + ["no"] * 8, "metric": "vqa_soft_accuracy"}
    assert answer_score("yes", row, "gqa_accuracy") == pytest.approx(vqa_soft_accuracy("yes", row["answers"]))
    assert result_score(_Result("yes", "runtime_error"), row, "gqa_accuracy") == 0.0
    assert result_score(_Result("yes"), {"question": "unlabelled"}, "gqa_accuracy") is None
