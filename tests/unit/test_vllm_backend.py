"""The vLLM backend against a stand-in for vLLM.

Mock boundary: vLLM needs CUDA and pins its own CUDA torch, so it cannot be installed
on the CPU machines the unit tier runs on. `FakeVLLM` replaces the `vllm` module with
classes that record what the backend asks of them (the engine's arguments, each
request's sampling parameters and LoRA request) and answer with token ids derived from
each request's seed, so the tests check what we send to vLLM and how we read its
answers. That vLLM itself honours them is the GPU test's job (tests/gpu).
"""

import random
import sys
import types
from dataclasses import dataclass

import pytest

from policies.generation import make_generator
from policies.sampling import GenerationConfig
from policies.vllm_backend import VLLMGenerator, request_seed
from tests.helpers.tiny import TinyTokenizer


@dataclass
class FakeCompletion:
    token_ids: list
    stop_reason: object = None


@dataclass
class FakeOutput:
    outputs: list


class FakeLLM:
    made: list = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls = []
        FakeLLM.made.append(self)

    def get_tokenizer(self):
        return TinyTokenizer()

    def generate(self, prompts, params, lora_request=None, use_tqdm=False):
        self.calls.append((prompts, params, lora_request))
        outs = []
        for p in params:  # a request's tokens follow from its seed alone, as a sampler's would
            rng = random.Random(p.seed)
            text = "\n    return '" + "".join(rng.choice("abcdefgh") for _ in range(4)) + "'"
            outs.append(FakeOutput([FakeCompletion([ord(c) for c in text] + [1])]))
        return outs


@pytest.fixture
def fake_vllm(monkeypatch, tmp_path):
    vllm = types.ModuleType("vllm")
    vllm.LLM = FakeLLM
    vllm.SamplingParams = lambda **kw: types.SimpleNamespace(**kw)
    vllm.TokensPrompt = lambda prompt_token_ids: {"prompt_token_ids": prompt_token_ids}
    lora = types.ModuleType("vllm.lora")
    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = lambda name, int_id, path: types.SimpleNamespace(name=name, id=int_id, path=path)
    for name, mod in (("vllm", vllm), ("vllm.lora", lora), ("vllm.lora.request", request)):
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr("policies.model.resolve", lambda name: tmp_path / "model")
    FakeLLM.made = []
    return FakeLLM


def _gen(**kw):
    cfg = GenerationConfig(backend="vllm", max_new_tokens=30, **kw.pop("config", {}))
    return VLLMGenerator("org/model", cfg, **kw)


def test_the_engine_takes_dtype_length_memory_and_lora_rank_from_the_config(fake_vllm):
    cfg = GenerationConfig(backend="vllm", gpu_memory_utilization=0.35, max_model_len=4096)
    gen = make_generator(cfg, None, None, model="org/model", seed=3, max_lora_rank=12, world=8, dtype="float16")
    args = fake_vllm.made[-1].kwargs
    assert (args["dtype"], args["max_model_len"], args["gpu_memory_utilization"]) == ("float16", 4096, 0.35)
    assert args["enable_lora"] and args["max_lora_rank"] == 16  # the smallest rank vLLM allows that holds 12
    assert args["distributed_executor_backend"] == "external_launcher" and isinstance(gen, VLLMGenerator)
    make_generator(GenerationConfig(backend="vllm"), None, None, model="org/model", seed=3, dtype="bfloat16")
    args = fake_vllm.made[-1].kwargs
    assert "max_model_len" not in args and "distributed_executor_backend" not in args  # null: the model's limit


def test_each_program_has_its_own_seed_and_ranks_never_share_a_stream(fake_vllm):
    rank0, rank1 = _gen(seed=0), _gen(seed=0)
    rank0.reseed(111), rank1.reseed(222)  # the trainer's per-rank seeds (Loop.seed)
    a = rank0.generate(["q1", "q2"], n=3)
    b = rank1.generate(["q1", "q2"], n=3)
    seeds_a = [p.seed for p in fake_vllm.made[0].calls[0][1]]
    seeds_b = [p.seed for p in fake_vllm.made[1].calls[0][1]]
    assert len(set(seeds_a)) == 6 and not set(seeds_a) & set(seeds_b)
    assert seeds_a == [request_seed(111, k) for k in range(6)]
    assert [s.prompt_index for s in a] == [0, 0, 0, 1, 1, 1]  # grouped by prompt, as on the HF path
    assert [s.text for s in a] != [s.text for s in b]
    rank0.generate(["q1", "q2"], n=3)  # the next call draws fresh seeds ...
    assert not set(p.seed for p in fake_vllm.made[0].calls[1][1]) & set(seeds_a)
    rank0.reseed(111)  # ... and reseed replays the stream
    assert [s.completion_ids for s in rank0.generate(["q1", "q2"], n=3)] == [s.completion_ids for s in a]


def test_samples_are_trimmed_to_the_program_and_eos_is_read(fake_vllm):
    gen = _gen(config={"temperature": 0.7, "top_p": 0.8})
    (sample,) = gen.generate(["q"], n=1)
    params = fake_vllm.made[0].calls[0][1][0]
    assert (params.temperature, params.top_p, params.max_tokens, params.n) == (0.7, 0.8, 30, 1)
    assert sample.text.startswith("\n    return '") and sample.finished and 1 not in sample.completion_ids
    assert fake_vllm.made[0].calls[0][0][0] == {"prompt_token_ids": [ord("q")]}


def test_every_adapter_is_served_under_a_new_id_and_a_missing_one_is_named(fake_vllm, tmp_path):
    gen = _gen()
    gen.generate(["q"])
    assert fake_vllm.made[0].calls[-1][2] is None  # the base model until an adapter is loaded
    adapter = tmp_path / "serving" / "adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text("{}")
    ids = []
    for _ in range(2):  # the trainer overwrites the same folder each iteration
        gen.load_adapter(adapter)
        gen.generate(["q"])
        lora = fake_vllm.made[0].calls[-1][2]
        assert lora.path == str(adapter)
        ids.append(lora.id)
    assert ids[0] != ids[1]  # a new id: vLLM reads the new weights instead of its cached ones
    with pytest.raises(FileNotFoundError, match="filesystem every node sees"):
        gen.load_adapter(tmp_path / "elsewhere")


def test_without_vllm_the_error_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=r"^generation.backend=vllm needs vLLM, which is not installed: make venv-gpu"):
        _gen()
