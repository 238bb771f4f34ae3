"""ViUniT visual unit tests: generate (ψ), sample (σ), synthesise (M), score (h, H).

The `viunit` reward lives in `rewards.unit_tests.reward`; best-program selection,
answer refusal and re-prompting are answering strategies (`train.strategies`).
"""

from rewards.unit_tests.coverage import coverage_sample
from rewards.unit_tests.parse import candidates_from_replies, parse_tests
from rewards.unit_tests.scoring import aggregate, unit_score, viunit_reward
from rewards.unit_tests.types import UnitTest

__all__ = ["UnitTest", "aggregate", "candidates_from_replies", "coverage_sample", "parse_tests",
           "unit_score", "viunit_reward"]
