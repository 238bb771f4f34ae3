"""Every registered vprl id passes Gymnasium's check_env; registration errors say the fix.

Real-dataset ids run on the tiny fixtures of tests/unit/test_hf_data.py, written in each
dataset's published schema in tmp_path; nothing is downloaded.
"""

import importlib.util
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.data.presets import PRESETS
from envs.environments.registration import PRESET_NAMES, UnknownEnvironment, preset_id

_spec = importlib.util.spec_from_file_location("_hf_fixtures",
                                               Path(__file__).with_name("test_hf_data.py"))
hf_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hf_fixtures)

SHAPES_IDS = {"vprl/Shapes-v0": {"size": 6}, "vprl/ShapesITM-v0": {"size": 6}}
PRESET_IDS = {preset_id(name): name for name in PRESETS}


def test_every_preset_and_both_shapes_envs_are_registered():
    assert set(envs.env_ids()) == set(SHAPES_IDS) | set(PRESET_IDS)
    assert set(PRESET_NAMES) == set(PRESETS)  # a new preset gets its dataset's own spelling


def make_checked(env_id, tmp_path):
    if env_id in SHAPES_IDS:
        return gym.make(env_id, **SHAPES_IDS[env_id])
    name = PRESET_IDS[env_id]
    fixture, kwargs, n_rows, _ = hf_fixtures.CASES[name]
    env = gym.make(env_id, data_path=str(fixture(tmp_path)),
                   cache_dir=str(tmp_path / "hf-cache"), **kwargs(tmp_path))
    assert len(env.unwrapped) == n_rows
    return env


@pytest.mark.parametrize("env_id", sorted(set(SHAPES_IDS) | set(PRESET_IDS)))
def test_check_env_passes(env_id, tmp_path, recwarn):
    env = make_checked(env_id, tmp_path)
    # Render modes are checked on Shapes only: each mode makes a fresh env, which for a
    # preset means loading the dataset again for no new coverage.
    check_env(env.unwrapped, skip_render_check=env_id not in SHAPES_IDS)
    # Soft failures (e.g. nondeterministic infos) are gymnasium logger warnings ("WARN: ...").
    soft = [str(w.message) for w in recwarn if "WARN:" in str(w.message)]
    assert not soft, soft
    obs, info = env.reset(seed=0)
    assert obs["question"] and obs["prompt"].endswith(env.unwrapped.family.program_prefix)
    env.close()


def test_default_prompt_families_follow_the_task(tmp_path):
    assert gym.make("vprl/ShapesITM-v0", size=4).unwrapped.family.name == "viper_itm"
    assert gym.make("vprl/Shapes-v0", size=4).unwrapped.family.name == "viper_compact"
    chart = make_checked("vprl/ChartQA-v0", tmp_path)
    assert chart.unwrapped.family.name == "tool_api"  # seed 002's chart/document prompt


def test_itm_and_vqa_shapes_split_the_families():
    itm = gym.make("vprl/ShapesITM-v0", size=8).unwrapped
    vqa = gym.make("vprl/Shapes-v0", size=8).unwrapped
    assert set(itm.dataset["family"]) == {"itm"}
    assert all(q.startswith('Verify image matches text="') for q in itm.dataset["question"])
    assert "itm" not in set(vqa.dataset["family"])
    with pytest.raises(ValueError, match="ShapesITM"):
        gym.make("vprl/Shapes-v0", families=["itm"])


def test_generated_shapes_are_deterministic_in_the_seed():
    a = gym.make("vprl/Shapes-v0", size=5, seed=1).unwrapped.dataset["question"]
    b = gym.make("vprl/Shapes-v0", size=5, seed=1).unwrapped.dataset["question"]
    c = gym.make("vprl/Shapes-v0", size=5, seed=2).unwrapped.dataset["question"]
    assert a == b and a != c


def test_shapes_data_path_reads_a_saved_dataset(tmp_path):
    from envs.data.shapes import build_dataset

    # No empty split: datasets cannot load_from_disk a split saved with 0 rows.
    build_dataset(train=1, validation=12, test=1, seed=4, progress=False).save_to_disk(
        str(tmp_path / "shapes"))
    vqa = gym.make("vprl/Shapes-v0", data_path=str(tmp_path / "shapes"), split="validation")
    itm = gym.make("vprl/ShapesITM-v0", data_path=str(tmp_path / "shapes"), split="validation")
    families = list(vqa.unwrapped.dataset["family"]) + list(itm.unwrapped.dataset["family"])
    assert len(families) == 12 and families.count("itm") == len(itm.unwrapped)
    with pytest.raises(ValueError, match="no split 'dev'; it has train, validation, test"):
        gym.make("vprl/Shapes-v0", data_path=str(tmp_path / "shapes"), split="dev")
    with pytest.raises(FileNotFoundError, match="vprl data shapes --out"):
        gym.make("vprl/Shapes-v0", data_path=str(tmp_path / "missing"))


@pytest.mark.parametrize("env_id", sorted(PRESET_IDS))
def test_a_preset_without_data_path_says_how_to_fix_it(env_id):
    with pytest.raises(ValueError, match=rf"{env_id} needs data_path=.*gymnasium.make"):
        gym.make(env_id)


def test_unknown_ids_list_the_known_ones():
    with pytest.raises(UnknownEnvironment, match=r"did you mean 'vprl/Shapes-v0'.*vprl/GQA-v0"):
        envs.make("vprl/Shape-v0")
    with pytest.raises(UnknownEnvironment, match="data_path"):
        envs.make("vprl/Nonsense-v3")
    assert envs.make("vprl/Shapes-v0", size=3).unwrapped.spec.id == "vprl/Shapes-v0"
