"""A tiny randomly initialised Llama for fast tests of the update and generation code.

It has the same architecture as the embedded SmolLM2 (Llama, grouped KV heads), so the
code paths are the real ones; only the sizes differ.
"""

from __future__ import annotations

import torch


class TinyTokenizer:
    """Just enough of a tokenizer for HFGenerator: ids are characters' code points."""

    eos_token_id = 1
    pad_token_id = 0
    vocab = 128

    def __len__(self):
        return self.vocab

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [min(ord(ch), self.vocab - 1) for ch in text]}

    def convert_ids_to_tokens(self, ids):
        return [chr(i) if i > 1 else "" for i in ids]

    def convert_tokens_to_string(self, tokens):
        return "".join(tokens)

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if i > 1)


def tiny_model(seed: int = 0, dtype=torch.float32):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        pad_token_id=0, eos_token_id=1, bos_token_id=2,
    )
    return LlamaForCausalLM(config).to(dtype)


def tiny_lora_model(seed: int = 0, dtype=torch.float32, dropout: float = 0.0):
    from policies.lora import attach_lora
    from train.config import LoraConfig

    model = attach_lora(tiny_model(seed, dtype), LoraConfig(r=4, alpha=8, dropout=dropout))
    # B starts at zero in LoRA; give it values so the adapter actually shapes the output.
    torch.manual_seed(seed + 1)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.05)
    return model
