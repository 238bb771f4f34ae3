"""policies.text_lm.TextLM: one frozen copy per model, loaded on first use, greedy answers
(the tool host's llm_query, the caption judge). Sampling is the policy sampler's own
(test_generation.py); a fake model stands in here."""

from __future__ import annotations

import torch

import policies.text_lm as text_lm
from policies.text_lm import TextLM


class FakeTokenizer:
    chat_template = None
    pad_token_id = 0
    padding_side = "right"

    def __call__(self, prompts, return_tensors, padding):
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        return _Batch(input_ids=ids)

    def batch_decode(self, rows, skip_special_tokens):
        return [f" {len(r)} tokens " for r in rows]


class _Batch(dict):
    def to(self, device):
        return self


class FakeModel(torch.nn.Module):
    device = torch.device("cpu")

    def generate(self, input_ids, max_new_tokens, do_sample, pad_token_id):
        assert do_sample is False
        return torch.cat([input_ids, torch.ones(len(input_ids), max_new_tokens, dtype=torch.long)], 1)


def test_one_frozen_copy_loaded_on_first_use_and_short_answers(monkeypatch):
    loads = []

    def load_model(name, dtype):
        loads.append(name)
        return FakeModel(), FakeTokenizer()

    monkeypatch.setattr("policies.model.load_model", load_model)
    text_lm.frozen_model.cache_clear()
    try:
        writer, judge = TextLM("m"), TextLM("m", short_tokens=3, answer_tokens=7)
        assert loads == []
        assert writer.tokenizer is judge.tokenizer and loads == ["m"]  # read on first use, loaded once
        assert judge.batch(["Is it red?", "Why?"], [False, False]) == ["3 tokens", "3 tokens"]
        assert judge.batch(["Why?"], [True]) == ["7 tokens"]
        assert judge.tokenizer.padding_side == "left"
    finally:
        text_lm.frozen_model.cache_clear()
