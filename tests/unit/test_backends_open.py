"""One `open_backend` for every entry point: model-backed tools fail at start-up naming the
missing setting, and `hf` works from `vprl exec`, `vprl eval`, the trainer's config and
the Gymnasium environments.

Mock/random-weights boundary: real OWLv2 / BLIP-2 / CLIP checkpoints cannot be downloaded
here, so the detector is a tiny randomly initialised OWLv2 saved to a folder (its boxes are
meaningless; what is tested is that the tools load, run in a tool host and answer).
"""
import json

import numpy as np
import pytest
from PIL import Image

import huggingface_hub
from envs.tools import BackendError, check_backend, open_backend
from tests.helpers.standins import tiny_owl_at


FIND = ("def execute_command(image):\n"
        "    return str(len(ImagePatch(image).find('dog')) >= 0)\n")
ASK = "def execute_command(image):\n    return ImagePatch(image).simple_query('what is it?')\n"


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """A Hugging Face cache with no models in it, as on a machine that never downloaded any."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr("envs.tools.host.server.DEFAULT_LLM", None)  # llm_query is not under test here


@pytest.fixture(scope="module")
def tiny_owl(tmp_path_factory):
    return tiny_owl_at(tmp_path_factory.mktemp("tiny-owlv2"))


def test_shapes_cv_opens_in_the_workers_and_unknown_names_fail():
    with open_backend("shapes-cv") as tools:
        assert tools.spec == "shapes-cv" and tools.host is None
    with pytest.raises(BackendError, match="unknown backend 'nope'; known: .*hf, shapes-cv"):
        open_backend("nope")
    with pytest.raises(BackendError, match="unexpected keyword argument 'detectr'.*backend_kwargs"):
        check_backend("hf", {"detectr": "x"})


def test_hf_without_local_models_fails_at_start_up_naming_the_setting(empty_cache):
    with pytest.raises(BackendError) as err:
        open_backend("hf", setting="env.backend_kwargs.{key}")
    message = str(err.value)
    assert "'google/owlv2-base-patch16-ensemble' is neither a local model folder nor in the local " \
           "Hugging Face cache; set env.backend_kwargs.detector" in message and "\n" not in message


def test_a_detector_outside_the_owl_family_is_refused(tmp_path, empty_cache):
    (tmp_path / "clip").mkdir()
    (tmp_path / "clip" / "config.json").write_text(json.dumps({"model_type": "clip"}))
    with pytest.raises(BackendError, match="is a 'clip' model; find needs the OWL family"):
        check_backend("hf", {"detector": str(tmp_path / "clip"), "vqa": None, "clip": None})


def test_training_config_with_hf_and_no_models_fails_before_the_model_loads(tmp_path, empty_cache):
    from train.config import ConfigError, load_config
    from train.setup import validate

    with pytest.raises(ConfigError, match="set env.backend_kwargs.detector"):
        validate(load_config(None, [f"output_dir={tmp_path}", "env.backend=hf"]))


def test_hf_runs_sandboxed_programs_through_a_tool_host(tiny_owl, empty_cache):
    from envs.execution import Executor

    image = np.full((48, 64, 3), 200, np.uint8)
    with open_backend("hf", {"detector": str(tiny_owl), "vqa": None, "clip": None,
                             "device": "cpu"}) as tools, \
            Executor(workers=1, timeout_s=20, backend=tools.spec) as ex:
        assert tools.spec.startswith("host:")
        found, asked = ex.run([FIND, ASK], [image, image])
    assert (found.status, found.answer) == ("ok", "true"), found.error
    assert asked.status == "runtime_error" and "no vqa model" in asked.error


def test_vprl_exec_with_hf(tiny_owl, empty_cache, tmp_path, capsys):
    from envs.execution.cli import main as exec_main

    (tmp_path / "p.py").write_text(FIND)
    Image.new("RGB", (40, 30), "white").save(tmp_path / "i.png")
    argv = [str(tmp_path / "p.py"), str(tmp_path / "i.png"), "--backend", "hf", "--timeout", "20"]
    assert exec_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vprl exec: error: hf backend: the detector model") and "\n" not in err
    assert "--backend-arg detector=..." in err
    assert exec_main(argv + ["--backend-arg", f"detector={tiny_owl}", "--backend-arg", "vqa=null",
                             "--backend-arg", "clip=null", "--backend-arg", "device=cpu"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["status"], result["answer"]) == ("ok", "true"), result


def test_vprl_eval_with_hf_and_no_models_exits_2(empty_cache, tmp_path, capsys):
    from envs.data.cli import main as shapes_main
    from train.eval_cli import main as eval_main

    assert shapes_main(["--out", str(tmp_path / "d"), "--train", "1", "--val", "2", "--test", "0",
                        "--no-progress"]) == 0
    assert eval_main(["--data", str(tmp_path / "d"), "--backend", "hf"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("vprl eval: error: hf backend") and "--backend-arg detector=" in err


def test_gymnasium_env_with_hf(tiny_owl, empty_cache):
    import envs

    with pytest.raises(BackendError, match=r"backend_kwargs\['detector'\]"):
        envs.make("vprl/Shapes-v0", backend="hf")
    env = envs.make("vprl/Shapes-v0", size=2, backend="hf", rewards=["executes"],
                    backend_kwargs={"detector": str(tiny_owl), "vqa": None, "clip": None,
                                    "device": "cpu"},
                    executor_kwargs={"workers": 1, "timeout_s": 20})
    try:
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step(FIND)
        assert info["execution"]["status"] == "ok", info
        assert terminated and reward == 1.0
    finally:
        env.close()
    assert env.unwrapped.tools is None
