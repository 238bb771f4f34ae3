"""ψ implemented by an LLM: candidate tests from the query (and optionally the program).

ViUniT D.1 samples 3 replies at temperature 0.7, top_p 0.9, up to 512 new tokens. The
default model is the embedded policy model in its base form (never the adapter being
trained: a policy that wrote its own tests could agree with itself).
"""

from __future__ import annotations

import functools
import hashlib

from policies import DEFAULT_MODEL
from rewards.unit_tests import prompts
from rewards.unit_tests.parse import candidates_from_replies
from rewards.unit_tests.types import UnitTest

# A reply ends at a blank line or when the model starts the next "Query:".
STOP = r"\n\s*\n|\nQ|\n#|<\|im_end\|>"


@functools.lru_cache(maxsize=None)
def _shared_model(name: str, dtype: str):
    """One frozen copy per process: the test writer and the layout writer share it."""
    from policies.model import load_model

    model, tokenizer = load_model(name, dtype)
    model.eval()
    model.requires_grad_(False)
    return model, tokenizer


class TextSampler:
    """`complete(prompts, n)` over a Hugging Face causal LM, with the batched sampler the
    policy uses (shared-prefix KV reuse: the in-context examples are prefilled once)."""

    def __init__(self, model: str = DEFAULT_MODEL, temperature: float = 0.7,
                 top_p: float = 0.9, max_new_tokens: int = 512, batch_size: int = 96, seed: int = 0,
                 dtype: str = "float32", stop: str = STOP):
        self.name = model
        self.settings = dict(temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                             batch_size=batch_size, stop=stop)
        self.seed, self.dtype = seed, dtype
        self._generator = None

    @property
    def tokenizer(self):
        return self._load().tokenizer

    def _load(self):
        if self._generator is None:
            from policies.generation import GenerationConfig, HFGenerator

            model, tokenizer = _shared_model(self.name, self.dtype)
            settings = dict(self.settings)
            stop = settings.pop("stop")
            self._generator = HFGenerator(model, tokenizer, GenerationConfig(**settings), seed=self.seed, stop=stop)
        return self._generator

    def __call__(self, prompts: list[str], n: int = 1, progress: bool = False) -> list[list[str]]:
        generator = self._load()
        # Seeded by what is asked, not by how much was sampled before: a resumed run draws
        # the same candidates for the same questions as an uninterrupted one.
        key = hashlib.sha256("\0".join([str(self.seed), str(n), *prompts]).encode()).digest()
        generator.reseed(int.from_bytes(key[:8], "little") >> 1)
        samples = generator.generate(prompts, n=n, progress=progress, desc="unit tests")
        out: list[list[str]] = [[] for _ in prompts]
        for s in samples:
            out[s.prompt_index].append(s.text)
        return out


class LLMTestGenerator:
    """Candidate tests for many questions in one batched call."""

    def __init__(self, complete=None, tokenizer=None, sequences: int = 3, with_program: bool = False):
        self.complete = complete if complete is not None else TextSampler()
        self.tokenizer = tokenizer if tokenizer is not None else getattr(self.complete, "tokenizer", None)
        self.sequences = sequences
        self.with_program = with_program

    def __call__(self, questions: list[str], programs: list[str] | None = None,
                 progress: bool = False) -> list[list[UnitTest]]:
        if self.with_program and programs is None:
            raise ValueError("the query+implementation generator needs the programs")
        texts = [prompts.render(self.tokenizer, q, programs[i] if self.with_program else None)
                 for i, q in enumerate(questions)]
        kwargs = {"progress": progress} if isinstance(self.complete, TextSampler) else {}
        replies = self.complete(texts, self.sequences, **kwargs)
        # The prompt already holds the first line's opening; give it back to each reply.
        return [candidates_from_replies([prompts.OPENING + r for r in rs]) for rs in replies]
