"""Tiny random stand-ins for the Hub models the GPU recipes name, written into a Hugging
Face cache in the layout `hf download` leaves (models--ORG--NAME/snapshots/REV), so
that a recipe's dry run resolves, reads and loads them offline on a CPU machine.

Their weights are random and their sizes tiny: what they stand in for is the name, the
architecture family and the files, not the model's behaviour.
"""

from __future__ import annotations

from pathlib import Path

REV = "0123456789abcdef0123456789abcdef01234567"
WORDS = ["[PAD]", "[UNK]", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "def", "execute_command", "image",
         "return", "yes", "no", "a", "dog", "photo", "of"]
CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def snapshot(cache: Path, repo_id: str) -> Path:
    """The snapshot folder of `repo_id` in `cache`, with refs/main pointing at it."""
    repo = Path(cache) / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(REV)
    folder = repo / "snapshots" / REV
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def tokenizer():
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = tf.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                      bos_token="<s>", eos_token="</s>")
    fast.chat_template = CHAT
    return fast


def qwen2(folder: Path) -> Path:
    """A Qwen2 causal LM (the Qwen2.5-Coder architecture) with a chat template."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    config = tf.Qwen2Config(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
                            pad_token_id=0, bos_token_id=2, eos_token_id=3)
    tf.Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    return folder


def clip(folder: Path) -> Path:
    import transformers as tf

    text = dict(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=16)
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=32,
                  patch_size=8)
    tf.CLIPModel(tf.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).save_pretrained(folder)
    size = {"height": 32, "width": 32}
    tf.CLIPProcessor(image_processor=tf.CLIPImageProcessor(size=size, crop_size=size),
                     tokenizer=tokenizer()).save_pretrained(folder)
    return folder


def blip2(folder: Path) -> Path:
    import transformers as tf

    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=32,
                  patch_size=8)
    opt = tf.OPTConfig(vocab_size=len(WORDS), hidden_size=16, ffn_dim=32, num_hidden_layers=1, num_attention_heads=2,
                       max_position_embeddings=64, word_embed_proj_dim=16, pad_token_id=0, bos_token_id=2,
                       eos_token_id=3)
    tf.Blip2ForConditionalGeneration(tf.Blip2Config(
        vision_config=vision, text_config=opt.to_dict(), num_query_tokens=4, image_token_index=4,
        qformer_config=dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                            encoder_hidden_size=16, vocab_size=len(WORDS)))).save_pretrained(folder)
    tf.Blip2Processor(image_processor=tf.BlipImageProcessor(size={"height": 32, "width": 32}),
                      tokenizer=tokenizer(), num_query_tokens=4).save_pretrained(folder)
    return folder


def tiny_owl_at(folder):
    """A tiny randomly initialised OWLv2 with its processor, saved to ``folder``."""
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[PAD]", "[UNK]", "<s>", "</s>", "a", "dog", "photo", "of"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = tf.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]",
                                           unk_token="[UNK]", bos_token="<s>", eos_token="</s>")
    text = dict(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=16)
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                  image_size=32, patch_size=8)
    tf.Owlv2ForObjectDetection(tf.Owlv2Config(text_config=text, vision_config=vision,
                                              projection_dim=16)).save_pretrained(folder)
    size = {"height": 32, "width": 32}
    tf.Owlv2Processor(image_processor=tf.Owlv2ImageProcessor(size=size),
                      tokenizer=tokenizer).save_pretrained(folder)
    return folder


def owlv2(folder: Path) -> Path:
    return tiny_owl_at(folder)


BUILDERS = {"qwen2": qwen2, "owlv2": owlv2, "blip-2": blip2, "clip": clip}


def hub_cache(cache: Path, models: dict[str, str]) -> Path:
    """Write {repo_id: kind} (a key of BUILDERS) into the cache at `cache`."""
    for repo_id, kind in models.items():
        BUILDERS[kind](snapshot(cache, repo_id))
    return Path(cache)
