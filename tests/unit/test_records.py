"""Rollout metrics built from the gathered records."""

import pytest

from train.records import RolloutRecord, rollout_metrics


def _record(weight, family, accuracy=0.0):
    return RolloutRecord(reward=accuracy, weight=weight, status="ok", accuracy=accuracy, question_family=family)


def test_weight_share_is_a_share_of_absolute_weight_under_signed_advantages():
    """rloo gives a question's programs advantages that sum to 0; the shares must still be
    fractions of the signal in [0, 1] that sum to 1 (a signed total near 0 gave -7e9)."""
    records = [_record(0.75, "count", 1.0), _record(-0.25, "count"), _record(-0.25, "count"), _record(-0.25, "count"),
               _record(-0.5, "logic"), _record(0.5, "logic", 1.0), _record(0.0, "spatial"), _record(0.0, "spatial")]
    m = rollout_metrics(records, [], [])
    shares = {k: m[f"rollout/by_question/{k}/weight_share"] for k in ("count", "logic", "spatial")}
    assert shares == pytest.approx({"count": 1.5 / 2.5, "logic": 1.0 / 2.5, "spatial": 0.0})
    assert m["rollout/by_question/count/accuracy"] == pytest.approx(0.25)


def test_weight_share_without_any_weight_is_zero_and_eq8_shares_are_unchanged():
    m = rollout_metrics([_record(0.0, "a"), _record(0.0, "b")], [], [])
    assert m["rollout/by_question/a/weight_share"] == 0.0 == m["rollout/by_question/b/weight_share"]
    m = rollout_metrics([_record(1.0, "a", 1.0), _record(3.0, "b", 1.0), _record(0.0, "b")], [], [])
    assert m["rollout/by_question/a/weight_share"] == pytest.approx(0.25)
    assert m["rollout/by_question/b/weight_share"] == pytest.approx(0.75)
