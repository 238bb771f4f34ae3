"""Running a suite on answers in the sandbox: one run per (suite, answer, image), each
assert separately, so a program gets partial credit.

The program itself runs once, through the executor like every reward (so its result is
the one the other rewards read from the cache); the tests then run on its *answer*: the
harness defines `solve_query(image)` to return that answer. Tests never share a process
with the program, so a hostile program cannot fake passing tests, and programs that
give the same answer on the same image share one test run (the executor's memo).

Inside the harness `llm_query(q, long_answer=False)` answers briefly and its reply is
normalised, and the operands of `==`, `!=`, `in`, `not in` are normalised
(`rewards.property_tests.normalize`), so "Yes." and "Yes, it is." both equal "yes".
"""

from __future__ import annotations

import ast
import functools
import inspect

from policies import DEFAULT_MODEL
from rewards.property_tests import normalize
from rewards.property_tests.types import CheckResult, PropertySuite, TEST_STATUSES

ENTRY = "execute_command"  # what the executor calls; the harness, not the program
_NORMALISED_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


class _NormaliseComparisons(ast.NodeTransformer):
    def visit_Compare(self, node):
        self.generic_visit(node)
        if not all(isinstance(op, _NORMALISED_OPS) for op in node.ops):
            return node

        def wrap(x):
            return ast.Call(ast.Name("normalize_value", ast.Load()), [x], [])

        return ast.copy_location(ast.Compare(wrap(node.left), node.ops, [wrap(c) for c in node.comparators]), node)


def normalised_source(source: str) -> str:
    """A statement with its equality and membership comparisons normalised."""
    tree = _NormaliseComparisons().visit(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree))


@functools.lru_cache(maxsize=1)
def _prelude() -> str:
    helpers = "\n\n".join(inspect.getsource(f) for f in (normalize.normalize_answer, normalize.normalize_value))
    return (
        "import re\n\n" + helpers + "\n\n"
        "vprl_llm_query = llm_query\n\n\n"
        "def llm_query(question, long_answer=False):\n"
        "    reply = vprl_llm_query(question, long_answer)\n"
        "    return reply if long_answer else normalize_answer(reply)\n"
    )


def _indent(source: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in source.splitlines())


@functools.lru_cache(maxsize=4096)
def _body(steps: tuple, result_names: tuple) -> str:
    lines = ["def execute_command(image):", "    vprl_outcomes = []", "    vprl_usable = True"]
    lines += [f"    {name} = solve_query(image)" for name in result_names]
    for kind, source in steps:
        stmt = _indent(normalised_source(source), 12)
        if kind == "setup":
            lines += ["    if vprl_usable:", "        try:", stmt,
                      "        except Exception:", "            vprl_usable = False"]
        else:
            lines += ["    if vprl_usable:", "        try:", stmt,
                      "            vprl_outcomes.append('pass')",
                      "        except AssertionError:", "            vprl_outcomes.append('fail')",
                      "        except Exception:", "            vprl_outcomes.append('error')",
                      "    else:", "        vprl_outcomes.append('error')"]
    lines.append("    return ' '.join(vprl_outcomes)")
    return "\n".join(lines) + "\n"


def harness_program(suite: PropertySuite, answer: str) -> str:
    """The sandbox program that checks `answer` against `suite`'s tests."""
    steps = tuple((s.kind, s.source) for s in suite.steps)
    return (f"{_prelude()}\n\ndef solve_query(image):\n    return {answer!r}\n\n\n"
            f"{_body(steps, tuple(suite.result_names))}")


def read_outcome(result, n_tests: int) -> CheckResult:
    """The harness's execution result as per-test statuses. A harness that did not run
    to the end (a test looping past the time limit, ...) errs on every test: it is the
    tests' fault, never the program's, which already ran."""
    words = (result.answer or "").split() if result.status == "ok" else []
    if len(words) != n_tests or any(w not in TEST_STATUSES for w in words):
        return CheckResult("ok", ["error"] * n_tests, result.error or "the test harness gave no outcome")
    return CheckResult("ok", words)


def check_answers(executor, suites: list[PropertySuite], answers: list, images: list,
                  progress: bool = False) -> list[CheckResult]:
    """Check answers[i] (a string, or None for a program that gave none) on suites[i]."""
    out: list[CheckResult | None] = [None] * len(suites)
    jobs = []
    for i, (suite, answer) in enumerate(zip(suites, answers)):
        if suite.invalid:
            out[i] = CheckResult("test_invalid", [], suite.invalid)
        elif answer is None:
            out[i] = CheckResult("not_run")
        elif not len(suite):
            out[i] = CheckResult("ok", [])
        else:
            jobs.append(i)
    if jobs:
        results = executor.run([harness_program(suites[i], answers[i]) for i in jobs], [images[i] for i in jobs],
                               entry=ENTRY, progress=progress)
        for i, r in zip(jobs, results):
            out[i] = read_outcome(r, len(suites[i]))
    return out  # type: ignore[return-value]


def check_results(executor, suites: list[PropertySuite], results: list, images: list,
                  progress: bool = False) -> list[CheckResult]:
    """Check programs' execution results: a program that failed (or returned nothing) is
    `not_run`, with its own status as the error."""
    answers = [r.answer if r.status == "ok" else None for r in results]
    checks = check_answers(executor, suites, answers, images, progress)
    for c, r in zip(checks, results):
        if c.status == "not_run":
            c.error = r.error or (r.status if r.status != "ok" else "the program returned no answer")
    return checks


_TEST_EXECUTORS: dict = {}


def tests_executor(executor, needs_llm: bool, llm_model: str = DEFAULT_MODEL):
    """The executor tests run on. Without `llm_query` it is `executor` (the programs' own,
    with their vision backend). Tests that call `llm_query` need a text LLM: when
    `executor` has no tool host, a local one serves `llm_query` (the vision tools still
    run in the workers), started once per process and (backend, model)."""
    from envs.execution import Executor

    backend = executor.config["backend"]
    if not needs_llm or backend.startswith("host:"):
        return executor
    key = (backend, llm_model)
    if key not in _TEST_EXECUTORS:
        import atexit

        from envs.tools.host import ToolHost

        host = ToolHost(backend, llm=llm_model, local=True).start()
        checker = Executor(timeout_s=executor.timeout_s, memory_mb=executor.config["memory_mb"],
                           workers=executor.workers, backend=host.spec)
        _TEST_EXECUTORS[key] = (host, checker)
        atexit.register(host.close)       # atexit runs last-in first: the workers close first
        atexit.register(checker.close)
    return _TEST_EXECUTORS[key][1]
