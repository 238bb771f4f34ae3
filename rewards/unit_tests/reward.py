"""The `viunit` reward: R = 1 if S(p) >= θ else S(p) (ViUniT Eq. 10).

Label-free with LLM-written tests (`test_source: llm`, the paper's setting). With
`test_source: scene` the tests are computed from the question's `spec` column, its
ground-truth meaning: an oracle, and `label_columns` says so.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, fields
from pathlib import Path

from policies.programs import program_from
from rewards.execution import executor_or_shared
from rewards.registry import Reward
from rewards.unit_tests.scoring import (TEST_SCORE_AGGREGATORS, THETA, run_on_suites, suite_score, unit_score,
                                        viunit_reward)
from rewards.unit_tests.suite import SuiteBuilder, SuiteConfig, source_of

SCORING_OPTIONS = ("theta", "eps_runtime", "eps_compile", "aggregator")  # defaults: __call__'s signature
SUITE_OPTIONS = tuple(f.name for f in fields(SuiteConfig))
KEPT_BATCHES = 64  # batches remembered for the table between two table_rows() calls


class ViUnitReward(Reward):
    """Visual unit-test reward. Options (reward kwargs): the SuiteConfig fields
    (test_source, k, candidates, strategy, criterion, synthesis, ...) and theta,
    eps_runtime, eps_compile, aggregator. Other keyword arguments are dataset columns.

    Each instance (one per RewardSet, or per `rewards.get("viunit")`) keeps its own suite
    builders (suites, the LLM and the embedder load once and serve every call) and the
    batches it scored since its table was last read.
    """

    name = "viunit"
    uses_labels = False  # with the default LLM test source; see label_columns

    def __init__(self):
        super().__init__()
        self._builders: dict[tuple, SuiteBuilder] = {}
        self._batches: deque = deque(maxlen=KEPT_BATCHES)

    def check_kwargs(self, kwargs: dict) -> None:
        """Start-up check of a config's `rewards: - name: viunit, kwargs: {...}`."""
        scoring = {k: v for k, v in kwargs.items() if k in SCORING_OPTIONS}
        suite = {k: v for k, v in kwargs.items() if k not in SCORING_OPTIONS}
        if SuiteConfig.from_kwargs(suite).with_program:
            raise ValueError("viunit: with_program needs a suite per program, which the reward does not build; "
                             "use the query-only test source (the paper's better setting, section 5) or "
                             "LLMTestSource(with_program=True) directly")
        if scoring.get("aggregator", "mean") not in TEST_SCORE_AGGREGATORS:
            raise ValueError(f"viunit: unknown aggregator {scoring['aggregator']!r}; "
                             f"choose one of {', '.join(TEST_SCORE_AGGREGATORS)}")

    def label_columns(self, kwargs: dict) -> tuple[str, ...]:
        """The scene test source computes its tests from `spec`: an oracle. The LLM's need nothing."""
        return ("spec",) if source_of(kwargs) == "scene" else ()

    def builder(self, suite_kwargs: dict, run_dir=None) -> SuiteBuilder:
        """One builder per (settings, run folder)."""
        cfg = SuiteConfig.from_kwargs(suite_kwargs)
        cache = Path(run_dir) / "unit_tests" if run_dir else None
        key = (tuple(sorted(asdict(cfg).items())), str(cache))
        if key not in self._builders:
            self._builders[key] = SuiteBuilder(cfg, cache_dir=cache)
        return self._builders[key]

    def __call__(self, prompts, completions, question=None, spec=None, run_dir=None, executor=None, theta=THETA,
                 eps_runtime=0.1, eps_compile=0.1, aggregator="mean", **kwargs):
        """`executor` is the caller's (the reward context); TRL hands none, so the
        process-wide one is used."""
        if question is None:
            return [None] * len(completions)
        executor = executor_or_shared(executor)
        suite_kwargs = {k: v for k, v in kwargs.items() if k in SUITE_OPTIONS}
        builder = self.builder(suite_kwargs, run_dir)
        # Only the scene test source (an oracle) may see the question's meaning; the LLM
        # source's suites are not even keyed by it, so the reward stays label-free.
        oracle = bool(self.label_columns(suite_kwargs))
        rows = [{"question": q, "spec": spec[i] if spec is not None and oracle else None} for i, q in enumerate(question)]
        suites = builder.build(rows)
        programs = [program_from(p, c) for p, c in zip(prompts, completions)]
        results = run_on_suites(executor, programs, suites)
        scores = [suite_score(r, s, eps_runtime, eps_compile, aggregator) for r, s in zip(results, suites)]
        self._batches.append(list(zip(programs, suites, results, scores)))
        return [viunit_reward(s, theta) if len(suite) else None for s, suite in zip(scores, suites)]

    def table_rows(self, max_suites: int = 4, max_programs: int = 4) -> list[dict]:
        """The batches scored since the last call, as table rows: each test image with its
        caption and expected answer, and what each program answered on it."""
        rows, shown = [], {}
        for program, suite, results, score in (item for batch in self._batches for item in batch):
            seen = shown.setdefault(suite.question, 0)
            if seen >= max_programs or (seen == 0 and len(shown) > max_suites):
                continue
            shown[suite.question] += 1
            for i, (test, image, result) in enumerate(zip(suite.tests, suite.images, results)):
                rows.append({"question": suite.question, "program_index": seen, "test": i, "image": image,
                             "caption": test.caption, "expected": test.answer,
                             "actual": result.answer if result.status == "ok" else f"[{result.status}]",
                             "passed": unit_score(result, test.answer) == 1.0, "program_score": score,
                             "program": program})
        self._batches.clear()
        return rows

    def metrics(self) -> dict:
        """Running totals of this reward's suite builders: suites built and reused,
        candidates seen, and captions dropped for want of an image."""
        totals: dict = {}
        for b in self._builders.values():
            for k, v in b.stats.items():
                totals[k] = totals.get(k, 0) + v
        return totals
