"""Your own model and portable adapters: Hub ids from the local cache, adapters that record
a base another machine resolves, eval/export refusing a mismatched base in one line, and
`vprl export` output that loads with plain peft or transformers alone.

A tiny random Llama is written into a temporary Hugging Face cache layout
(models--ORG--NAME/snapshots/REV), which is exactly what `hf download` leaves behind;
the Hub itself is never contacted (mock boundary: the push test fakes HfApi).
"""
import json
import shutil

import pytest
import torch

import huggingface_hub
from policies import model as pm
from policies.adapters import AdapterError, attach, base_for, make_portable, recorded_base
from policies.export import export, model_card
from train.export_cli import main as export_main

import transformers as tf
WORDS = ["[PAD]", "[UNK]", "<s>", "</s>", "def", "execute_command", "(", ")", ":", "return",
         "image", "yes", "no", "red", "circle"]


def tiny_model(folder, hidden=16, seed=0):
    from tokenizers import Tokenizer, models, pre_tokenizers

    torch.manual_seed(seed)
    config = tf.LlamaConfig(vocab_size=len(WORDS), hidden_size=hidden, intermediate_size=32,
                            num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                            max_position_embeddings=64, pad_token_id=0, bos_token_id=2,
                            eos_token_id=3)
    tf.LlamaForCausalLM(config).save_pretrained(folder)
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tf.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                               bos_token="<s>", eos_token="</s>").save_pretrained(folder)
    return folder


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache holding tiny-org/tiny-llama, in the layout `hf download` makes."""
    cache = tmp_path / "hf-cache"
    rev = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / "models--tiny-org--tiny-llama"
    tiny_model(repo / "snapshots" / rev)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(rev)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return repo / "snapshots" / rev


def test_hub_ids_resolve_from_the_local_cache_or_say_how_to_get_them(hub_cache):
    assert pm.resolve("tiny-org/tiny-llama") == hub_cache
    model, tokenizer = pm.load_model("tiny-org/tiny-llama")
    assert model.config.hidden_size == 16 and tokenizer.pad_token == "[PAD]"
    with pytest.raises(pm.ModelError) as err:
        pm.resolve("HuggingFaceTB/SmolLM2-135M-Instruct")
    assert "not in the local Hugging Face cache" in str(err.value) and "hf download" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(pm.ModelError, match="is not a Hugging Face model folder"):
        pm.resolve("./no/such/folder")


def test_portable_names(hub_cache, tmp_path):
    assert pm.portable_name(str(hub_cache)) == "tiny-org/tiny-llama"
    assert pm.portable_name(str(tmp_path / "models" / "smollm2-135m-instruct-6b5227ba3e78")) == \
        "embedded:smollm2-135m-instruct"
    assert pm.portable_name(str(tmp_path)) == str(tmp_path.resolve())
    assert pm.hub_id("embedded:smollm2-135m-instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"


def trained_adapter(base_name, folder):
    """A LoRA adapter saved the way the trainer saves one, with non-zero B so it matters."""
    from policies.lora import attach_lora
    from train.config import LoraConfig

    model, _ = pm.load_model(base_name)
    peft_model = attach_lora(model, LoraConfig(r=2, alpha=4, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    peft_model.save_pretrained(folder)
    make_portable(folder)
    return folder


def test_adapter_records_a_resolvable_base_and_loads_with_plain_peft_elsewhere(hub_cache, tmp_path):
    from peft import AutoPeftModelForCausalLM

    adapter = trained_adapter("tiny-org/tiny-llama", tmp_path / "run" / "best" / "adapter")
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "tiny-org/tiny-llama"  # not the snapshot path
    assert "base_model: tiny-org/tiny-llama" in (adapter / "README.md").read_text()
    elsewhere = shutil.copytree(adapter, tmp_path / "elsewhere" / "my-lora")
    loaded = AutoPeftModelForCausalLM.from_pretrained(str(elsewhere))  # plain peft, base by id
    ids = torch.tensor([[4, 5, 6, 7, 8]])
    reference = attach(pm.load_model("tiny-org/tiny-llama")[0], adapter)
    assert torch.allclose(loaded(ids).logits, reference(ids).logits, atol=1e-5)


def test_a_mismatched_base_is_refused_in_one_line(hub_cache, tmp_path):
    adapter = trained_adapter("tiny-org/tiny-llama", tmp_path / "adapter")
    other = tiny_model(tmp_path / "other", hidden=24)
    assert base_for(adapter, None) == "tiny-org/tiny-llama"
    assert base_for(adapter, str(hub_cache)) == str(hub_cache)  # the same weights, another name
    with pytest.raises(AdapterError, match=r"is not the base model .* drop --model"):
        base_for(adapter, str(other))
    with pytest.raises(AdapterError, match="does not fit this model") as err:
        attach(pm.load_model(str(other))[0], adapter)
    assert "\n" not in str(err.value)


def test_base_falls_back_to_the_runs_config(tmp_path):
    run = tmp_path / "run"
    (run / "best" / "adapter").mkdir(parents=True)
    (run / "best" / "adapter" / "adapter_config.json").write_text(json.dumps({"r": 2}))
    (run / "config.yaml").write_text("model: tiny-org/tiny-llama\n")
    assert recorded_base(run / "best" / "adapter") == "tiny-org/tiny-llama"


def test_merged_export_loads_with_transformers_alone_and_the_card_names_the_base(hub_cache, tmp_path):
    run = tmp_path / "run"
    adapter = trained_adapter("tiny-org/tiny-llama", run / "best" / "adapter")
    (run / "best" / "best.json").write_text(json.dumps({"iteration": 0, "reward": 0.5}))
    (run / "config.yaml").write_text("run_name: tiny\nmodel: tiny-org/tiny-llama\n"
                                     "data: {name: files, path: /data/qa.csv, metric: anls}\n")
    (run / "metrics.jsonl").write_text(json.dumps({"iteration": 0, "eval/accuracy": 0.25,
                                                   "eval/questions": 8}) + "\n")
    assert export_main([str(run), "--merge", "--out", str(tmp_path / "merged")]) == 0
    merged = tf.AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged"))
    tf.AutoTokenizer.from_pretrained(str(tmp_path / "merged"))
    ids = torch.tensor([[4, 5, 6, 7, 8]])
    reference = attach(pm.load_model("tiny-org/tiny-llama")[0], adapter)
    assert torch.allclose(merged(ids).logits, reference(ids).logits, atol=1e-4)
    card = (tmp_path / "merged" / "README.md").read_text()
    assert "base_model: tiny-org/tiny-llama" in card and "| 0 (exported) | 0.250 |" in card
    assert "`anls`" in card
    export(run, tmp_path / "plain")  # no merge: the adapter, its card
    assert (tmp_path / "plain" / "adapter_model.safetensors").exists()
    assert "library_name: peft" in (tmp_path / "plain" / "README.md").read_text()


def test_embedded_card_names_the_real_base():
    card = model_card("embedded:smollm2-135m-instruct", True, {})
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in card and "Q4_1 GGUF" in card


def test_export_refuses_bad_input_and_a_push_without_a_token(hub_cache, tmp_path, capsys, monkeypatch):
    assert export_main([str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "neither a run folder" in capsys.readouterr().err
    adapter = trained_adapter("tiny-org/tiny-llama", tmp_path / "adapter")
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert export_main([str(adapter), "--out", str(tmp_path / "o"), "--push-to-hub", "me/x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the loading progress bars
    assert err.startswith("vprl export: error: --push-to-hub needs a Hugging Face token")
    assert (tmp_path / "o" / "README.md").exists()  # the local export is kept


def test_push_uploads_the_folder(hub_cache, tmp_path, monkeypatch, capsys):
    """Mock boundary: the Hub is unreachable here, so HfApi is replaced by a recorder."""
    calls = []

    class FakeApi:
        def __init__(self, token):
            calls.append(("token", token))

        def create_repo(self, repo, **kw):
            calls.append(("create", repo, kw["exist_ok"]))

        def upload_folder(self, folder_path, repo_id, **kw):
            calls.append(("upload", sorted(p.name for p in __import__("pathlib").Path(folder_path).iterdir()), repo_id))

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_secret")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    adapter = trained_adapter("tiny-org/tiny-llama", tmp_path / "adapter")
    assert export_main([str(adapter), "--out", str(tmp_path / "o"), "--push-to-hub", "me/x"]) == 0
    assert calls[0] == ("token", "hf_secret") and calls[1] == ("create", "me/x", True)
    assert calls[2][2] == "me/x" and "adapter_config.json" in calls[2][1] and "README.md" in calls[2][1]


def test_training_config_takes_a_cached_hub_id_and_refuses_a_missing_one(hub_cache, tmp_path):
    from train.config import ConfigError, load_config
    from train.setup import validate

    validate(load_config(None, [f"output_dir={tmp_path}", "model=tiny-org/tiny-llama"]))
    with pytest.raises(ConfigError, match="not in the local Hugging Face cache"):
        validate(load_config(None, [f"output_dir={tmp_path}",
                                    "model=HuggingFaceTB/SmolLM2-135M-Instruct"]))


def test_eval_refuses_an_adapter_from_another_base(hub_cache, tmp_path, capsys):
    from train.eval_cli import main as eval_main

    adapter = trained_adapter("tiny-org/tiny-llama", tmp_path / "adapter")
    other = tiny_model(tmp_path / "other", hidden=24)
    assert eval_main(["--data", str(tmp_path), "--adapter", str(adapter), "--model", str(other)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("vprl eval: error: --model") and "is not the base model" in err
