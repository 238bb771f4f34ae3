"""PropTest's answering strategies (§2 and Table 2's ablations).

For each question the first test-conditioned program runs on the image; its answer is
checked against the question's property suite; then, by strategy:

- `proptest`: any failure -- a compile or runtime error in the program, a failed or
  erroring assert -- sends the question to the end-to-end fallback (`simple_query` on
  the whole image, or `ImageObject.answer` for tool_api); the program's answer is
  never returned after a failure;
- `proptest_no_fallback`: the same checks, no fallback: a failed test leaves the
  question unanswered (status `assertion_error`), a program error stays an error;
- `tests_not_run`: the conditioned program with the usual fallback on compile and
  runtime errors, tests not run.

`Choice.failure` records why (assertion | runtime | compile): Table 1's breakdown.

Options (`choose(..., **options)`, set by `vprl eval`): `tests` (the writer: template |
basic | advanced | itm), `cache` (suite folder), or prebuilt `property_suites`. With the
policy sampler (`vprl eval`) the strategy writes each question's program itself, with
the query's tests in the prompt; without it, `programs[i][0]` must already be one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from policies.programs import fallback_program
from rewards.property_tests.harness import check_results, tests_executor
from rewards.property_tests.types import CheckResult, failure_kind
from train.strategies.registry import Choice, Inputs

STRATEGIES = ("proptest", "proptest_no_fallback", "tests_not_run")


@dataclass
class TestedAnswer:
    program: str              # what produced the answer (the fallback when it was taken)
    result: object            # ExecutionResult of that program on the question's image
    check: CheckResult | None  # the program's answer against the suite (None: tests not run)
    fallback: bool = False
    failure: str | None = None  # assertion | runtime | compile

    @property
    def score(self) -> float | None:
        if self.check is None or self.check.status != "ok" or not self.check.tests:
            return None
        return self.check.passed / len(self.check.tests)


def answer_with_tests(strategy: str, rows: list[dict], programs: list[str], executor, suites=None,
                      checker=None, family: str = "viper_compact") -> list[TestedAnswer]:
    """One TestedAnswer per row; `programs[i]` is row i's (test-conditioned) program.
    Programs and the fallback run on `executor`, the tests on `checker` (default: the same)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown property-test strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if strategy != "tests_not_run" and suites is None:
        raise ValueError(f"strategy {strategy!r} needs property-test suites")
    images = [r["image"] for r in rows]
    results = executor.run(programs, images)
    checks = (check_results(checker or executor, suites, results, images)
              if strategy != "tests_not_run" else [None] * len(rows))
    answers = []
    for program, result, check in zip(programs, results, checks):
        kind = failure_kind(result, check)
        if kind == "assertion" and strategy == "proptest_no_fallback":
            failed = [i + 1 for i, t in enumerate(check.tests) if t != "pass"]
            result = replace(result, status="assertion_error", answer=None,
                             error=f"Error: property test case {', '.join(map(str, failed))} failed")
        answers.append(TestedAnswer(program, result, check, failure=kind))
    if strategy != "proptest_no_fallback":
        todo = [i for i, a in enumerate(answers) if a.failure is not None]
        fallbacks = [fallback_program(rows[i]["question"], family) for i in todo]
        for i, p, r in zip(todo, fallbacks, executor.run(fallbacks, [images[i] for i in todo]) if todo else []):
            answers[i].program, answers[i].result, answers[i].fallback = p, r, True
    return answers


def property_suites(inputs: Inputs) -> list:
    """The rows' property suites: given (`property_suites`), or written by the `tests`
    writer and cached in `cache`."""
    given = inputs.options.get("property_suites")
    if given is not None:
        return given
    from rewards.property_tests.suite import PropertyConfig, PropertySuiteBuilder

    # Tests are written greedily: one suite per question whatever the evaluation's seed.
    cfg = PropertyConfig(test_source=inputs.options.get("tests", "template"))
    builder = PropertySuiteBuilder(cfg, cache_dir=inputs.options.get("cache"))
    return builder.build([r["question"] for r in inputs.rows], progress=inputs.policy is not None)


def conditioned_programs(inputs: Inputs, suites: list) -> list[str]:
    """Each row's program written with its query's tests in the prompt (the policy's
    test-conditioned family), or the first given program without a policy."""
    if inputs.policy is None:
        if not all(inputs.programs):
            raise ValueError("the property-test strategies need the policy sampler (policy=) or "
                             "test-conditioned programs")
        return [ps[0] for ps in inputs.programs]
    from envs.prompts.proptest import TestConditionedFamily

    family = inputs.policy.prompt_family
    if not isinstance(family, TestConditionedFamily):
        raise ValueError(f"the property-test strategies write programs conditioned on tests: the prompt family "
                         f"must be test-conditioned (proptest), not {family.name!r}")
    prompts = [family.render(inputs.policy.tokenizer, r["question"], tests=s.shown())
               for r, s in zip(inputs.rows, suites)]
    return [ps[0] for ps in inputs.policy.sample(prompts, 1, "programs (with tests)")]


def _choose(strategy: str, inputs: Inputs) -> list[Choice]:
    suites = property_suites(inputs)
    programs = conditioned_programs(inputs, suites)
    needs_llm = any(s.test_source not in ("template",) for s in suites)
    checker = tests_executor(inputs.executor, needs_llm)
    answers = answer_with_tests(strategy, inputs.rows, programs, inputs.executor, suites, checker,
                                inputs.prompt_family)
    return [Choice(i, a.program, a.result, a.score, a.fallback, failure=a.failure) for i, a in enumerate(answers)]


def proptest(inputs: Inputs) -> list[Choice]:
    return _choose("proptest", inputs)


def proptest_no_fallback(inputs: Inputs) -> list[Choice]:
    return _choose("proptest_no_fallback", inputs)


def tests_not_run(inputs: Inputs) -> list[Choice]:
    return _choose("tests_not_run", inputs)
