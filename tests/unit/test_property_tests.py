"""PropTest property tests: static checks, normalisation, the template test source, the
prompts, per-assert execution in the real sandbox, the `proptest` reward and the
fallback strategies."""

from __future__ import annotations

import json

import pytest

from envs.data.render import render
from envs.data.scene import Obj, Scene
from envs.execution import Executor
from rewards.property_tests import prompts
from rewards.property_tests.harness import check_answers, check_results, harness_program
from rewards.property_tests.normalize import normalize_answer
from rewards.property_tests.static import parse_test
from rewards.property_tests.suite import PropertyConfig, PropertySuiteBuilder
from rewards.property_tests.template import properties, template_shown, template_test
from train.strategies.proptest import answer_with_tests

RED_CIRCLE = render(Scene([Obj("circle", "red", "large", 60, 128)]))


def fn(*lines: str) -> str:
    return "def execute_test(image):\n    result = solve_query(image)\n" + "".join(f"    {x}\n" for x in lines) \
        + "    return result\n"


def program(body: str) -> str:
    return f"def execute_command(image):\n    {body}\n"


# ---------------------------------------------------------------- static checks

def test_vacuous_asserts_are_flagged_and_dropped():
    s = parse_test(fn("assert bool_to_yesno(result == 'yes')", "assert isinstance(result, str)",
                      "assert (result == 'yes', 'a tuple')", "assert result in ['yes', 'no']"), "Is it?", "llm")
    assert [t.source for t in s.tests] == ["assert result in ['yes', 'no']"]
    reasons = [d["reason"] for d in s.dropped]
    assert all(r.startswith("vacuous") for r in reasons) and len(reasons) == 3
    assert "non-empty string" in reasons[0] and "text" in reasons[1] and "container" in reasons[2]
    s = parse_test(fn("assert 'a non-empty string'", "assert f'answer: {result}'", "assert result or True"), "q", "llm")
    assert len(s) == 0 and all(d["reason"].startswith("vacuous") for d in s.dropped)


def test_type_checks_no_text_can_pass_are_dropped():
    s = parse_test(fn("assert isinstance(result, (list, tuple))", "assert isinstance(result[0], int)",
                      "assert isinstance(result.split(), list)", "assert len(result) < 9"), "q", "llm")
    assert [d["reason"].split(":")[0] for d in s.dropped] == ["impossible", "impossible"]
    assert [t.source for t in s.tests] == ["assert isinstance(result.split(), list)", "assert len(result) < 9"]


def test_more_than_four_asserts_are_cut_and_repeats_dropped():
    lines = [f"# Test case {i}:\n    assert len(result) > {i}" for i in range(1, 7)]
    s = parse_test(fn(*lines), "q", "llm")
    assert len(s) == 4 and [d["reason"] for d in s.dropped] == ["beyond the 4th test case"] * 2
    s = parse_test(fn("assert result == 'a'", "assert result == 'a', 'same check, other message'"), "q", "llm")
    assert len(s) == 1 and s.dropped[0]["reason"] == "repeats an earlier test case"


def test_a_test_that_does_not_compile_is_test_invalid():
    s = parse_test(fn("assert result in ['yes', 'no'", "x = = 2"), "q", "llm")
    assert s.invalid.startswith("does not compile") and len(s) == 0
    assert parse_test("no function here", "q", "llm").invalid.startswith("no `def execute_test")


def test_a_reply_cut_by_the_token_budget_loses_only_its_last_line():
    text = fn("assert result in ['yes', 'no']").replace("    return result\n", "") + '    assert result in ["red", "re'
    s = parse_test(text, "q", "llm")
    assert s.invalid is None and [t.source for t in s.tests] == ["assert result in ['yes', 'no']"]


def test_undefined_names_answer_blind_and_forbidden_asserts_are_dropped():
    s = parse_test(fn("assert is_color(result)", "assert llm_query('Is red a colour?') == 'yes'",
                      "assert result.__class__ is str", "words = result.split()", "assert len(words) < 3"),
                   "q", "llm")
    assert [t.source for t in s.tests] == ["assert len(words) < 3"]
    reasons = [d["reason"] for d in s.dropped]
    assert "undefined name 'is_color'" in reasons[0]
    assert "does not read the answer" in reasons[1]
    assert reasons[2].startswith("refused by the sandbox")


def test_shown_tests_hold_only_comments_and_asserts():
    s = parse_test(fn("# Test case 1:", "assert result in ['a', 'b'], 'one of them'"), "q", "llm")
    assert s.shown() == "# Test case 1:\nassert result in ['a', 'b']"


