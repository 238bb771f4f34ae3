"""Scoring programs on a suite: h (Eq. 5), the aggregator H, and R_ViUnit (Eq. 10)."""

from __future__ import annotations

from collections import Counter

from rewards.metrics import gqa_accuracy

TEST_SCORE_AGGREGATORS = ("mean", "max", "mode")
COMPILE_STATUSES = frozenset({"compile_error", "forbidden"})
THETA = 0.8  # θ, the passing threshold: the one default (reward, weighting, selection, vprl eval)


def same_answer(predicted, expected) -> bool:
    """≡ of Eq. 5: the GQA answer normalisation (case, articles, number words, punctuation)."""
    return predicted is not None and gqa_accuracy(str(predicted), str(expected)) == 1.0


def unit_score(result, expected: str, eps_runtime: float = 0.1, eps_compile: float = 0.1) -> float:
    """h(ŷ, y): -ε_c for a program that does not compile (or is refused by the sandbox's
    static policy, which is the same "never ran" outcome), -ε_r for any failure while
    running (exception, timeout, memory), else 1 if the answer matches."""
    if result.status in COMPILE_STATUSES:
        return -eps_compile
    if result.status != "ok":
        return -eps_runtime
    return 1.0 if same_answer(result.answer, expected) else 0.0


def aggregate(scores: list[float], how: str = "mean") -> float:
    """H over one program's test scores; an empty suite gives no evidence (0)."""
    if how not in TEST_SCORE_AGGREGATORS:
        raise ValueError(f"unknown aggregator {how!r}; choose one of {', '.join(TEST_SCORE_AGGREGATORS)}")
    if not scores:
        return 0.0
    if how == "mean":
        return sum(scores) / len(scores)
    if how == "max":
        return max(scores)
    counts = Counter(scores)
    top = max(counts.values())
    # Several modes: the highest, so a tie between passing and failing reads as passing.
    return max(s for s, c in counts.items() if c == top)


def viunit_reward(score: float, theta: float = THETA) -> float:
    """Eq. 10: full reward at or above the passing threshold, the score itself below
    (the viunit reward and the trainer's `weighting.transform: threshold` both use it)."""
    return 1.0 if score >= theta else score


def run_on_suites(executor, programs: list[str], suites: list, progress: bool = False) -> list[list]:
    """Execute program i on every image of suites[i], all in one sandbox batch; the
    executor's (program, image) cache makes repeated programs and suites free."""
    flat_programs = [p for p, s in zip(programs, suites) for _ in s.images]
    flat_images = [im for s in suites for im in s.images]
    flat = iter(executor.run(flat_programs, flat_images, progress=progress) if flat_programs else [])
    return [[next(flat) for _ in s.images] for s in suites]


def suite_score(results: list, suite, eps_runtime: float = 0.1, eps_compile: float = 0.1,
                aggregator: str = "mean") -> float:
    """S(p) = H({h(ŷ_i, y_i)}) for one program's results on one suite."""
    return aggregate([unit_score(r, t.answer, eps_runtime, eps_compile) for r, t in zip(results, suite.tests)],
                     aggregator)
