"""train/template_tests.py: a sampled program is also scored, by the run's own reward in the
real sandbox, on other training questions of its template, and trains on the mean; a yes/no
guess that was right by chance then scores below the program that answers the question."""

from dataclasses import replace

import pytest

from envs.prompts import get_family
from rewards.combine import RewardSet
from tests.helpers.comparisons import comparison_rows
from train.config import RewardSpec
from train.objectives import group_advantages
from train.rollout import Rollout
from train.search import PROBE_MIN
from train.template_tests import template_scored

FAMILY = get_family("viper_compact")
PREFIX = FAMILY.program_prefix
FAMILIES = {"viper_compact": FAMILY, "visprog": get_family("visprog")}
COMPARE = '\n    return bool_to_yesno(len(image_patch.find("{a}")) > len(image_patch.find("{b}")))\n'
GUESS = '\n    return bool_to_yesno(image_patch.exists("{a}"))\n'
YES = '\n    return "yes"\n'


def phrases(question: str) -> tuple[str, str]:
    words = question.rstrip("?").split()  # "Are there more red circles than blue squares"
    return " ".join(words[3:5]), " ".join(words[6:8])


def rollout(row, body, reward, family="viper_compact", searched=False):
    return Rollout(row, "", body, PREFIX + body, prompt_ids=[5], completion_ids=[7], finished=True, result=None,
                   reward=reward, prompt_family=family, searched=searched)


def scored(rollouts, rows, probe, executor, size=16):
    return template_scored(rollouts, rows, probe, size, FAMILIES, executor, RewardSet([RewardSpec("correctness")]),
                           "gqa_accuracy")


def test_a_right_guess_scores_below_the_comparison_and_a_constant_scores_its_share_of_the_tests(executor):
    rows = comparison_rows(6, seed=1)
    row = next(i for i, r in enumerate(rows) if r["answer"] == "yes")  # "yes": the constant and the guess may be right
    a, b = phrases(rows[row]["question"])
    probe = comparison_rows(3 * PROBE_MIN, seed=2) + [rows[row]]  # its own question is not one of its tests
    mine = [rollout(row, COMPARE.format(a=a, b=b), 1.0), rollout(row, GUESS.format(a=a), 1.0),
            rollout(row, YES, 1.0)]
    out, stats = scored(mine, rows, probe, executor)
    tests = probe[:16]
    yes_share = (1 + sum(r["answer"] == "yes" for r in tests)) / 17  # by hand: "yes" is right where the label is
    assert out[2].reward == pytest.approx(yes_share)
    assert out[0].reward >= 0.9  # the comparison answers its template
    assert out[1].reward < out[0].reward - 0.2  # the guess was right here by chance
    assert all(o.accuracy == m.accuracy and o.program == m.program for o, m in zip(out, mine))
    assert stats["template_tests/programs"] == 3 and stats["template_tests/forms"] == 3
    assert stats["template_tests/runs"] == 3 * 16
    # rloo now pushes the right guess down beside the comparison; on its own reward both tied at 0.
    adv = group_advantages([row] * 3, [o.reward for o in out], "rloo")
    assert adv[0] > 0 > adv[1] and adv[2] < 0
    assert group_advantages([row] * 3, [m.reward for m in mine], "rloo") == [0.0, 0.0, 0.0]


def test_what_is_not_tested_keeps_its_own_reward(executor):
    rows = comparison_rows(2, seed=1)
    a, b = phrases(rows[0]["question"])
    kept = [rollout(0, COMPARE.format(a=a, b=b), 1.0, searched=True),  # search proved or compared it already
            rollout(0, GUESS.format(a=a), None),  # no reward (e.g. the reward failed)
            replace(rollout(0, "", 1.0, family="visprog"), program="ANSWER0=VQA(image=IMAGE)")]  # a script
    out, stats = scored(kept, rows, comparison_rows(3 * PROBE_MIN, seed=2), executor)
    assert [o.reward for o in out] == [1.0, None, 1.0] and stats["template_tests/programs"] == 0
    # A template with fewer than PROBE_MIN other training questions is not tested.
    few = scored([rollout(0, YES, 1.0)], rows, comparison_rows(PROBE_MIN - 1, seed=2), executor)
    assert few[0][0].reward == 1.0 and few[1]["template_tests/programs"] == 0
    # Off: nothing runs.
    assert scored([rollout(0, YES, 1.0)], rows, [], executor, size=0) == ([rollout(0, YES, 1.0)], {})