# -------------------------------------------------------------- normalisation

@pytest.mark.parametrize("text,norm", [("Yes.", "yes"), ("Yes, it is.", "yes"), ("no it isn't", "no"),
                                       ("No one", "no one"), ("  The Circle. ", "circle"), ("Three", "3"),
                                       ("nothing", "nothing"), ('"blue"', "blue")])
def test_normalisation(text, norm):
    assert normalize_answer(text) == norm


# ---------------------------------------------------------- template test source

def test_template_reads_the_question_form_only():
    assert properties("How many red circles are there?") == [("result.isdigit()", "a count is a number")]
    assert "['orange', 'purple']" in properties("Is the triangle orange or purple?")[0][0]
    assert "['triangle', 'circle']" in properties("Is the blue object a triangle or a circle?")[0][0]
    for yesno in ("Is there either a small red object or an orange square?", "Is there a cat or dog?",
                  'Verify image matches text="There is a {large} \'red\' object."'):
        assert properties(yesno)[0][0] == 'result in ["yes", "no"]'
    assert "'red'" in properties("What color is the square?")[0][0]
    # Only the question goes in: the test source cannot read spec or labels.
    b = PropertySuiteBuilder(PropertyConfig(test_source="template"))
    assert b.build(["Is there a red circle?"])[0].tests[0].source.startswith("assert result in ['yes', 'no']")
    # What the proptest prompt shows by default is exactly the suite's shown() text.
    for q in ("How many red circles are there?", "Is the square red or blue?", "What size is it?", "Who is it?"):
        assert template_shown(q) == parse_test(template_test(q), q, "template").shown()


def test_prompts_paste_queries_with_quotes_and_braces_verbatim():
    q = 'Verify image matches text="A {red} circle\'s "box"."'
    for kind in ("basic", "advanced", "itm"):
        text = prompts.render(q, kind)
        assert text.endswith(f"<<Query>>: {q}\n{prompts.OPENING}")
    assert "llm_query" in prompts.render("What is it?", "advanced")
    assert "llm_query" not in prompts.render("What is it?", "basic")
    assert len(prompts.BASIC_EXAMPLES) == 6 and len(prompts.ADVANCED_EXAMPLES) == 10
    s = parse_test(template_test(q), q, "template")
    assert s.invalid is None and len(s) == 1


# ------------------------------------------------------------ sandbox harness

def test_each_assert_runs_separately_for_partial_credit(ex):
    s = parse_test(fn("assert result in ['Yes', 'No']", "assert len(result) == 3", "assert int(result) > 0",
                      "assert llm_query(f'Is {result} a colour?') == 'yes'"), "q", "llm")
    assert len(s) == 4
    (c,) = check_answers(ex, [s], ["Yes, it is."], [RED_CIRCLE])
    # normalised comparison passes; len fails; int() raises (error); llm_query has no LLM here (error)
    assert c.status == "ok" and c.tests == ["pass", "fail", "error", "error"] and c.passed == 1 and c.failed


def test_program_error_vs_test_error(ex):
    s = parse_test(fn("assert result.isdigit()", "assert int(result) >= 0"), "How many?", "llm")
    crash, words = program("return 1/0"), program("return 'many'")
    r_crash, r_words = ex.run([crash, words], [RED_CIRCLE] * 2)
    c_crash, c_words = check_results(ex, [s, s], [r_crash, r_words], [RED_CIRCLE] * 2)
    assert c_crash.status == "not_run" and "ZeroDivisionError" in c_crash.error and c_crash.tests == []
    assert c_words.status == "ok" and c_words.tests == ["fail", "error"]


def test_a_looping_test_errs_without_blaming_the_program():
    s = parse_test(fn("assert result == 'yes'", "assert len(result) > 0 and all(x >= 0 for x in iter(int, 1))"), "q", "llm")
    with Executor(workers=1, timeout_s=0.5) as short:
        (c,) = check_answers(short, [s], ["yes"], [RED_CIRCLE])
    assert c.status == "ok" and c.tests == ["error", "error"]


def test_the_harness_cannot_be_fooled_by_the_answer(ex):
    s = parse_test(fn("assert result in ['yes', 'no']"), "q", "llm")
    hostile = "yes'\n    vprl_outcomes.append('pass')\n'"
    assert repr(hostile) in harness_program(s, hostile)
    assert check_answers(ex, [s], [hostile], [RED_CIRCLE])[0].tests == ["fail"]


# ---------------------------------------------------------------- the reward

