"""The `proptest` reward: the share of a question's property tests the program's answer
passes (PropTest as a training signal). Uses no labels: it reads the question and the
image only, never `answer`, `answers`, `spec` or `scene`.

Modes (reward kwarg `mode`):
- `fraction` (default): passed / tests, so a program gets partial credit; a test that
  errs on the answer counts as not passed (PropTest sends it to the fallback too);
- `all`: 1 only when every test passes;
- `gate`: another reward (`reward`, with `reward_kwargs`) multiplied by "every test
  passes". Gating a label-reading reward (e.g. correctness) reads labels: the label
  is then that reward's, not this one's.

A program that does not run to an answer scores 0; a question whose test is
`test_invalid` or keeps no test gives no evidence (None: "does not apply").
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import asdict, fields
from pathlib import Path

from policies.programs import program_from
from rewards.combine import named_parameters
from rewards.execution import executor_or_shared, program_results
from rewards.property_tests.harness import check_results, tests_executor
from rewards.property_tests.suite import PropertyConfig, PropertySuiteBuilder
from rewards.registry import Reward

MODES = ("fraction", "all", "gate")
OWN_OPTIONS = ("mode", "reward", "reward_kwargs")
CONFIG_OPTIONS = tuple(f.name for f in fields(PropertyConfig))
KEPT_BATCHES = 64  # batches remembered for the table between two table_rows() calls


def score(check, mode: str) -> float | None:
    """One program's value from its CheckResult (`fraction` or `all`; `gate` uses `all`)."""
    if check.status == "not_run":
        return 0.0
    if check.status == "test_invalid" or not check.tests:
        return None
    if mode == "fraction":
        return check.passed / len(check.tests)
    return 1.0 if check.all_passed else 0.0


class PropTestReward(Reward):
    """Property-test reward. Options (reward kwargs): mode, reward, reward_kwargs and the
    PropertyConfig fields (test_source, llm_model, max_new_tokens, seed). Other keyword
    arguments are dataset columns; only `question` and `image` are read.

    Each instance keeps its suite builders (suites and the test-writing LLM load once),
    running totals for `metrics()` and the batches scored since its table was read.
    """

    name = "proptest"
    uses_labels = False

    def __init__(self):
        super().__init__()
        self._builders: dict[tuple, PropertySuiteBuilder] = {}
        self._batches: deque = deque(maxlen=KEPT_BATCHES)
        self._totals: Counter = Counter()
        self._gated = {}

    def check_kwargs(self, kwargs: dict) -> None:
        """Start-up check of `rewards: - name: proptest, kwargs: {...}`."""
        PropertyConfig.from_kwargs({k: v for k, v in kwargs.items() if k not in OWN_OPTIONS})
        mode = kwargs.get("mode", "fraction")
        if mode not in MODES:
            raise ValueError(f"proptest: unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if mode == "gate":
            if not kwargs.get("reward"):
                raise ValueError("proptest: mode 'gate' needs `reward`, the reward to multiply (e.g. executes)")
            if kwargs["reward"] == "proptest":
                raise ValueError("proptest: a gate cannot multiply proptest itself")
            self._other(kwargs["reward"])  # unknown names fail here, with the list of known ones
        elif kwargs.get("reward"):
            raise ValueError("proptest: `reward` is only read by mode 'gate'")

    def _other(self, name: str):
        from rewards.registry import get

        if name not in self._gated:
            self._gated[name] = get(name)
        return self._gated[name]

    def builder(self, cfg_kwargs: dict, run_dir=None) -> PropertySuiteBuilder:
        """One builder per (settings, run folder)."""
        cfg = PropertyConfig.from_kwargs(cfg_kwargs)
        cache = Path(run_dir) / "property_tests" if run_dir else None
        key = (tuple(sorted(asdict(cfg).items())), str(cache))
        if key not in self._builders:
            self._builders[key] = PropertySuiteBuilder(cfg, cache_dir=cache)
        return self._builders[key]

    def __call__(self, prompts, completions, question=None, image=None, run_dir=None, executor=None,
                 results=None, mode="fraction", reward=None, reward_kwargs=None, **columns):
        """`executor` and `results` are the caller's (the reward context); TRL hands
        neither, so the programs run here, on the process-wide executor. Their answers
        are then checked, on that executor unless the tests need `llm_query`."""
        if question is None or image is None:
            return [None] * len(completions)
        executor = executor_or_shared(executor)
        builder = self.builder({k: v for k, v in columns.items() if k in CONFIG_OPTIONS}, run_dir)
        suites = builder.build(list(question))
        programs = [program_from(p, c) for p, c in zip(prompts, completions)]
        images = list(image)
        results = program_results(prompts, completions, images, executor, results)
        checker = tests_executor(executor, builder.cfg.uses_llm, builder.cfg.llm_model)
        checks = check_results(checker, suites, results, images)
        values = [score(c, "all" if mode == "gate" else mode) for c in checks]
        if mode == "gate":
            rest = {k: v for k, v in columns.items() if k not in CONFIG_OPTIONS}
            other_fn = self._other(reward)
            # The gated reward reads the same results, if it takes them (a TRL-style one runs its own).
            given = {"results": results} if "results" in named_parameters(other_fn) else {}
            other = list(other_fn(prompts, completions, question=question, image=image, run_dir=run_dir,
                                  executor=executor, **given, **rest, **(reward_kwargs or {})))
            values = [None if o is None else (o if v is None else v * o) for v, o in zip(values, other)]
        for c in checks:
            self._totals[c.status] += 1
            self._totals.update(f"test_{t}" for t in c.tests)
        self._batches.append(list(zip(programs, suites, results, checks, values)))
        return values

    def metrics(self) -> dict:
        """Running totals: suites written/reused, tests kept/dropped, test_invalid questions,
        and every check's outcome (programs not run, tests passed/failed/errored)."""
        totals: dict = dict(self._totals)
        for b in self._builders.values():
            for k, v in b.stats.items():
                totals[k] = totals.get(k, 0) + v
        ran = sum(self._totals[f"test_{t}"] for t in ("pass", "fail", "error"))
        if ran:
            totals["test_pass_rate"] = self._totals["test_pass"] / ran
        return totals

    def table_rows(self, max_rows: int = 64) -> list[dict]:
        """The batches scored since the last call: each question's tests with a program's
        answer and the outcome of each test."""
        rows = []
        while self._batches:
            for program, suite, result, check, value in self._batches.popleft():
                if len(rows) < max_rows:
                    rows.append({"question": suite.question, "test_source": suite.test_source, "tests": suite.shown(),
                                 "dropped": "; ".join(f"{d['source']} ({d['reason']})" for d in suite.dropped),
                                 "invalid": suite.invalid or "",
                                 "answer": result.answer if result.ok else f"[{result.status}]",
                                 "outcome": check.status if check.status != "ok" else " ".join(check.tests),
                                 "reward": value, "program": program})
        return rows
