"""ψ implemented by an LLM (the `llm` test source): candidate tests from the query (and
optionally the program).

ViUniT D.1 samples 3 replies at temperature 0.7, top_p 0.9, up to 512 new tokens
(``policies.text_lm.TextLM``'s defaults). The default model is the embedded policy model
in its base form (never the adapter being trained: a policy that wrote its own tests
could agree with itself).
"""

from __future__ import annotations

from policies.text_lm import TextLM
from rewards.unit_tests import prompts
from rewards.unit_tests.parse import candidates_from_replies
from rewards.unit_tests.types import UnitTest

class LLMTestSource:
    """Candidate tests for many questions in one batched call."""

    def __init__(self, complete=None, tokenizer=None, sequences: int = 3, with_program: bool = False):
        self.complete = complete if complete is not None else TextLM()
        self.tokenizer = tokenizer if tokenizer is not None else getattr(self.complete, "tokenizer", None)
        self.sequences = sequences
        self.with_program = with_program

    def __call__(self, questions: list[str], programs: list[str] | None = None,
                 progress: bool = False) -> list[list[UnitTest]]:
        if self.with_program and programs is None:
            raise ValueError("the query+implementation test source needs the programs")
        texts = [prompts.render(self.tokenizer, q, programs[i] if self.with_program else None)
                 for i, q in enumerate(questions)]
        kwargs = {"progress": progress} if isinstance(self.complete, TextLM) else {}
        replies = self.complete(texts, self.sequences, **kwargs)
        # The prompt already holds the first line's opening; give it back to each reply.
        return [candidates_from_replies([prompts.OPENING + r for r in rs]) for rs in replies]
