"""Honest names: which label columns (answer, answers, spec) each configured reward reads."""

import pytest

import rewards
from rewards.combine import RewardSet
from train.config import RewardSpec, load_config


def test_builtin_and_viunit_declarations():
    assert rewards.label_columns("correctness") == ("answer", "answers")
    assert rewards.label_columns("executes") == () and rewards.label_columns("format") == ()
    assert rewards.label_columns("viunit", {"test_source": "scene"}) == ("spec",)
    assert rewards.label_columns("viunit", {"test_source": "llm"}) == ()
    assert rewards.label_columns("viunit") == ()  # llm is the default test source
    assert rewards.label_columns("proptest") == ()


def test_the_old_option_name_generator_still_works_with_one_warning_line():
    from rewards.property_tests.suite import PropertyConfig

    with pytest.warns(FutureWarning, match="option 'generator' is deprecated; call it 'test_source'"):
        assert rewards.label_columns("viunit", {"generator": "scene"}) == ("spec",)
    with pytest.warns(FutureWarning, match="'generator' is deprecated"):
        assert PropertyConfig.from_kwargs({"generator": "basic"}).test_source == "basic"
    with pytest.raises(ValueError, match="keep only 'test_source'"):
        PropertyConfig.from_kwargs({"generator": "basic", "test_source": "itm"})
    rewards.register("test_labels_stateful", type("Stateful", (rewards.Reward,), {"uses_labels": False}))
    assert rewards.label_columns("test_labels_stateful") == ()
    assert rewards.label_columns("proptest", {"mode": "gate", "reward": "correctness"}) == ("answer", "answers")


def test_undeclared_rewards_are_read_off_their_signature():
    rewards.register("test_labels_named", lambda prompts, completions, answer=None, **kw: [0.0])
    rewards.register("test_labels_opaque", lambda prompts, completions, **columns: [0.0])
    rewards.register("test_labels_none", lambda prompts, completions, question=None: [0.0])
    assert rewards.label_columns("test_labels_named") == ("answer",)
    assert rewards.label_columns("test_labels_opaque") == ("answer", "answers", "spec")  # could read anything
    assert rewards.label_columns("test_labels_none") == ()
    with pytest.raises(ValueError, match="label columns are"):
        rewards.register("test_labels_bad", lambda p, c: [], reads=("question",))


def test_a_declaration_holds_when_the_config_names_the_reward_by_its_file(tmp_path, monkeypatch):
    # The README's plug-in: registered with reads=(), named in the config as file.py:fn.
    (tmp_path / "labels_by_file.py").write_text(
        "import rewards\n\n"
        "@rewards.register('test_labels_by_file', reads=())\n"
        "def short(prompts, completions, **columns):\n"
        "    return [0.0 for _ in completions]\n")
    monkeypatch.chdir(tmp_path)
    assert rewards.label_columns("labels_by_file.py:short") == ()
    assert rewards.label_columns("test_labels_by_file") == ()


def test_configs_say_what_they_are():
    """The label-free viunit config reads nothing; the oracle one says so in its name."""
    free = load_config("configs/shapes_viunit_cpu.yaml")
    oracle = load_config("configs/shapes_viunit_oracle_cpu.yaml")
    assert not any(RewardSet(free.rewards).label_columns().values())
    assert RewardSet(oracle.rewards).label_columns() == {"viunit": ("spec",)}
    assert RewardSet([RewardSpec("correctness")]).label_columns() == {"correctness": ("answer", "answers")}


def test_label_free_viunit_never_sees_the_spec(monkeypatch, tmp_path):
    """With LLM tests the reward must not pass the question's spec on, not even as a cache key."""
    from rewards.unit_tests import reward as viunit_module

    seen = []

    class Builder:
        def build(self, rows):
            seen.extend(rows)
            return [[] for _ in rows]  # no suites: the reward answers None

    reward = rewards.get("viunit")
    monkeypatch.setattr(reward, "builder", lambda kwargs, run_dir=None: Builder())
    monkeypatch.setattr(viunit_module, "run_on_suites", lambda ex, programs, suites: [[] for _ in programs])
    monkeypatch.setattr(viunit_module, "suite_score", lambda *a: 0.0)
    out = reward([""], ["    return 'yes'"], question=["Is there a cube?"], spec=['{"family": "x"}'], run_dir=tmp_path,
                 executor=object(), test_source="llm")
    assert out == [None] and seen == [{"question": "Is there a cube?", "spec": None}]
    seen.clear()
    reward([""], ["    return 'yes'"], question=["q"], spec=['{"family": "x"}'], run_dir=tmp_path, executor=object(),
           test_source="scene")
    assert seen[0]["spec"] == '{"family": "x"}'
