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

from collections import Counter
from dataclasses import asdict, fields
from pathlib import Path

from policies.programs import program_from
from rewards.property_tests.harness import check_results, tests_executor
from rewards.property_tests.suite import PropertyConfig, PropertySuiteBuilder

MODES = ("fraction", "all", "gate")
_BUILDERS: dict[tuple, PropertySuiteBuilder] = {}
_TOTALS: Counter = Counter()


def check_kwargs(kwargs: dict) -> None:
    """Start-up check of `rewards: - name: proptest, kwargs: {...}`."""
    suite = {k: v for k, v in kwargs.items() if k not in ("mode", "reward", "reward_kwargs")}
    PropertyConfig.from_kwargs(suite)
    mode = kwargs.get("mode", "fraction")
    if mode not in MODES:
        raise ValueError(f"proptest: unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if mode == "gate":
        if not kwargs.get("reward"):
            raise ValueError("proptest: mode 'gate' needs `reward`, the reward to multiply (e.g. executes)")
        from rewards.registry import get

        get(kwargs["reward"])  # unknown names fail here, with the list of known ones
        if kwargs["reward"] == "proptest":
            raise ValueError("proptest: a gate cannot multiply proptest itself")
    elif kwargs.get("reward"):
        raise ValueError("proptest: `reward` is only read by mode 'gate'")


def builder_for(cfg_kwargs: dict, run_dir=None) -> PropertySuiteBuilder:
    """One builder per (settings, run folder) per process: suites and the test-writing
    LLM load once and serve every call."""
    cfg = PropertyConfig.from_kwargs(cfg_kwargs)
    cache = Path(run_dir) / "property_tests" if run_dir else None
    key = (tuple(sorted(asdict(cfg).items())), str(cache))
    if key not in _BUILDERS:
        _BUILDERS[key] = PropertySuiteBuilder(cfg, cache_dir=cache)
    return _BUILDERS[key]


def score(check, mode: str) -> float | None:
    """One program's value from its CheckResult (modes `fraction` and `all`; `gate` uses
    `all`)."""
    if check.status == "not_run":
        return 0.0
    if check.status == "test_invalid" or not check.tests:
        return None
    if mode == "fraction":
        return check.passed / len(check.tests)
    return 1.0 if check.all_passed else 0.0


def proptest(prompts, completions, question=None, image=None, run_dir=None, mode="fraction", reward=None,
             reward_kwargs=None, **columns):
    """Property-test reward. Options (reward kwargs): mode, reward, reward_kwargs and the
    PropertyConfig fields (generator, llm_model, max_new_tokens, seed). Other keyword
    arguments are dataset columns; only `question` and `image` are read."""
    from envs.execution import shared_executor

    if question is None or image is None:
        return [None] * len(completions)
    names = {f.name for f in fields(PropertyConfig)}
    cfg_kwargs = {k: v for k, v in columns.items() if k in names}
    builder = builder_for(cfg_kwargs, run_dir)
    suites = builder.build(list(question))
    programs = [program_from(p, c) for p, c in zip(prompts, completions)]
    images = list(image)
    # The program runs once, on the executor every reward shares (a cache read in training).
    results = shared_executor().run(programs, images)
    checks = check_results(tests_executor(builder.cfg.uses_llm, builder.cfg.llm_model), suites, results, images)
    values = [score(c, "all" if mode == "gate" else mode) for c in checks]
    if mode == "gate":
        from rewards.registry import get

        other = list(get(reward)(prompts, completions, question=question, image=image, run_dir=run_dir,
                                 **{k: v for k, v in columns.items() if k not in names}, **(reward_kwargs or {})))
        values = [None if o is None else (o if v is None else v * o) for v, o in zip(values, other)]
    for c in checks:
        _TOTALS[c.status] += 1
        _TOTALS.update(f"test_{t}" for t in c.tests)
    proptest.last = {"programs": programs, "suites": suites, "results": results, "checks": checks,
                     "values": values}
    return values


proptest.check_kwargs = check_kwargs
proptest.uses_labels = False  # reads question and image only (see the module docstring)
proptest.last = None


def metrics() -> dict:
    """Running totals: suites written/reused, tests kept/dropped, test_invalid questions,
    and the outcomes of every check (programs not run, tests passed/failed/errored)."""
    totals: dict = dict(_TOTALS)
    for b in _BUILDERS.values():
        for k, v in b.stats.items():
            totals[k] = totals.get(k, 0) + v
    ran = sum(_TOTALS[f"test_{t}"] for t in ("pass", "fail", "error"))
    if ran:
        totals["test_pass_rate"] = _TOTALS["test_pass"] / ran
    return totals


def table_rows(max_rows: int = 16) -> list[dict]:
    """The last batch: each question's tests with one program's answer and outcome."""
    last = proptest.last
    if not last:
        return []
    rows = []
    for program, suite, result, check, value in zip(last["programs"], last["suites"], last["results"],
                                                    last["checks"], last["values"]):
        rows.append({"question": suite.question, "generator": suite.generator, "tests": suite.shown(),
                     "dropped": "; ".join(f"{d['source']} ({d['reason']})" for d in suite.dropped),
                     "invalid": suite.invalid or "", "answer": result.answer if result.ok else f"[{result.status}]",
                     "outcome": check.status if check.status != "ok" else " ".join(check.tests),
                     "reward": value, "program": program})
        if len(rows) >= max_rows:
            break
    return rows


proptest.metrics = metrics
proptest.table_rows = table_rows
