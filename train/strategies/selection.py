"""The uses of a suite at inference (ViUniT §3.4): best-program selection, answer
refusal, and re-prompting with unit-test (or error) feedback. Votes (the `vote` tie
break) count answers in `rewards.metrics.answer_key` form, as every vote does."""

from __future__ import annotations

import random

from envs.prompts import error_text
from envs.selfplay.aggregate import majority_index
from rewards.unit_tests.prompts import REPROMPT_INSTRUCTIONS, test_cases_text
from rewards.unit_tests.scoring import THETA

TIE_BREAKS = ("random", "vote")


def select_best(scores: list[float], answers: list | None = None, tie_break: str = "random",
                rng: random.Random | None = None) -> int:
    """argmax_p S(p) (Eq. 6). Ties: a random one, or by vote -- the tied program whose
    answer on the real image most tied programs share."""
    if not scores:
        raise ValueError("no programs to select from")
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"unknown tie break {tie_break!r}; choose one of {', '.join(TIE_BREAKS)}")
    best = max(scores)
    tied = [i for i, s in enumerate(scores) if s == best]
    if len(tied) == 1:
        return tied[0]
    if tie_break == "vote" and answers is not None:
        pick = majority_index([answers[i] for i in tied])
        if pick is not None:
            return tied[pick]
    return (rng or random.Random(0)).choice(tied)


def refuses(score: float, theta: float = THETA) -> bool:
    """Answer refusal: no candidate passes enough of its tests to be trusted."""
    return score < theta


def output_text(result) -> str:
    """What Listing 4 shows as a test's "Program Output"."""
    if result.status == "ok":
        return str(result.answer)
    return error_text(result).splitlines()[0]


def unit_test_feedback(suite, results) -> str:
    """ℱ of Eq. 7 in Listing 4's layout: the instructions, then each test's caption,
    expected answer and the program's output."""
    return f"{REPROMPT_INSTRUCTIONS}\n{test_cases_text(suite.tests, [output_text(r) for r in results])}"


def error_feedback(result) -> str:
    """The error re-prompting baseline's ℱ (Listing 10): the error on the real image."""
    return f"{REPROMPT_INSTRUCTIONS}\n{output_text(result)}"
