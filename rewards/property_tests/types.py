"""What a property-test suite is made of (PropTest §3).

A test source writes `def execute_test(image)`: it calls the program as
`solve_query(image)`, then at most four `# Test case n:` asserts check properties of
the answer (its form, its allowed values, world knowledge through `llm_query`). The
static checks turn that text into a suite: the setup statements and the asserts kept,
the asserts dropped with their reason, or the whole test marked `test_invalid`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

MAX_TESTS = 4
# Per-test outcomes, and the outcomes of a program's check as a whole.
TEST_STATUSES = ("pass", "fail", "error")
CHECK_STATUSES = ("ok", "not_run", "test_invalid")


@dataclass
class Step:
    """One top-level statement of `execute_test`: a `test` (an assert, or a block that
    holds asserts) or `setup` (an assignment the asserts read)."""

    kind: str        # "test" | "setup"
    source: str      # the statement, as Python source
    comment: str = ""  # the "# Test case n:" line above a test, if any


@dataclass
class PropertySuite:
    question: str
    test_source: str
    text: str = ""                       # execute_test as generated
    steps: list[Step] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)   # {"source", "reason"}
    invalid: str | None = None           # why the test is test_invalid (does not compile, ...)
    result_names: list[str] = field(default_factory=lambda: ["result"])

    @property
    def tests(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "test"]

    def __len__(self) -> int:
        return len(self.tests)

    def shown(self) -> str:
        """What the code writer sees: only the comment and assert lines (as the release),
        without the asserts' messages."""
        import ast

        lines = []
        for i, t in enumerate(self.tests, 1):
            node = ast.parse(t.source).body[0]
            lines.append(f"# Test case {i}:")
            lines.append(f"assert {ast.unparse(node.test)}" if isinstance(node, ast.Assert) else t.source)
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "PropertySuite":
        data = dict(data)
        if "generator" in data:  # written before the rename
            data["test_source"] = data.pop("generator")
        data["steps"] = [Step(**s) for s in data.get("steps", [])]
        return cls(**data)


@dataclass
class CheckResult:
    """A program's answer checked against one suite.

    status: ok (tests ran; see `tests`), not_run (the program failed or gave no answer:
    nothing to test), test_invalid (the suite's test does not compile).
    tests: one of pass | fail | error per kept test, in order.
    """

    status: str
    tests: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def passed(self) -> int:
        return self.tests.count("pass")

    @property
    def all_passed(self) -> bool:
        return self.status == "ok" and all(t == "pass" for t in self.tests)

    @property
    def failed(self) -> bool:
        """The PropTest trigger: a failed or erroring assertion."""
        return self.status == "ok" and any(t != "pass" for t in self.tests)


COMPILE_STATUSES = frozenset({"compile_error", "forbidden"})


def failure_kind(result, check: CheckResult | None = None) -> str | None:
    """PropTest Table 1's categories of a program's outcome: compile (syntax, or refused
    by the sandbox), runtime (exceptions, time and memory limits, no answer), assertion
    (a property test failed or erred); None when it answered and passed."""
    if result.status in COMPILE_STATUSES:
        return "compile"
    if result.status != "ok" or result.answer is None:
        return "runtime"
    if check is not None and check.failed:
        return "assertion"
    return None
