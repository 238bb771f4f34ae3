"""The held-out split: balanced families and answers, and its constant-answer baseline."""

from collections import Counter

from envs.data.heldout import Quota
from envs.data.shapes import FAMILIES, build_dataset
from train.heldout import constant_baseline


def _rows(split):
    return [r for r in split.remove_columns("image")]


def test_validation_balances_families_and_answers_in_every_prefix():
    dd = build_dataset(train=90, validation=180, test=0, seed=0, progress=False)
    rows = _rows(dd["validation"])
    assert set(Counter(r["family"] for r in rows).values()) == {20}
    for n in (36, 90, 180):  # eval_questions takes a prefix: it is balanced too
        answer, score = constant_baseline(rows[:n])
        assert score <= 1 / 3, (n, answer, score)
    by_family = {f: Counter(r["answer"] for r in rows if r["family"] == f) for f in FAMILIES}
    assert by_family["existence"]["yes"] == by_family["existence"]["no"] == 10
    assert max(by_family["counting"].values()) <= 5  # a quarter of the family's 20
    # The training split is drawn freely, as before.
    assert dd["train"]["family"][:9] != list(FAMILIES)


def test_constant_baseline_finds_the_best_single_answer():
    rows = [{"answer": a} for a in ("no", "yes", "2", "yes", "3")]
    assert constant_baseline(rows) == ("yes", 0.4)
    assert constant_baseline([{"answer": "yes"}, {"answer": "no"}])[1] == 0.5
    assert constant_baseline([{"question": "unlabelled"}])[0] is None


def test_quota_gives_way_for_a_family_with_too_few_answers():
    quota = Quota(["existence"])
    taken = [quota.take("existence", "yes") for _ in range(3)]
    assert taken == [True, False, False]  # the second "yes" would be more than half
    quota.refused = Quota.PATIENCE
    assert quota.take("existence", "yes")  # after PATIENCE refusals it takes what comes
