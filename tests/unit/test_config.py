"""Config dataclasses: YAML keys match fields one to one, with strict checking."""

import pytest
import yaml

from train.config import Config, ConfigError, load_config, save_config


def test_defaults_match_viunit_table9():
    cfg = Config()
    assert (cfg.lora.r, cfg.lora.alpha, cfg.lora.dropout) == (16, 32, 0.05)
    assert sorted(cfg.lora.target_modules) == ["k_proj", "o_proj", "q_proj", "v_proj"]
    assert (cfg.optim.lr, cfg.optim.warmup_ratio, cfg.optim.max_grad_norm) == (2e-4, 0.1, 0.3)
    assert cfg.optim.schedule == "linear" and cfg.weighting.threshold == 0.8
    assert (cfg.generation.temperature, cfg.generation.top_p, cfg.generation.max_new_tokens) == (1.0, 0.9, 320)


def test_file_plus_dotted_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("run_name: a\noptim:\n  lr: 1.0e-3\nrewards: [correctness]\n")
    cfg = load_config(path, ["optim.lr=1e-4", "generation.top_p=0.5", "rewards=[{name: format, weight: 2}]"])
    assert cfg.run_name == "a" and cfg.optim.lr == 1e-4 and cfg.generation.top_p == 0.5
    assert cfg.rewards[0].name == "format" and cfg.rewards[0].weight == 2.0


def test_saved_config_round_trips(tmp_path):
    cfg = load_config(None, ["iterations=7", "rewards=[correctness, {name: format, weight: 0.5, kwargs: {a: 1}}]"])
    save_config(cfg, tmp_path / "config.yaml")
    again = load_config(tmp_path / "config.yaml")
    assert again == cfg
    assert set(yaml.safe_load((tmp_path / "config.yaml").read_text())) == set(Config.__dataclass_fields__)


