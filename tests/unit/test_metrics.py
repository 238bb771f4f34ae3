"""Odd cases of the official evaluation rules, one test per rule."""

import pytest

from rewards.metrics import (
    CONTRACTIONS,
    METRICS,
    REFERENCE_COLUMN,
    aokvqa_accuracy,
    anls,
    code_pass_rate,
    exact_match,
    get_metric,
    gqa_accuracy,
    levenshtein,
    normalize_vqa_answer,
    relaxed_accuracy,
    strip_punctuation,
    vqa_soft_accuracy,
)

# -- VQA normalisation --------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Two", "2"),                  # number words become digits, after lower-casing
        ("none", "0"),
        ("the dog.", "dog"),           # articles dropped, final period stripped
        ("A Red Car", "red car"),
        ("yes.", "yes"),
        ("3.5", "3.5"),                # a period before a digit stays
        ("1,000", "1000"),             # thousands comma: marks are deleted, not spaced
        ("ice-cream", "ice cream"),    # a mark between letters becomes a space
        ("red - white", "red white"),  # a mark touching a space is deleted
        ("dont", "don't"),             # contraction map adds the apostrophe
        ("its", "its"),                # "its" is not in the map: never becomes "it's"
        ("it's", "it's"),              # apostrophes are not punctuation here
        ("  yes\n", "yes"),
        ("", ""),
    ],
)
def test_vqa_normalisation(raw, expected):
    assert normalize_vqa_answer(raw) == expected


def test_colon_and_apostrophe_are_not_vqa_punctuation():
    assert strip_punctuation("10:30") == "10:30"
    assert strip_punctuation("o'clock") == "o'clock"


def test_contraction_table_keeps_official_oddities():
    assert CONTRACTIONS["somebody'd"] == "somebodyd"
    assert CONTRACTIONS["Im"] == "I'm"  # unreachable after lower-casing, kept as published
    assert CONTRACTIONS["youve"] == "you've"


def test_period_stripping_stops_after_32_like_the_official_call():
    assert strip_punctuation("." * 40) == "." * 8


# -- VQA soft accuracy --------------------------------------------------------------------


@pytest.mark.parametrize("agree, expected", [(0, 0.0), (1, 0.3), (2, 0.6), (3, 0.9), (4, 1.0),
                                             (10, 1.0)])
def test_leave_one_out_values_for_ten_answers(agree, expected):
    answers = ["2"] * agree + ["3"] * (10 - agree)
    assert vqa_soft_accuracy("two", answers) == expected  # exact, not approximate


def test_soft_accuracy_normalises_prediction_not_reference_words():
    # References are expected in normal form; "Two" as a reference is not rewritten to "2".
    assert vqa_soft_accuracy("2", ["Two"] * 10) == 0.0
    assert vqa_soft_accuracy("The Dog.", ["dog"] * 10) == 1.0


def test_disagreeing_references_get_the_punctuation_rule():
    answers = ["hot-dog"] * 5 + ["sandwich"] * 5
    assert vqa_soft_accuracy("hot dog", answers) == 1.0
    # Unanimous references are left untouched, so the hyphen remains and nothing matches.
    assert vqa_soft_accuracy("hot dog", ["hot-dog"] * 10) == 0.0


def test_soft_accuracy_with_fewer_answers():
    assert vqa_soft_accuracy("cat", ["cat"]) == 1.0
    assert vqa_soft_accuracy("dog", ["cat"]) == 0.0
    assert vqa_soft_accuracy("cat", ["cat", "dog"]) == 0.5
    assert vqa_soft_accuracy("cat", ["cat"] * 3) == 1.0
    assert vqa_soft_accuracy("cat", ["cat"] * 5) == 1.0  # official formula from 4 answers


def test_soft_accuracy_edge_inputs():
    assert vqa_soft_accuracy(None, ["yes"] * 10) == 0.0
    assert vqa_soft_accuracy("", [""] * 10) == 1.0
    with pytest.raises(ValueError):
        vqa_soft_accuracy("yes", [])


def test_aokvqa_direct_answer_score_is_plain_count():
    assert aokvqa_accuracy("cat", ["cat"] * 2 + ["dog"] * 8) == pytest.approx(2 / 3)
    assert aokvqa_accuracy("Cat", ["cat"] * 10) == 0.0  # no normalisation in that script


