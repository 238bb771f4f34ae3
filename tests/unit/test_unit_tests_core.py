"""ViUniT pieces without a model: the test-line parser, coverage sampling on hand-made
embeddings, the scorer h and its penalties, the aggregators, the reward threshold,
and the unit-test source's prompts (selection, refusal and re-prompting: test_strategy_selection.py)."""

from __future__ import annotations

import random
from types import SimpleNamespace as NS

import numpy as np
import pytest

from rewards.unit_tests import UnitTest, aggregate, candidates_from_replies, coverage_sample, parse_tests
from rewards.unit_tests.parse import dedupe, short_answers
from rewards.unit_tests.scoring import same_answer, suite_score, unit_score, viunit_reward


# --------------------------------------------------------------------------- parsing
def test_parser_reads_the_paper_format_and_variants():
    text = "\n".join([
        '1. Image Caption: "A grey tabby cat napping on a sofa" Answer: yes',
        "2. Image Caption: Image Caption: \u201cTwo blue squares\u201d Answer: No.",   # repeated label, curly quotes
        "3) image caption: a red circle answer: red",                              # lower case, no quotes
        "Image Caption: \"A lone tree\" Answer:",                                  # no answer: skipped
        "Some chatter the model wrote",                                            # not a test
        "4. Image Caption: \"\" Answer: yes",                                      # empty caption: skipped
        '5. Image Caption: "A green triangle", Answer: "green"',                   # comma before Answer, quoted answer
    ])
    tests = parse_tests(text)
    assert [(t.caption, t.answer) for t in tests] == [
        ("A grey tabby cat napping on a sofa", "yes"), ("Two blue squares", "No"),
        ("a red circle", "red"), ("A green triangle", "green")]
    assert all(t.source == "llm" for t in tests)


def test_dedupe_keeps_first_and_order_and_long_answers_dropped():
    tests = [UnitTest("A red circle", "yes"), UnitTest("a red circle", "no"), UnitTest("Blue", "no"),
             UnitTest("Green", "one two three four"), UnitTest("Gray", "one two three four five")]
    assert [(t.caption, t.answer) for t in dedupe(tests)] == [("A red circle", "yes"), ("Blue", "no"),
                                                             ("Green", "one two three four"),
                                                             ("Gray", "one two three four five")]
    assert [t.caption for t in short_answers(tests)] == ["A red circle", "a red circle", "Blue", "Green"]


def test_candidates_pool_replies_in_order():
    replies = ['1. Image Caption: "A" Answer: yes\n2. Image Caption: "B" Answer: no',
               '1. Image Caption: "B" Answer: yes\n2. Image Caption: "C" Answer: a b c d e']
    assert [(t.caption, t.answer) for t in candidates_from_replies(replies)] == [("A", "yes"), ("B", "no")]


# --------------------------------------------------------------------------- coverage sampling
def _cands(answers):
    return [UnitTest(f"c{i}", a) for i, a in enumerate(answers)]


def _embed_from(points):
    table = {f"c{i}": np.asarray(p, dtype=float) for i, p in enumerate(points)}
    return lambda texts: np.stack([table[t] for t in texts])


# c0..c3 on a line at 0, 1, 2, 10; c4 at 9.5 (close to c3).
POINTS = [[0.0], [1.0], [2.0], [10.0], [9.5]]


def test_answer_then_input_covers_every_answer_then_spreads():
    cands = _cands(["yes", "yes", "no", "yes", "yes"])
    picked = coverage_sample(cands, 3, _embed_from(POINTS), "answer_then_input")
    # One per answer (first occurrences c0 'yes', c2 'no'), then the farthest from both: c3.
    assert [c.caption for c in picked] == ["c0", "c2", "c3"]


def test_farthest_point_and_paper_criterion_differ_as_documented():
    cands = _cands(["a"] * 5)
    embed = _embed_from(POINTS)
    # After c0 and c3, farthest-point takes the candidate farthest from its NEAREST chosen
    # one (c1 at 1 or c2 at 2 -> c2 at distance 2... vs c4 at 0.5) -> c2 (min distance 2);
    # Eq. 4 literally maximises the distance to the FARTHEST chosen one -> c4 (9.5 from c0).
    start = lambda crit: coverage_sample(cands, 3, embed, "answer_then_input", crit)  # noqa: E731
    # answer_then_input with one answer starts from c0, then picks by distance.
    assert [c.caption for c in start("farthest_point")] == ["c0", "c3", "c2"]
    assert [c.caption for c in start("paper")] == ["c0", "c3", "c4"]


def test_answer_strategy_cycles_answers_without_looking_at_inputs():
    cands = _cands(["yes", "yes", "yes", "no", "no", "two"])
    picked = coverage_sample(cands, 5, None, "answer")
    assert [c.caption for c in picked] == ["c0", "c3", "c5", "c1", "c4"]


