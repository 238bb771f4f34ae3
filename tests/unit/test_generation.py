"""Batched sampling with shared-prefix KV reuse, on a tiny Llama."""

import threading

import torch

from policies.generation import GenerationConfig, HFGenerator, RegexStop, sample_top_p, trim_to_program
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


class Scripted(torch.nn.Module):
    """Emits `script` one character per step, whatever the input."""

    def __init__(self, model, script: str):
        super().__init__()
        self.model = model
        self.script = [ord(c) for c in script]
        self.step = 0

    def forward(self, **kw):
        out = self.model(**kw)
        logits = torch.full_like(out.logits, -1e9)
        logits[..., self.script[min(self.step, len(self.script) - 1)]] = 0
        self.step += 1
        out.logits = logits
        return out


def _scripted(script: str, **kw):
    gen = HFGenerator(Scripted(tiny_lora_model(), script), TinyTokenizer(),
                      GenerationConfig(max_new_tokens=60, batch_size=1, prefix_cache=False), **kw)
    (sample,) = gen.generate(["p"], n=1)
    return sample


def test_stops_at_first_unindented_line():
    """The program ends at the first line starting at column 0: that token is dropped."""
    sample = _scripted("  a\n  b\nXYZ")
    assert sample.text == "  a\n  b\n" and sample.finished


def test_column0_lines_inside_a_multiline_call_or_string_do_not_stop():
    sample = _scripted('  x = f(\nA,\n)\n  s = """\nB\n"""\n  return x\n# Query: next')
    assert sample.text == '  x = f(\nA,\n)\n  s = """\nB\n"""\n  return x\n' and sample.finished


def test_a_custom_stop_rule_for_free_text():
    sample = _scripted("caption one\ncaption two\n\nQuery: more", stop=lambda: RegexStop(r"\n\s*\n"))
    assert sample.text == "caption one\ncaption two\n" and sample.finished


def test_per_call_temperature_and_length_leave_the_config_alone():
    cfg = GenerationConfig(temperature=1.0, max_new_tokens=12, batch_size=8)
    gen = HFGenerator(tiny_lora_model(seed=3), TinyTokenizer(), cfg, seed=7)
    greedy = gen.generate(PROMPTS, n=1, temperature=0.0, max_new_tokens=5)
    assert all(len(s.completion_ids) <= 5 for s in greedy)
    assert (cfg.temperature, cfg.max_new_tokens) == (1.0, 12)
    assert [s.completion_ids for s in greedy] == [s.completion_ids for s in gen.generate(PROMPTS, n=1, temperature=0.0,
                                                                                           max_new_tokens=5)]


def test_reseed_restarts_the_random_stream():
    gen = HFGenerator(tiny_lora_model(seed=3), TinyTokenizer(), GenerationConfig(max_new_tokens=10), seed=1)
    first = [s.completion_ids for s in gen.generate(PROMPTS, n=2)]
    assert [s.completion_ids for s in gen.generate(PROMPTS, n=2)] != first
    gen.reseed(1)
    assert [s.completion_ids for s in gen.generate(PROMPTS, n=2)] == first


def test_trim_replays_the_stop_rule_on_finished_tokens():
    """The vLLM path: tokens past the program's end never become training targets."""
    tok = TinyTokenizer()
    pieces = [tok.decode([i]) for i in range(tok.vocab)]
    ids = tok("  x = [\n1]\n  return x\nprint(1)")["input_ids"]
    kept, ended = trim_to_program(ids, pieces)
    assert tok.decode(kept) == "  x = [\n1]\n  return x\n" and ended
    # a stop string the backend already removed still ends the program...
    kept, ended = trim_to_program(tok("  return 1")["input_ids"], pieces, tail="\n#")
    assert tok.decode(kept) == "  return 1" and ended
    # ...but not when it matched inside an open bracket
    kept, ended = trim_to_program(tok("  x = f(")["input_ids"], pieces, tail="\n#")
    assert tok.decode(kept) == "  x = f(" and not ended


def test_ranks_run_the_same_number_of_forwards_when_synced():
    """ZeRO-3 lock-step: two "ranks" (threads, with an all-reduce built on a barrier)
    generate for different numbers of prompts and lengths; after `drain` both made the
    same number of model calls, so every gather of partitioned weights has a partner."""
    barrier, flags = threading.Barrier(2), {}

    def sync_for(rank):
        def sync(flag):
            flags[rank] = flag
            barrier.wait()
            result = any(flags.values())
            barrier.wait()
            return result
        return sync

    counts, texts = {}, {}

    def rank(r, prompts, max_new):
        gen = HFGenerator(tiny_lora_model(seed=3), TinyTokenizer(),
                          GenerationConfig(max_new_tokens=max_new, batch_size=2), seed=r, sync=sync_for(r))
        texts[r] = [s.text for s in gen.generate(prompts, n=1)]
        texts[r] += [s.text for s in gen.generate(prompts[:1], n=1)]  # different call counts are fine too
        if r == 0:
            gen.generate(prompts[:1], n=1)
        gen.drain()
        counts[r] = gen.forwards

    threads = [threading.Thread(target=rank, args=(0, PROMPTS, 14)), threading.Thread(target=rank, args=(1, PROMPTS[:1], 3))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert counts[0] == counts[1] > 0, counts
    assert len(texts[0]) == 4 and len(texts[1]) == 2


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
