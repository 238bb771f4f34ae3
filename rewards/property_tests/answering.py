"""Answering with property tests (PropTest §2 and Table 2's ablations).

For each question the first test-conditioned program runs on the image; its answer is
checked against the question's suite; then, by strategy:

- `proptest`: any failure -- a compile or runtime error in the program, a failed or
  erroring assert -- sends the question to the end-to-end fallback (`simple_query` on
  the whole image, or `ImageObject.answer` for tool_api); the program's answer is
  never returned after a failure;
- `proptest_no_fallback`: the same checks, no fallback: a failed test leaves the
  question unanswered (status `assertion_error`), a program error stays an error;
- `tests_not_run`: the conditioned program with the usual fallback on compile and
  runtime errors, tests not run.

`failure` records why (assertion | runtime | compile), the error breakdown of Table 1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rewards.property_tests.harness import check_results
from rewards.property_tests.types import CheckResult

STRATEGIES = ("proptest", "proptest_no_fallback", "tests_not_run")
COMPILE = frozenset({"compile_error", "forbidden"})


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


def failure_kind(result, check: CheckResult | None) -> str | None:
    """Table 1's categories: compile (syntax, or refused by the sandbox), runtime
    (exceptions, time and memory limits, no answer), assertion (a property failed)."""
    if result.status in COMPILE:
        return "compile"
    if result.status != "ok" or result.answer is None:
        return "runtime"
    if check is not None and check.failed:
        return "assertion"
    return None


def answer_with_tests(strategy: str, rows: list[dict], programs: list[str], executor, suites=None,
                      tests_executor=None, family: str = "viper_compact") -> list[TestedAnswer]:
    """One TestedAnswer per row; `programs[i]` is row i's (test-conditioned) program."""
    from policies.programs import fallback_program

    if strategy not in STRATEGIES:
        raise ValueError(f"unknown property-test strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if strategy != "tests_not_run" and suites is None:
        raise ValueError(f"strategy {strategy!r} needs property-test suites")
    images = [r["image"] for r in rows]
    results = executor.run(programs, images)
    checks = (check_results(tests_executor or executor, suites, results, images)
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