@pytest.mark.parametrize("overrides,match", [
    (["bogus=1"], "unknown config key 'bogus'"),
    (["optim.lr_rate=1"], "unknown config key 'optim.lr_rate'.*known keys here: .*lr"),
    (["iterations=two"], "iterations: expected int"),
    (["iterations=1.5"], "iterations: expected int"),
    (["optim.lr=fast"], "optim.lr: expected float"),
    (["resume=3"], "resume: expected bool"),
    (["lora=5"], "lora: expected a mapping"),
    (["rewards=[{weight: 1}]"], "name"),
    (["noequals"], "key=value"),
])
def test_bad_values_fail_with_one_line(overrides, match):
    with pytest.raises(ConfigError, match=match) as info:
        load_config(None, overrides)
    assert "\n" not in str(info.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(listy)


def test_shipped_configs_load():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "configs"
    for path in root.glob("*.yaml"):
        load_config(path)


# ---------------------------------------------------------------- rules on the fields (issue 12 item 5)

@pytest.mark.parametrize("override,match", [
    ("env.timeout_s=0", r"env.timeout_s must be > 0, got 0.0"),
    ("rewards=[]", r"rewards must be non-empty"),
    ("early_stopping.patience=0", r"early_stopping.patience must be >= 1"),
    ("generation.top_p=5", r"generation.top_p must be > 0 and <= 1, got 5.0"),
    ("optim.lr=-1", r"optim.lr must be > 0, got -1.0"),
    ("optim.warmup_ratio=1.5", r"optim.warmup_ratio must be >= 0 and <= 1"),
    ("selfplay.shots_per_step=[0, -4]", r"selfplay.shots_per_step\[1\] must be >= 0"),
    ("optim.schedule=cosine", r"optim.schedule 'cosine' is not allowed; use one of linear, constant"),
    ("selfplay.aggregate=[majorty]", r"selfplay.aggregate\[0\] 'majorty' is not allowed \(did you mean 'majority'\?\)"),
    ("tracking.mode=sometimes", r"tracking.mode 'sometimes' is not allowed; use one of auto, online, offline, disabled"),
    ("dtype=fp16", r"dtype 'fp16' is not allowed"),
    ("run_name=", r"run_name must be non-empty"),
])
def test_field_rules_refuse_bad_values_at_load(override, match):
    with pytest.raises(ConfigError, match=match) as info:
        load_config(None, [override])
    assert "\n" not in str(info.value)


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(ConfigError, match=r"unknown config key .optim.micro_batch_sise. .*known keys here") as info:
        load_config(None, ["optim.micro_batch_sise=4"])
    assert "did you mean 'micro_batch_size'" in str(info.value)
    with pytest.raises(ConfigError, match="did you mean 'iterations'"):
        load_config(None, ["iteratons=2"])


@pytest.mark.parametrize("override,match", [
    ("data.metric=code_pass_rate", "data.metric 'code_pass_rate' is not a per-question metric; known: anls"),
    ("env.prompt=viper_compat", r"env.prompt 'viper_compat' is unknown \(did you mean 'viper_compact'\?\)"),
    ("env.backend=nope", "env.backend 'nope' is unknown; known: .*shapes-cv"),
    ("selfplay.families=[pot, nope]", r"selfplay.families\[1\] 'nope' is unknown"),
])
def test_registry_names_are_checked_by_validate(override, match):
    from train.config import check_registered

    cfg = load_config(None, [override])  # loads: plug-ins may still register the name
    with pytest.raises(ConfigError, match=match):
        check_registered(cfg)


def test_defaults_obey_their_own_rules():
    """A field added with a default its rule refuses would only fail for users who set it."""
    from train.config import _build, check_registered, to_dict

    assert _build(Config, to_dict(Config())) == Config()
    check_registered(Config())


def test_allowed_values_match_what_the_consumers_accept():
    import typing

    from envs.selfplay import EVICTIONS, POOL_AGGREGATORS, SHOT_STRATEGIES
    from train.admission import ADMISSIONS
    from policies.model import DTYPES
    from train.config import Config, SelfPlayConfig, field_types
    from train.selfplay import MODES

    def allowed(cls, name):
        tp = field_types(cls)[name]
        while typing.get_origin(tp) is not typing.Literal:
            tp = typing.get_args(tp)[0]
        return set(typing.get_args(tp))

    assert allowed(SelfPlayConfig, "mode") == set(MODES)
    assert allowed(SelfPlayConfig, "strategy") == set(SHOT_STRATEGIES)
    assert allowed(SelfPlayConfig, "eviction") == set(EVICTIONS)
    assert allowed(SelfPlayConfig, "aggregate") == set(POOL_AGGREGATORS)
    assert allowed(SelfPlayConfig, "admission") == set(ADMISSIONS)
    assert allowed(Config, "dtype") == set(DTYPES)


def test_validate_refuses_a_metric_that_raises_at_start_up():
    """data.metric=code_pass_rate used to pass start-up and raise in the first reward."""
    from train.setup import validate

    with pytest.raises(ConfigError, match="data.metric 'code_pass_rate' is not a per-question metric"):
        validate(load_config(None, ["data.metric=code_pass_rate"]))


def test_tracking_wandb_is_the_old_spelling_of_mode_disabled():
    with pytest.warns(FutureWarning, match="tracking.wandb is deprecated; use tracking.mode"):
        assert load_config(None, ["tracking.wandb=false"]).tracking.mode == "disabled"
    with pytest.warns(FutureWarning):
        assert load_config(None, ["tracking.wandb=true", "tracking.mode=offline"]).tracking.mode == "offline"
    with pytest.raises(ConfigError, match="tracking.wandb must be true or false"):
        load_config(None, ["tracking.wandb=sometimes"])


def test_validate_refuses_demo_baseline_under_eq8():
    """Eq. 8 has no baseline for a demonstration to join; the flag would do nothing there."""
    from train.setup import validate

    with pytest.raises(ConfigError, match="objective.demo_baseline .* set objective.name=rloo or grpo") as info:
        validate(load_config(None, ["objective.demo_baseline=true"]))
    assert "\n" not in str(info.value)
    validate(load_config(None, ["objective.demo_baseline=true", "objective.name=rloo"]))


def test_validate_refuses_clip_eps_high_without_a_ratio():
    """The decoupled upper bound needs the ratio that clip_eps turns on."""
    from train.setup import validate

    with pytest.raises(ConfigError, match="objective.clip_eps_high .* set objective.clip_eps") as info:
        validate(load_config(None, ["objective.name=rloo", "objective.clip_eps_high=0.28"]))
    assert "\n" not in str(info.value)
    validate(load_config(None, ["objective.name=rloo", "objective.clip_eps=0.2", "objective.clip_eps_high=0.28"]))


def test_validate_refuses_template_tests_too_few_to_test_a_template():
    """A template needs PROBE_MIN test questions; a smaller size would test nothing, silently."""
    from train.setup import validate

    with pytest.raises(ConfigError, match="objective.template_tests=4 .* set it to 0 or at least 8") as info:
        validate(load_config(None, ["objective.template_tests=4"]))
    assert "\n" not in str(info.value)
    validate(load_config(None, ["objective.template_tests=16"]))


def test_validate_refuses_a_third_composed_call_without_documented_attributes():
    """The third call selects patches by a documented attribute; without `attributes` it would
    compose nothing more than two calls do, silently."""
    from train.setup import validate

    with pytest.raises(ConfigError, match="search.compose=3 .* set search.attributes=true") as info:
        validate(load_config(None, ["search.enabled=true", "search.compose=3"]))
    assert "\n" not in str(info.value)
    validate(load_config(None, ["search.enabled=true", "search.compose=3", "search.attributes=true"]))


@pytest.mark.parametrize("missing", [["search.compose=2"], ["search.library=32"]])
def test_validate_refuses_rehearsal_without_a_library_of_composed_forms(missing):
    """Rehearsal teaches the proven composed forms the library remembers; without either there
    is nothing to rehearse, and the run would silently train as without it."""
    from train.setup import validate

    with pytest.raises(ConfigError, match="search.rehearse .* set both") as info:
        validate(load_config(None, ["search.enabled=true", "search.rehearse=4", *missing]))
    assert "\n" not in str(info.value)
    validate(load_config(None, ["search.enabled=true", "search.rehearse=4", "search.compose=2", "search.library=32"]))