# -- GQA ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pred, gt, expected",
    [
        ("Yes", "yes", 1.0),
        ("  no\n", "no", 1.0),
        ("True", "yes", 1.0),
        ("false", "no", 1.0),
        (True, "yes", 1.0),
        ("True.", "yes", 0.0),        # the true/false map runs before punctuation is stripped
        ("the table.", "table", 1.0),
        ("Two", "2", 1.0),
        ("2", "two", 0.0),            # the reference is used as given
        ("left", "right", 0.0),
        ("", "", 1.0),
        (None, "no", 0.0),            # no answer never scores, unlike ViperGPT's None -> "no"
    ],
)
def test_gqa_accuracy(pred, gt, expected):
    assert gqa_accuracy(pred, gt) == expected


def test_exact_match_for_yes_no_matching():
    assert exact_match(" YES", "yes") == 1.0
    assert exact_match(False, "no") == 1.0
    assert exact_match("yes.", "yes") == 0.0
    assert exact_match(None, "no") == 0.0


# -- relaxed accuracy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "pred, target, expected",
    [
        ("105", "100", 1.0),          # exactly 5% is inside the tolerance
        ("105.1", "100", 0.0),
        ("95", "100", 1.0),
        ("12.5%", "12%", 1.0),        # both percentages: 0.125 vs 0.12, 4.2% apart
        ("12%", "12.5", 0.0),         # "12%" means 0.12, so it is far from 12.5
        ("12", "12%", 0.0),
        ("0", "0", 1.0),              # target 0: exact string match
        ("0.0", "0", 0.0),
        ("0.001", "0", 0.0),
        ("1,000", "1000", 0.0),       # commas stop float parsing: strings differ
        ("1,000", "1,000", 1.0),
        ("Yes", "yes", 1.0),          # strings compare case-insensitively
        (" yes", "yes", 0.0),         # but nothing is stripped
        (" 100 ", "100", 1.0),        # float() itself tolerates surrounding spaces
        ("", "", 1.0),
        (None, "1", 0.0),
    ],
)
def test_relaxed_accuracy(pred, target, expected):
    assert relaxed_accuracy(pred, target) == expected


def test_relaxed_accuracy_tolerance_and_target_lists():
    assert relaxed_accuracy("110", "100", tolerance=0.1) == 1.0
    assert relaxed_accuracy("42", ["7", "42.5"]) == 1.0
    with pytest.raises(ValueError):
        relaxed_accuracy("1", [])


# -- ANLS ---------------------------------------------------------------------------------


def test_levenshtein():
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("", "abc") == 3
    assert levenshtein("abc", "abc") == 0


def test_anls_normalises_case_and_whitespace():
    assert anls("  Dear   DR. Lobo ", ["dear dr. lobo"]) == 1.0


def test_anls_partial_credit_and_best_reference():
    assert anls("12/15/89", ["12/15/88"]) == pytest.approx(1 - 1 / 8)
    assert anls("Denver Broncos", ["Denver R. Broncos", "denver broncos"]) == 1.0


def test_anls_threshold_boundary():
    assert anls("ab", ["ax"]) == 0.5     # NL exactly 0.5: kept, as the official script does
    assert anls("abc", ["axy"]) == 0.0   # NL 2/3 is past the threshold
    assert anls("abcd", ["abxy"]) == 0.5
    assert anls("abcde", ["abxyz"]) == 0.0  # NL 0.6
    assert anls("abc", ["axy"], threshold=0.7) == pytest.approx(1 / 3)


def test_anls_ignores_whitespace_padding():
    assert anls("xyz" + " " * 100, ["abc"]) == 0.0


def test_anls_empty_strings():
    assert anls("", [""]) == 1.0
    assert anls("", ["abc"]) == 0.0
    assert anls(None, ["abc"]) == 0.0
    with pytest.raises(ValueError):
        anls("a", [])


# -- code pass rate and registry ----------------------------------------------------------


def test_code_pass_rate():
    class Result:
        def __init__(self, status):
            self.status = status

    assert code_pass_rate(["ok", "runtime_error", "ok", "timeout"]) == 0.5
    assert code_pass_rate([Result("ok"), Result("compile_error")]) == 0.5
    with pytest.raises(ValueError):
        code_pass_rate([])


def test_registry_lookup_and_error():
    assert get_metric("anls") is anls
    assert set(REFERENCE_COLUMN) <= set(METRICS)
    with pytest.raises(ValueError, match="known metrics: .*gqa_accuracy"):
        get_metric("bleu")