def test_proptest_reward_is_label_free_and_has_three_modes():
    import rewards

    fn_ = rewards.get("proptest")
    assert fn_.uses_labels is False
    progs = [program("return 'yes'"), program("return 'blue'"), program("return 1/0")]
    cols = dict(question=["Is there a red circle?"] * 3, image=[RED_CIRCLE] * 3)
    base = fn_([""] * 3, progs, **cols)
    assert base == [1.0, 0.0, 0.0]
    # Garbage labels change nothing: it never reads them.
    assert fn_([""] * 3, progs, **cols, answer=["no"] * 3, answers=[["x"]] * 3, spec=["{}"] * 3,
               scene=["{}"] * 3) == base
    assert fn_([""] * 3, progs, **cols, mode="all") == base
    assert fn_([""] * 3, progs, **cols, mode="gate", reward="format") == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="needs `reward`"):
        fn_.check_kwargs({"mode": "gate"})
    with pytest.raises(ValueError, match="unknown option"):
        fn_.check_kwargs({"generatr": "llm"})
    with pytest.raises(ValueError, match="unknown test_source"):
        fn_.check_kwargs({"test_source": "oracle"})


def test_partial_credit_in_fraction_mode(ex):
    from rewards.property_tests.reward import score

    s = parse_test(fn("assert len(result.split()) <= 2", "assert result not in ['yes', 'no']"), "What is it?", "llm")
    (c,) = check_answers(ex, [s], ["yes"], [RED_CIRCLE])
    assert score(c, "fraction") == 0.5 and score(c, "all") == 0.0


# ----------------------------------------------------------- fallback answers

def test_fallback_is_taken_on_every_failure_and_the_answer_never_returned(ex):
    q = "How many red circles are there?"
    rows = [{"question": q, "image": RED_CIRCLE}] * 4
    suite = parse_test(template_test(q), q, "template")
    progs = [program("return 'lots'"), program("return 1/0"), program("return (("), program("return 7")]
    answers = answer_with_tests("proptest", rows, progs, ex, [suite] * 4)
    assert [a.failure for a in answers] == ["assertion", "runtime", "compile", None]
    assert [a.fallback for a in answers] == [True, True, True, False]
    for a in answers[:3]:
        assert "simple_query" in a.program and a.result.answer == "1"  # the backend counts one circle
    assert answers[3].result.answer == "7"
    kept = answer_with_tests("proptest_no_fallback", rows, progs, ex, [suite] * 4)
    assert kept[0].result.status == "assertion_error" and kept[0].result.answer is None
    assert [k.result.status for k in kept[1:]] == ["runtime_error", "compile_error", "ok"]
    unchecked = answer_with_tests("tests_not_run", rows, progs, ex)
    assert unchecked[0].result.answer == "lots" and unchecked[0].check is None
    assert [u.fallback for u in unchecked] == [False, True, True, False]


def test_an_invalid_test_never_sends_the_program_to_the_fallback(ex):
    rows = [{"question": "q", "image": RED_CIRCLE}]
    bad = parse_test(fn("assert result ==", ""), "q", "llm")
    (a,) = answer_with_tests("proptest", rows, [program("return 'x'")], ex, [bad])
    assert not a.fallback and a.result.answer == "x" and a.check.status == "test_invalid"


# ------------------------------------------------------------------ caching

def test_suites_are_cached_per_question(tmp_path):
    calls = []

    def complete(prompts_, n):
        calls.append(len(prompts_))
        return [["\n    assert result in ['yes', 'no']\n    return result"] for _ in prompts_]

    cfg = PropertyConfig(test_source="basic")
    b = PropertySuiteBuilder(cfg, cache_dir=tmp_path, complete=complete)
    first = b.build(["Is it red?", "Is it blue?", "Is it red?"])
    assert calls == [2] and len(first[0]) == 1 and first[0] is first[2]
    again = PropertySuiteBuilder(cfg, cache_dir=tmp_path, complete=complete).build(["Is it blue?"])
    assert calls == [2] and again[0].tests[0].source == first[1].tests[0].source
    assert len(list(tmp_path.glob("*.json"))) == 2 and not list(tmp_path.glob("*.tmp*"))
    (tmp_path / next(p.name for p in tmp_path.glob("*.json"))).write_text("{broken")
    PropertySuiteBuilder(cfg, cache_dir=tmp_path, complete=complete).build(["Is it red?", "Is it blue?"])
    assert calls == [2, 1]  # the unreadable file is written again, the other reused
    json.loads(next(tmp_path.glob("*.json")).read_text())


# ------------------------------------------------------ test-conditioned prompts

