"""The probe monitor (`early_stopping.monitor: probe/reward`): one fixed batch of training
questions, sampled with one seed, scores every adapter; an iteration's batch changes."""

from types import SimpleNamespace

import pytest

import train.rollout
from train.config import Config, ConfigError, load_config
from train.sampling import Loop, mean_reward, questions, rollout


class _Generator:
    def __init__(self):
        self.seeds = []

    def reseed(self, seed):
        self.seeds.append(seed)

    def drain(self):
        pass


class _SelfPlay:
    names = ["viper_compact"]

    def __init__(self):
        self.shots_for, self.admitted = [], []

    def prompts(self, name, tokenizer, batch, iteration, seed):
        self.shots_for.append(iteration)
        return [f"q{row['id']}" for row in batch], []

    def refine(self, name, tokenizer, rows, rollouts, *args):
        return rollouts, {}

    def admit(self, name, batch, family, iteration, **kwargs):
        self.admitted.append(iteration)
        return 0


def _loop(rank=0, world=1, rows=40, probe_questions=8):
    cfg = Config()
    cfg.questions_per_iteration = 8
    cfg.early_stopping.probe_questions = probe_questions
    accelerator = SimpleNamespace(process_index=rank, num_processes=world, is_main_process=rank == 0)
    return Loop(cfg, accelerator, tokenizer=None, generator=_Generator(), executor=None, reward_set=None,
                selfplay=_SelfPlay(), train_rows=[{"id": i} for i in range(rows)], eval_rows=[])


def _ids(batch):
    return [row["id"] for row in batch]


def test_probe_questions_are_fixed_while_each_iteration_draws_new_ones():
    loop = _loop()
    fixed = _ids(questions(loop, "probe", 8))
    assert fixed == _ids(questions(loop, "probe", 8)) and len(set(fixed)) == 8
    assert _ids(questions(loop, 0)) != _ids(questions(loop, 1))
    assert fixed not in (_ids(questions(loop, 0)), _ids(questions(loop, 1)))
    assert len(questions(_loop(rows=5), "probe", 8)) == 5  # never more than there are


def test_probe_questions_are_one_batch_split_over_ranks():
    whole = _ids(questions(_loop(), "probe", 8))
    shards = [_ids(questions(_loop(rank=r, world=3), "probe", 8)) for r in range(3)]
    assert sorted(sum(shards, [])) == sorted(whole) and all(shards)


def test_a_probe_samples_with_the_same_seed_for_every_adapter(monkeypatch):
    monkeypatch.setattr(train.rollout, "collect", lambda batch, prompts, *a, **k: [])
    loop = _loop()
    for iteration in (0, 3):
        rollout(loop, questions(loop, "probe", 8), iteration, admit=False, purpose="probe")
        rollout(loop, questions(loop, iteration), iteration)
    probe_a, rollout_a, probe_b, rollout_b = loop.generator.seeds
    assert probe_a == probe_b == loop.seed("probe", 0)
    assert rollout_a != rollout_b and probe_a not in (rollout_a, rollout_b)


def test_probe_returns_the_mean_reward_of_its_rollouts(monkeypatch):
    seen = []

    def collect(batch, prompts, *args, **kwargs):
        seen.append(prompts)
        return [SimpleNamespace(row=i, reward=float(i % 2), weight=0.0, result=SimpleNamespace(status="ok"), parts={},
                                completion_ids=[1], prompt_family=None, accuracy=None) for i in range(len(batch))]

    monkeypatch.setattr(train.rollout, "collect", collect)
    monkeypatch.setattr("accelerate.utils.gather_object", lambda items: items)
    loop = _loop(probe_questions=4)
    batch = questions(loop, "probe", 4)
    assert mean_reward(loop, batch, 2, "probe") == pytest.approx(0.5) == mean_reward(loop, batch, 5, "probe")
    assert seen == [[f"q{i}" for i in _ids(questions(loop, "probe", 4))]] * 2
    # one sampling seed for every adapter; the shots of the iteration asked for; no pool admission
    assert loop.generator.seeds == [loop.seed("probe", 0)] * 2
    assert loop.selfplay.shots_for == [2, 5] and loop.selfplay.admitted == []


@pytest.mark.parametrize("value", ["0", "-1"])
def test_probe_questions_must_be_positive(value):
    with pytest.raises(ConfigError, match="probe_questions"):
        load_config("configs/shapes_rwr_cpu.yaml", [f"early_stopping.probe_questions={value}"])


def test_probe_reward_is_a_monitor():
    cfg = load_config("configs/shapes_rwr_cpu.yaml", ["early_stopping.monitor=probe/reward"])
    assert cfg.early_stopping.monitor == "probe/reward"
    with pytest.raises(ConfigError, match="monitor"):
        load_config("configs/shapes_rwr_cpu.yaml", ["early_stopping.monitor=probe"])
