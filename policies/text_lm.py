"""A frozen causal LM for the text vprl asks of a model other than the policy being
trained: unit-test, property-test and layout candidates (sampled), ``llm_query`` in the
tool host and VLAgent's caption judge (greedy answers).

Loaded with ``policies.model.load_model``, so the embedded SmolLM2 and any local causal
LM work alike.  One frozen copy per (model, dtype) per process, whoever asks: never the
adapter being trained (a policy that wrote its own tests could agree with itself).
In the tool host it lives outside the sandbox: a worker never loads it.
"""
from __future__ import annotations

import functools
import hashlib
import threading

from policies import DEFAULT_MODEL

# A sampled reply ends at a blank line or when the model starts the next "Query:".
STOP = r"\n\s*\n|\nQ|\n#|<\|im_end\|>"


@functools.lru_cache(maxsize=None)
def frozen_model(name: str, dtype: str):
    """(model, tokenizer), loaded once per process and never trained."""
    from policies.model import load_model

    model, tokenizer = load_model(name, dtype)
    model.eval()
    model.requires_grad_(False)
    return model, tokenizer


class TextLM:
    """``lm(prompts, n) -> [[reply] * n per prompt]`` samples with the policy's batched
    sampler (shared-prefix KV reuse: in-context examples are prefilled once);
    ``lm.batch(questions, long_answers) -> answers`` answers greedily, chat-templated, in
    one left-padded generate.  ViUniT D.1's sampling defaults: temperature 0.7, top_p 0.9,
    512 new tokens."""

    def __init__(self, model: str = DEFAULT_MODEL, temperature: float = 0.7, top_p: float = 0.9,
                 max_new_tokens: int = 512, batch_size: int = 96, seed: int = 0, dtype: str = "float32",
                 stop: str = STOP, short_tokens: int = 8, answer_tokens: int = 64, device: str | None = None):
        self.name = model
        self.settings = dict(temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                             batch_size=batch_size)
        self.stop, self.seed, self.dtype, self.device = stop, seed, dtype, device
        self.short_tokens, self.answer_tokens = short_tokens, answer_tokens
        self.model = None  # a caller may hand in a loaded model and tokenizer (the policy as judge)
        self._tokenizer = None
        self._sampler = None
        self._lock = threading.Lock()  # the tool host answers from several threads

    @property
    def tokenizer(self):
        """Loads the model on first use: prompt builders read its chat template."""
        return self._tokenizer if self._tokenizer is not None else self.load()._tokenizer

    @tokenizer.setter
    def tokenizer(self, tokenizer) -> None:
        self._tokenizer = tokenizer

    def load(self) -> "TextLM":
        with self._lock:
            if self.model is None:
                import torch

                model, self._tokenizer = frozen_model(self.name, self.dtype)
                device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
                self.model = model.to(device)
        return self

    # -- sampling (test and layout candidates) -------------------------------------
    def __call__(self, prompts: list[str], n: int = 1, progress: bool = False,
                 desc: str = "unit tests") -> list[list[str]]:
        sampler = self._load_sampler()
        # Seeded by what is asked, not by how much was sampled before: a resumed run draws
        # the same candidates for the same questions as an uninterrupted one.
        key = hashlib.sha256("\0".join([str(self.seed), str(n), *prompts]).encode()).digest()
        sampler.reseed(int.from_bytes(key[:8], "little") >> 1)
        out: list[list[str]] = [[] for _ in prompts]
        for s in sampler.generate(prompts, n=n, progress=progress, desc=desc):
            out[s.prompt_index].append(s.text)
        return out

    def _load_sampler(self):
        if self._sampler is None:
            from policies.generation import GenerationConfig, HFGenerator

            self.load()
            self._sampler = HFGenerator(self.model, self.tokenizer, GenerationConfig(**self.settings),
                                        seed=self.seed, stop=self.stop)
        return self._sampler

    # -- answering (llm_query, the caption judge) ------------------------------------
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
        self.tokenizer.padding_side = "left"  # generation continues on the right
        prompts = [self._prompt(q, bool(la)) for q, la in zip(questions, long_answers)]
        limit = self.answer_tokens if any(long_answers) else self.short_tokens
        inputs = self.tokenizer(prompts, return_tensors="pt", padding=True).to(self.model.device)
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=limit, do_sample=False,
                                      pad_token_id=self.tokenizer.pad_token_id)
        new = out[:, inputs["input_ids"].shape[1]:]
        return [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]

    def answer(self, question: str, long_answer: bool = True) -> str:
        return self.batch([question], [long_answer])[0]
