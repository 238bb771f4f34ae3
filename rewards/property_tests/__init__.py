"""PropTest property tests: write (`template` rules or an LLM), check statically, run
per assert in the sandbox on a program's answer, and score.

The `proptest` reward lives in `rewards.property_tests.reward`; the answering
strategies (`proptest`, `proptest_no_fallback`, `tests_not_run`) in
`train.strategies.proptest`;
test quality against ground-truth answers in `rewards.property_tests.quality`.
"""

from rewards.property_tests.harness import check_answers, check_results
from rewards.property_tests.normalize import normalize_answer
from rewards.property_tests.static import parse_test
from rewards.property_tests.suite import PropertyConfig, PropertySuiteBuilder
from rewards.property_tests.template import template_test
from rewards.property_tests.types import CheckResult, PropertySuite

__all__ = ["CheckResult", "PropertyConfig", "PropertySuite", "PropertySuiteBuilder", "check_answers",
           "check_results", "normalize_answer", "parse_test", "template_test"]