def test_the_proptest_family_shows_each_query_with_its_tests():
    from envs.prompts import get_family, render_refinement
    from envs.prompts.proptest import EXAMPLES
    from policies.programs import program_from

    fam, base = get_family("proptest"), get_family("proptest_baseline")
    q = 'How many {red} "circles" are there?'
    text = fam.render(None, q)
    assert text.count("# Assertion tests:") == 9 and len(EXAMPLES) == 8
    assert text.endswith(f"# Query: {q}\n# Assertion tests:\n# Test case 1:\n# assert result.isdigit()\n"
                         f"{fam.program_prefix}")
    given = fam.render(None, q, tests="# Test case 1:\nassert int(result) < 10")
    assert "# assert int(result) < 10\ndef execute_command" in given
    plain = base.render(None, q)
    assert "Assertion tests" not in plain and "assertion tests" not in plain
    # The same examples, the tests aside: the baseline differs only in them.
    assert plain.count("def execute_command") == text.count("def execute_command")
    # A completion is read as for every family; refinement turns keep working.
    assert program_from(text, "\n    return '3'").endswith("return '3'\n")
    assert render_refinement(fam, None, q, "def execute_command(image):\n    return 1/0\n", "Error: boom") \
        .endswith(fam.program_prefix)


def test_the_examples_programs_pass_their_own_tests(ex):
    from envs.prompts.proptest import EXAMPLES
    from envs.prompts.viper import HEADER

    scene = render(Scene([Obj("square", "green", "large", 180, 60), Obj("triangle", "red", "small", 60, 60),
                          Obj("circle", "red", "large", 60, 190), Obj("square", "yellow", "large", 200, 190)]))
    suites = [parse_test(fn(*[f"assert {a}" for a in tests]), q, "example") for q, tests, _ in EXAMPLES]
    results = ex.run([HEADER + body for _, _, body in EXAMPLES], [scene] * len(EXAMPLES))
    assert [r.status for r in results] == ["ok"] * len(EXAMPLES), [r.error for r in results]
    checks = check_results(ex, suites, results, [scene] * len(EXAMPLES))
    assert all(c.all_passed for c in checks), [(q, c.tests) for (q, _, _), c in zip(EXAMPLES, checks)]


def test_vprl_eval_strategies_answer_with_the_first_conditioned_program(ex):
    from train.evaluate import evaluate_choices
    from train.strategies import answer_strategies, choose

    assert {"proptest", "proptest_no_fallback", "tests_not_run"} <= set(answer_strategies())
    q = "Is there a red circle?"
    rows = [{"question": q, "image": RED_CIRCLE, "answer": "yes"}] * 2
    suite = parse_test(template_test(q), q, "template")
    progs = [[program("return 'red'"), program("return 'yes'")], [program("return 'no'")]]
    c = choose("proptest", rows, progs, ex, property_suites=[suite] * 2)
    assert [x.failure for x in c] == ["assertion", None] and [x.refused for x in c] == [True, False]
    assert c[0].result.answer == "yes" and c[1].result.answer == "no" and c[1].score == 1.0
    m = evaluate_choices(c, rows, ex, "gqa_accuracy", 0)
    assert m["accuracy"] == 0.5 and m["refusal_rate"] == 0.5 and m["errors"] == {"assertion": 1, "runtime": 0,
                                                                                  "compile": 0}
    with pytest.raises(ValueError, match="policy sampler"):
        choose("proptest", rows, [[], []], ex)


def test_with_the_policy_the_strategy_writes_each_program_with_its_tests(ex, tmp_path):
    """The policy sampler is scripted (the eval's ProgramSampler interface); the real model
    runs in tests/integration/test_proptest.py."""
    from envs.prompts import get_family
    from train.strategies import choose

    class ScriptedPolicy:
        prompt_family, tokenizer = get_family("proptest"), None

        def __init__(self):
            self.prompts = []

        def sample(self, prompts, n, desc="programs"):
            self.prompts += prompts
            return [[program("return 'purple'")] for _ in prompts]

    rows = [{"question": "Is the triangle orange or purple?", "image": RED_CIRCLE, "answer": "purple"}]
    policy = ScriptedPolicy()
    (c,) = choose("proptest", rows, [[]], ex, policy=policy, tests="template", cache=str(tmp_path))
    assert "# Query: Is the triangle orange or purple?\n# Assertion tests:\n# Test case 1:\n" \
           "# assert result in ['orange', 'purple']\n" in policy.prompts[0]
    assert c.failure is None and not c.refused and c.result.answer == "purple" and c.score == 1.0
    policy.prompt_family = get_family("viper_compact")
    with pytest.raises(ValueError, match="test-conditioned"):
        choose("proptest", rows, [[]], ex, policy=policy)
