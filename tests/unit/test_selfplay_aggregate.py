"""Mixed-shot aggregation on hand-made answers: majority, judge, oracle."""

from __future__ import annotations

import pytest

from envs.selfplay import aggregate, judge, majority, oracle, parse_choice
from envs.selfplay.aggregate import judge_prompt
from rewards.metrics import answer_key


def test_majority_votes_after_normalisation():
    assert majority(["red", "blue", "Red.", None]) == "red"
    assert majority(["2", "two", "2.0", "3"]) == "2"
    assert majority(["True", "yes", "no"]) == "True"
    assert answer_key("1,000") == answer_key("1000.0")


def test_majority_ties_go_to_the_first_pool_and_none_never_wins():
    assert majority(["blue", "red", "red", "blue"]) == "blue"
    assert majority([None, None, "3"]) == "3"
    assert majority([None, None]) is None
    assert majority([]) is None


def _letter_of(prompt: str, option: str) -> str:
    return next(line[0] for line in prompt.splitlines() if line[1:3] == ". " and line[3:] == option)


def test_judge_asks_a_multiple_choice_question_over_distinct_answers():
    prompts = []

    def ask(prompt):
        prompts.append(prompt)
        return f" {_letter_of(prompt, 'blue')}) blue, since the square is blue"

    assert judge("What color is the square?", ["red", "blue", "Red", None], ask) == "blue"
    (prompt,) = prompts
    assert "Question: What color is the square?" in prompt
    options = [line for line in prompt.splitlines() if line[1:3] == ". "]
    assert sorted(o[3:] for o in options) == ["blue", "red"] and [o[0] for o in options] == ["A", "B"]
    assert prompt.rstrip().endswith("Answer:")


def test_judge_shows_the_options_in_shuffled_order():
    """A judge that always says "A" must not always pick the first pool's answer."""
    picks = [judge(f"question {i}?", ["first", "second", "third"], lambda p: "A") for i in range(40)]
    assert set(picks) == {"first", "second", "third"}
    # The order is seeded by the question: the same question shows the same order.
    again = [judge(f"question {i}?", ["first", "second", "third"], lambda p: "A") for i in range(40)]
    assert again == picks
    # Whatever the order, the option the judge names is the answer returned.
    for i in range(20):
        answer, details = judge(f"q{i}", ["cat", "dog", "eel"], lambda p: _letter_of(p, "eel"), return_details=True)
        assert answer == "eel" and sorted(details["order"]) == [0, 1, 2]
    import random
    _, a = judge("q", ["x", "y", "z", "w"], lambda p: "A", return_details=True, rng=random.Random(1))
    _, b = judge("q", ["x", "y", "z", "w"], lambda p: "A", return_details=True, rng=random.Random(2))
    assert a["order"] != b["order"]


def test_judge_skips_the_call_when_unanimous_and_falls_back_to_majority():
    def never(prompt):
        raise AssertionError("no question when every pool agrees")

    assert judge("q", ["4", "four", None], never) == "4"
    assert judge("q", [None, None], never) is None
    answer, details = judge("q", ["cat", "dog", "dog"], lambda p: "I am not sure.", return_details=True)
    assert answer == "dog" and details["source"] == "fallback"
    answer, details = judge("q", ["cat", "dog", "dog"], lambda p: _letter_of(p, "cat"), return_details=True)
    assert answer == "cat" and details["source"] == "judge" and details["reply"] in "AB"


@pytest.mark.parametrize("reply, expected", [
    ("B", 1), ("(C)", 2), ("B.", 1), ("C) dark red", 2), ("**B**", 1), ("Answer: B", 1),
    ("The answer is: (C)", 2), ("I choose C because it fits", 2), ("The correct option is B.", 1),
    ("dark red", 2), ("I think it is blue", 1), ("A red one", 0),
    ("the answer is a circle", None), ("hmm", None), ("", None), ("D", None), ("A or B", None),
])
def test_parse_choice(reply, expected):
    assert parse_choice(reply, ["red", "blue", "dark red"]) == expected


def test_judge_prompt_letters():
    text = judge_prompt("q?", ["1", "2", "3", "4"])
    assert [line[:2] for line in text.splitlines() if line[:2] in ("A.", "B.", "C.", "D.")] == \
        ["A.", "B.", "C.", "D."]


def test_oracle_picks_the_best_candidate_under_the_metric():
    assert oracle(["red", "blue", None], "blue", "exact_match") == "blue"
    assert oracle(["red", "green"], "blue", "exact_match") == "red"  # none correct: the first
    assert oracle([None], "blue") is None
    # Relaxed accuracy: 5% tolerance on numbers.
    assert oracle(["10", "20.5"], "20", "relaxed_accuracy") == "20.5"
    # ANLS is graded: the closest spelling wins.
    assert oracle(["Jon Smith", "J. Smyth"], ["John Smith"], "anls") == "Jon Smith"
    assert oracle(["a", "b"], "b", lambda pred, gold: float(pred == gold)) == "b"


def test_aggregate_dispatch():
    answers = ["red", "blue", "blue"]
    assert aggregate("majority", "q", answers) == "blue"
    assert aggregate("judge", "q", answers, ask_fn=lambda p: _letter_of(p, "red")) == "red"
    assert aggregate("oracle", "q", answers, gold="red") == "red"
    with pytest.raises(ValueError, match="ask_fn"):
        aggregate("judge", "q", answers)
    with pytest.raises(ValueError, match="gold"):
        aggregate("oracle", "q", answers)
    with pytest.raises(ValueError, match="unknown aggregator"):
        aggregate("mean", "q", answers)
