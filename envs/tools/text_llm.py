"""The text LLM behind ``llm_query`` (PropTest's advanced tests), run inside the tool host.

Loaded with ``policies.model.load_model`` so the embedded SmolLM2 and any local causal LM
work alike.  It lives in the host process only: a sandbox worker never loads it (a 135M
model per worker would blow the memory budget, and hostile code must not reach it).
"""
from __future__ import annotations

import threading


class TextLLM:
    """``batch(questions, long_answers) -> answers``: one left-padded generate per batch."""

    def __init__(self, name: str, dtype: str = "float32", max_new_tokens: int = 64,
                 short_tokens: int = 8, device: str | None = None):
        self.name = name
        self.dtype = dtype
        self.max_new_tokens = max_new_tokens
        self.short_tokens = short_tokens
        self.device = device
        self.model = self.tokenizer = None
        self._lock = threading.Lock()

    def load(self) -> "TextLLM":
        with self._lock:
            if self.model is None:
                import torch
                from policies.model import load_model

                model, tokenizer = load_model(self.name, self.dtype)
                device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
                self.model, self.tokenizer = model.to(device).eval(), tokenizer
                self.tokenizer.padding_side = "left"  # generation continues on the right
        return self

    def _prompt(self, question: str, long_answer: bool) -> str:
        # ViperGPT's llm_query asks for a short answer unless long_answer is set.
        text = question if long_answer else f"{question}\nAnswer in one or two words."
        messages = [{"role": "user", "content": text}]
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True)
        return text + "\n"

    def batch(self, questions: list, long_answers: list) -> list:
        import torch

        self.load()
        prompts = [self._prompt(q, bool(la)) for q, la in zip(questions, long_answers)]
        limit = self.max_new_tokens if any(long_answers) else self.short_tokens
        inputs = self.tokenizer(prompts, return_tensors="pt", padding=True).to(self.model.device)
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=limit, do_sample=False,
                                      pad_token_id=self.tokenizer.pad_token_id)
        new = out[:, inputs["input_ids"].shape[1]:]
        return [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]

    def __call__(self, question: str, long_answer: bool = True) -> str:
        return self.batch([question], [long_answer])[0]
