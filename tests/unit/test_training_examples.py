"""train.iterate.training_examples: rewards become Eq. 8 weights, per the weighting config."""

from types import SimpleNamespace

import pytest

from train.config import Config
from train.iterate import training_examples


def _loop(**weighting):
    cfg = Config()
    for key, value in weighting.items():
        setattr(cfg.weighting, key, value)
    return SimpleNamespace(cfg=cfg, tokenizer=SimpleNamespace(eos_token_id=2),
                           selfplay=SimpleNamespace(updates=True))


def _rollouts(rewards_by_question):
    return [SimpleNamespace(reward=r, prompt_family="viper_compact", row=q, prompt_ids=[5, 6], completion_ids=[7],
                            finished=True, refined=False)
            for q, rewards in enumerate(rewards_by_question) for r in rewards]


@pytest.mark.parametrize("skip, expected", [(False, [1, 1, 0, 0, 1, 0]), (True, [0, 0, 0, 0, 1, 0])])
def test_skip_settled_leaves_out_questions_every_program_solved_or_none(skip, expected):
    rollouts = _rollouts([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    examples = training_examples(_loop(skip_settled=skip), rollouts)
    assert [e.weight for e in examples] == expected == [ro.weight for ro in rollouts]
    assert all(e.completion_ids == [7, 2] for e in examples)  # ended on its own: taught to end (EOS)
