"""envs.data.rewording: the shapes questions in other words, same specs and answers."""

import json
import random

import pytest

from envs.data.rewording import WORDINGS, reword, reworded
from envs.data.shapes import build_dataset
from envs.data.spec import FAMILIES
from envs.data.vocab import NUMBER_WORDS, RELATION_PHRASE


def _words(spec) -> set[str]:
    """Every attribute value, relation and number the spec names."""
    out = set()
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key in ("size", "color", "shape") or key == "options":
                out |= set(value) if isinstance(value, list) else {value}
            elif key == "rel":
                out.add(RELATION_PHRASE[value])
            elif key == "n":
                out.add(NUMBER_WORDS[value] if value != 1 else "one")
            elif key != "text":
                out |= _words(value)
    elif isinstance(spec, list):
        for item in spec:
            out |= _words(item)
    return out


@pytest.fixture(scope="module")
def rows():
    ds = build_dataset(train=0, validation=72, test=0, seed=5, progress=False)["validation"]
    return [ds[i] for i in range(len(ds))]


def test_every_family_has_other_wordings():
    assert set(WORDINGS) == set(FAMILIES)


def test_a_reworded_question_asks_the_same_in_other_words(rows):
    again = reworded(rows, seed=1)
    assert {r["family"] for r in rows} == set(FAMILIES)  # every family is tried
    for old, new in zip(rows, again):
        assert new["question"] != old["question"]
        assert {k: v for k, v in new.items() if k != "question"} == {k: v for k, v in old.items() if k != "question"}
        text = new["question"].lower()
        missing = [w for w in _words(json.loads(old["spec"])) if w.lower() not in text]
        assert not missing, (old["question"], new["question"], missing)


def test_the_wording_is_drawn_from_the_seed(rows):
    assert reworded(rows, seed=3) == reworded(rows, seed=3)
    assert [r["question"] for r in reworded(rows, seed=3)] != [r["question"] for r in reworded(rows, seed=4)]


def test_an_unknown_family_is_a_clear_error():
    with pytest.raises(ValueError, match="no other wording for question family 'tally'"):
        reword({"family": "tally"}, random.Random(0))