def test_input_strategy_starts_random_and_spreads():
    cands = _cands(["a"] * 5)
    picked = coverage_sample(cands, 2, _embed_from(POINTS), "input", rng=random.Random(1))
    first = picked[0].caption
    far = {"c0": "c3", "c1": "c3", "c2": "c3", "c3": "c0", "c4": "c0"}
    assert picked[1].caption == far[first]


def test_random_strategy_and_edge_cases():
    cands = _cands(["a", "b", "c", "d"])
    r1 = coverage_sample(cands, 2, None, "random", rng=3)
    assert len(r1) == 2 and r1 == coverage_sample(cands, 2, None, "random", rng=3)
    assert coverage_sample(cands, 10, None, "answer") == cands  # k > M: all of them
    assert coverage_sample([], 3, None) == []
    assert coverage_sample(cands, 0, None) == []
    with pytest.raises(ValueError, match="embedding"):
        coverage_sample(cands, 4, None, "input")
    with pytest.raises(ValueError, match="strategy"):
        coverage_sample(cands, 2, None, "nope")
    with pytest.raises(ValueError, match="criterion"):
        coverage_sample(cands, 2, None, "random", "nope")


def test_more_answers_than_k_takes_the_first_k_answers():
    cands = _cands(["a", "b", "c", "d"])
    assert [c.answer for c in coverage_sample(cands, 2, _embed_from([[0], [1], [2], [3]]))] == ["a", "b"]


# --------------------------------------------------------------------------- scoring
def _r(status="ok", answer=None, error=None):
    return NS(status=status, answer=answer, error=error)


def test_scorer_penalties_eq5():
    assert unit_score(_r(answer="Yes"), "yes") == 1.0
    assert unit_score(_r(answer="two"), "2") == 1.0  # GQA normalisation
    assert unit_score(_r(answer="no"), "yes") == 0.0
    assert unit_score(_r(answer=None), "yes") == 0.0
    assert unit_score(_r("runtime_error"), "yes", eps_runtime=0.1, eps_compile=0.3) == -0.1
    assert unit_score(_r("timeout"), "yes", eps_runtime=0.2) == -0.2
    assert unit_score(_r("compile_error"), "yes", eps_runtime=0.1, eps_compile=0.3) == -0.3
    assert unit_score(_r("forbidden"), "yes", eps_compile=0.25) == -0.25
    assert not same_answer(None, "none")


def test_aggregators():
    s = [1.0, 1.0, 0.0, -0.1]
    assert aggregate(s, "mean") == pytest.approx(0.475)
    assert aggregate(s, "max") == 1.0
    assert aggregate(s, "mode") == 1.0
    assert aggregate([0.0, 0.0, 1.0], "mode") == 0.0
    assert aggregate([0.0, 1.0], "mode") == 1.0  # tie between modes: the higher
    assert aggregate([], "mean") == 0.0
    with pytest.raises(ValueError, match="aggregator"):
        aggregate(s, "median")


def test_suite_score_and_reward_threshold():
    suite = NS(tests=[UnitTest("a", "yes"), UnitTest("b", "no"), UnitTest("c", "no"), UnitTest("d", "yes"),
                      UnitTest("e", "no")])
    results = [_r(answer="yes"), _r(answer="no"), _r(answer="no"), _r(answer="yes"), _r("runtime_error")]
    s = suite_score(results, suite)
    assert s == pytest.approx((4 - 0.1) / 5)
    assert viunit_reward(s) == s              # 0.78 < 0.8
    assert viunit_reward(0.8) == 1.0          # at θ: passes
    assert viunit_reward(0.5, theta=0.4) == 1.0
    assert viunit_reward(-0.1) == -0.1


def test_source_prompts_query_only_and_with_implementation():
    from rewards.unit_tests import prompts
    from rewards.unit_tests.llm_source import LLMTestSource

    seen = []

    def complete(texts, n):
        seen.extend(texts)
        return [['red circle" Answer: yes\n2. Image Caption: "an empty image" Answer: no'] * n for _ in texts]

    tok = NS(chat_template=None)
    out = LLMTestSource(complete, tok, sequences=3)(["Is there a red circle?"])
    assert [(t.caption, t.answer) for t in out[0]] == [("red circle", "yes"), ("an empty image", "no")]
    q_only = seen[-1]
    assert q_only.startswith(prompts.SYSTEM_PROMPT) and q_only.endswith("Query: Is there a red circle?\nTests:\n" + prompts.OPENING)
    assert "Query: Is there a cat or dog in the image?" in q_only and "Program:" not in q_only
    program = "def execute_command(image):\n    return 'yes'"
    LLMTestSource(complete, tok, with_program=True)(["Is there a red circle?"], [program])
    with_impl = seen[-1]
    assert f"Query: Is there a red circle?\nProgram:\n{program}\nTests:\n" in with_impl
    assert "limited to a single word" in with_impl and "bool_to_yesno" in with_impl
    with pytest.raises(ValueError, match="needs the programs"):
        LLMTestSource(complete, tok, with_program=True)(["q"])
