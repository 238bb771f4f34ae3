"""Issue 17's hostile corpus (tests/hostile_corpus.py), run as training runs programs:
one batch through the warm pool, each hostile program followed by the probe. Every
program must be contained (no escape it can observe) and every probe must print what
the probe prints on a fresh sandbox. A test per case, from one batch per executor.

The programs that loop until their time limit run in tests/integration (they cost
the limit each); everything else is here.
"""
import os

import pytest

from envs.execution import Executor
from tests.containment import breaches, leaky_executor, run_with_probes
from tests.hostile_corpus import CORPUS, escaped, reward_hacks

SLOW = {"keeps asking for tools past the deadline", "slow __str__ of the answer",
        "slow __str__ of the exception", "the right answer printed, then the clock run out"}
# The reward hacks run here as hostile programs (contained, the probe unchanged); what
# they score is tests/integration/test_reward_hacking.py's.
PLAIN = [c for c in CORPUS + reward_hacks("yes", "no") if not c.leaky and c.name not in SLOW]
LEAKY = [c for c in CORPUS if c.leaky]


@pytest.fixture(scope="module")
def plain_outcomes():
    # Generous limit: a loaded 2-core machine; nothing here runs to it.
    with Executor(timeout_s=20.0, workers=1) as ex:
        fresh, outcomes = run_with_probes(ex, PLAIN)
        return fresh, {case.name: (result, probe) for case, result, probe in outcomes}


@pytest.fixture(scope="module")
def leaky_outcomes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("leaky")
    with leaky_executor(tmp, timeout_s=20.0) as ex:
        fresh, outcomes = run_with_probes(ex, LEAKY)
        layers = ex.sandbox_layers
    return fresh, {case.name: (result, probe) for case, result, probe in outcomes}, tmp, layers


def _contained(fresh, result, probe):
    assert not escaped(result), result
    assert fresh.status == "ok" and fresh.stdout.count("\n") >= 10, fresh
    assert (probe.status, probe.stdout) == (fresh.status, fresh.stdout), \
        f"the probe after it saw a different sandbox:\n{probe.stdout}\nfresh:\n{fresh.stdout}"


@pytest.mark.parametrize("name", [c.name for c in PLAIN])
def test_a_hostile_program_is_contained_and_leaves_nothing_behind(plain_outcomes, name):
    fresh, outcomes = plain_outcomes
    _contained(fresh, *outcomes[name])


@pytest.mark.parametrize("name", [c.name for c in LEAKY])
def test_protocol_and_kernel_layers_hold_after_an_escape(leaky_outcomes, name):
    fresh, outcomes, tmp, layers = leaky_outcomes
    result, probe = outcomes[name]
    _contained(fresh, result, probe)
    if name.startswith("syscall ") and "seccomp" in layers:
        assert result.status == "ok" and result.answer.startswith("refused"), result
    if name in ("forged reply for this request", "garbage bytes", "deeply nested reply",
                "huge number in a reply", "oversized reply", "two replies",
                "a reply of another kind"):
        assert result.status == "protocol_error", result
    assert oct(os.stat(tmp / "target.txt").st_mode & 0o777) == "0o644"


def test_the_corpus_covers_every_class_of_the_issue():
    assert {c.cls for c in CORPUS} == {"guards", "raw-memory", "state", "protocol", "parent",
                                       "kernel"}
    assert len(CORPUS) >= 50
    assert len(reward_hacks("yes", "no")) >= 15


def test_breaches_are_reported(plain_outcomes):
    """The check itself can fail: a probe that differs is a breach."""
    fresh, outcomes = plain_outcomes
    case = PLAIN[0]
    result, probe = outcomes[case.name]
    altered = type(probe)(**{**probe.to_dict(), "stdout": probe.stdout + "x"})
    assert breaches(fresh, [(case, result, altered)])
