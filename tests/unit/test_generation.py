"""Batched sampling with shared-prefix KV reuse, on a tiny Llama."""

import torch

from policies.generation import GenerationConfig, HFGenerator, sample_top_p
from tests.helpers.tiny import TinyTokenizer, tiny_lora_model

PROMPTS = ["shared prefix text: question one", "shared prefix text: q2", "shared prefix text: third question?"]


def _generate(prefix_cache, batch_size=8, temperature=1.0):
    model = tiny_lora_model(seed=3)
    cfg = GenerationConfig(temperature=temperature, top_p=0.9, max_new_tokens=12, batch_size=batch_size,
                           prefix_cache=prefix_cache)
    return HFGenerator(model, TinyTokenizer(), cfg, seed=7).generate(PROMPTS, n=2)


def test_prefix_reuse_gives_the_same_samples_as_full_prefill():
    with_cache, without = _generate(True), _generate(False)
    assert [s.completion_ids for s in with_cache] == [s.completion_ids for s in without]
    assert any(s.completion_ids for s in with_cache)


def test_grouping_and_prompt_ids():
    samples = _generate(True, batch_size=4)
    assert [s.prompt_index for s in samples] == [0, 0, 1, 1, 2, 2]
    tok = TinyTokenizer()
    for s in samples:
        assert s.prompt_ids == tok(PROMPTS[s.prompt_index])["input_ids"]
        assert len(s.completion_ids) <= 12


def test_greedy_is_deterministic_across_batchings():
    a = _generate(True, batch_size=6, temperature=0.0)
    b = _generate(True, batch_size=1, temperature=0.0)
    assert [s.completion_ids for s in a] == [s.completion_ids for s in b]


def test_stops_at_first_unindented_line():
    """The program ends at the first line starting at column 0: that token is dropped."""

    class Scripted(torch.nn.Module):
        # Emits "  a\n  b\nX..." one character per step, whatever the input.
        script = [ord(c) for c in "  a\n  b\nXYZ"]

        def __init__(self, model):
            super().__init__()
            self.model = model
            self.step = 0

        def forward(self, **kw):
            out = self.model(**kw)
            logits = torch.full_like(out.logits, -1e9)
            logits[..., self.script[min(self.step, len(self.script) - 1)]] = 0
            self.step += 1
            out.logits = logits
            return out

    gen = HFGenerator(Scripted(tiny_lora_model()), TinyTokenizer(),
                      GenerationConfig(max_new_tokens=20, batch_size=1, prefix_cache=False))
    (sample,) = gen.generate(["p"], n=1)
    assert sample.text == "  a\n  b\n" and sample.finished


def test_top_p_never_samples_outside_the_nucleus():
    logits = torch.log(torch.tensor([[0.6, 0.3, 0.05, 0.05]]))
    g = torch.Generator().manual_seed(0)
    draws = {int(sample_top_p(logits, 1.0, 0.8, g)) for _ in range(300)}
    assert draws == {0, 1}
    assert int(sample_top_p(logits, 0.0, 0.9, g)) == 0


def test_bf16_sampling_distribution_tracks_fp32():
    """bf16 weights must not distort what is sampled: the top-p distributions of the
    next token stay within a small total-variation distance of the fp32 ones."""
    ids = torch.tensor([[ord(c) for c in "def execute_command(image):\n    return "]])
    probs = {}
    for dtype in (torch.float32, torch.bfloat16):
        model = tiny_lora_model(seed=4, dtype=dtype)
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, -1].float()
        probs[dtype] = torch.softmax(logits, -1)
    tv = 0.5 * float((probs[torch.float32] - probs[torch.bfloat16]).abs().sum())
    assert tv < 0.02, tv
