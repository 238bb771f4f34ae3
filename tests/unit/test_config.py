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
