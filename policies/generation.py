"""Program sampling behind one protocol, with a Hugging Face and a vLLM backend.

Every generator the trainer, the evaluator and the self-play loop use offers

    generate(prompts, n=1, *, temperature=None, max_new_tokens=None, progress=False, desc=...)
        -> list[Sample], len(prompts) * n, grouped by prompt; None takes the config's value
    load_adapter(path | None)   sample from the adapter saved at `path` from now on
    reseed(seed)                restart the sampler's random stream
    drain()                     under ZeRO-3: idle until every rank has finished generating

and `make_generator` builds the one the config names. The HF backend here is for CPUs
and small GPUs: `transformers.generate` recomputes the API text and in-context examples
for every row and keeps finished rows in the batch, while per-step overhead rather than
FLOPs bounds decoding on a CPU. So this loop (1) prefills the prompt prefix shared by the
whole batch once and copies its KV cache to every row, (2) drops rows from the batch as
soon as their program ends, and (3) stops at the end of the function instead of at EOS.
"""

from __future__ import annotations

import copy
from typing import Callable

import torch
from tqdm.auto import tqdm

from policies.kv import cache_of, forward, reserve, shared_prefix_length
from policies.sampling import (GenerationConfig, Generator, RegexStop, Sample, keeps_token, stop_rule,  # noqa: F401
                               token_pieces, trim_to_program)


def sample_top_p(logits: torch.Tensor, temperature: float, top_p: float, generator) -> torch.Tensor:
    logits = logits.float()
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        # Keep the smallest set whose mass reaches top_p; the top token always survives.
        drop = sorted_probs.cumsum(-1) - sorted_probs > top_p
        sorted_probs = sorted_probs.masked_fill(drop, 0.0)
        choice = torch.multinomial(sorted_probs, 1, generator=generator)
        return order.gather(-1, choice).squeeze(-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def any_rank(device) -> Callable[[bool], bool]:
    """`sync(flag) -> True if any rank passed True`: one all-reduce (MAX) per call."""
    import torch.distributed as dist

    def sync(flag: bool) -> bool:
        t = torch.tensor([int(flag)], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    return sync


class HFGenerator:
    """Samples completions from a causal LM held in memory.

    In the trainer this is the training model itself, updated in place, so
    `load_adapter(path)` has nothing to load: the adapter saved at `path` already is its
    weights; the call drops the prefix KV computed with the old ones.

    `stop` is the prompt family's stop rule (`stop_rule`; None: the end of the program).
    `sync` keeps forwards in step across ranks (ZeRO-3 gathers each layer's weights in
    every forward, so ranks must run the same number): each forward is preceded by
    `sync(True)`, and `drain()` runs one-token forwards while `sync(False)` says another
    rank still has work, as `synced_gpus` does for `model.generate`. The trainer drains
    at the end of each phase (rollout, evaluation), so ranks may make different numbers
    of `generate` calls in between (refinement rounds, judge prompts).
    """

    def __init__(self, model, tokenizer, config: GenerationConfig | None = None, seed: int = 0,
                 stop=None, sync: Callable[[bool], bool] | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.config = config or GenerationConfig()
        self.device = next(model.parameters()).device
        self._rng = torch.Generator(device=self.device).manual_seed(seed)
        self._new_stop = stop_rule(stop)
        self._sync = sync
        self.forwards = 0  # model calls made, for tests of the lock-step
        self._prefix_cache: dict[tuple, object] = {}
        self.stop_ids = {i for i in (tokenizer.eos_token_id, tokenizer.pad_token_id) if i is not None}
        self._pieces = token_pieces(tokenizer)

    def load_adapter(self, path=None) -> None:
        self._prefix_cache.clear()

    def reseed(self, seed: int) -> None:
        self._rng.manual_seed(seed)

    @torch.no_grad()
    def drain(self) -> None:
        while self._sync is not None and self._sync(False):
            self._forward(input_ids=torch.full((1, 1), self.tokenizer.pad_token_id, device=self.device), idle=True)

    @torch.no_grad()
    def generate(self, prompts: list[str], n: int = 1, *, temperature: float | None = None,
                 max_new_tokens: int | None = None, progress: bool = False, desc: str = "generate") -> list[Sample]:
        temperature = self.config.temperature if temperature is None else temperature
        max_new_tokens = self.config.max_new_tokens if max_new_tokens is None else max_new_tokens
        encoded = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        rows = [(i, ids) for i, ids in enumerate(encoded) for _ in range(n)]
        out: list[Sample] = []
        bs = self.config.batch_size
        bar = tqdm(total=len(rows), desc=desc, unit="prog", disable=not progress, leave=False)
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(rows), bs):
                chunk = rows[start : start + bs]
                out.extend(self._generate_chunk(chunk, temperature, max_new_tokens))
                bar.update(len(chunk))
        finally:
            self.model.train(was_training)
            bar.close()
        return out

    def _forward(self, cache=None, idle: bool = False, **kwargs):
        if self._sync is not None and not idle:
            self._sync(True)
        self.forwards += 1
        return forward(self.model, cache, **kwargs)

    def _prefix_kv(self, prefix: tuple):
        cache = self._prefix_cache.get(prefix)
        if cache is None:
            ids = torch.tensor([prefix], device=self.device)
            cache = cache_of(self._forward(input_ids=ids, use_cache=True, logits_to_keep=1))
            self._prefix_cache = {prefix: cache}  # one entry: prompts share one prefix
        return copy.deepcopy(cache)

    def _generate_chunk(self, chunk: list[tuple[int, list[int]]], temperature: float,
                        max_new_tokens: int) -> list[Sample]:
        cfg, dev = self.config, self.device
        token_rows = [ids for _, ids in chunk]
        p = shared_prefix_length(token_rows) if cfg.prefix_cache else 0
        suffixes = [ids[p:] for ids in token_rows]
        b, s = len(chunk), max(len(x) for x in suffixes)
        pad = self.tokenizer.pad_token_id
        # Padding sits between the shared prefix and each row's own tokens, so the prefix
        # KV is identical for every row; positions come from the mask, skipping the pads.
        suffix_ids = torch.full((b, s), pad, dtype=torch.long)
        mask = torch.zeros((b, p + s), dtype=torch.long)
        mask[:, :p] = 1
        for r, ids in enumerate(suffixes):
            suffix_ids[r, s - len(ids) :] = torch.tensor(ids)
            mask[r, p + s - len(ids) :] = 1
        suffix_ids, mask = suffix_ids.to(dev), mask.to(dev)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        past = None
        if p:
            past = self._prefix_kv(tuple(token_rows[0][:p]))
            past.batch_repeat_interleave(b)
        logits = self._forward(past, input_ids=suffix_ids, attention_mask=mask, position_ids=positions[:, p:],
                               use_cache=True, logits_to_keep=1)
        past = cache_of(logits)
        reserve(past, max_new_tokens)
        next_logits = logits.logits[:, -1]
        last_pos = positions[:, -1]

        alive = list(range(b))  # batch row -> chunk row
        generated: list[list[int]] = [[] for _ in range(b)]
        stops = [self._new_stop() for _ in range(b)]
        finished = [False] * b
        for _step in range(max_new_tokens):
            tokens = sample_top_p(next_logits, temperature, cfg.top_p, self._rng).tolist()
            keep = []
            for j, row in enumerate(alive):
                tok = tokens[j]
                if tok in self.stop_ids:
                    finished[row] = True
                    continue
                piece = self._pieces[tok]
                kept = stops[row].feed(piece)
                if kept is not None:  # the program ended in or before this token
                    finished[row] = True
                    if keeps_token(piece, kept):
                        generated[row].append(tok)
                    continue
                generated[row].append(tok)
                keep.append(j)
            if not keep:
                break
            index = torch.tensor(keep, device=dev)
            if len(keep) < len(alive):
                past.batch_select_indices(index)
                mask = mask[index]
                last_pos = last_pos[index]
                alive = [alive[j] for j in keep]
            mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
            last_pos = last_pos + 1
            step_ids = torch.tensor([[tokens[j]] for j in keep], device=dev)
            out = self._forward(past, input_ids=step_ids, attention_mask=mask, position_ids=last_pos[:, None],
                                use_cache=True)
            past = cache_of(out)
            next_logits = out.logits[:, -1]

        samples = []
        for row, (prompt_index, ids) in enumerate(chunk):
            text = self.tokenizer.decode(generated[row], skip_special_tokens=True)
            samples.append(Sample(prompt_index, ids, generated[row], text, finished[row]))
        return samples


def make_generator(cfg: GenerationConfig, policy, tokenizer, *, model: str, seed: int, stop=None,
                   max_lora_rank: int = 16, world: int = 1, sync: Callable[[bool], bool] | None = None,
                   dtype: str = "bfloat16") -> Generator:
    """The generator `generation.backend` names: `hf` samples from `policy` in memory;
    `vllm` runs an engine on the model at `model` in `dtype` (the config's) and serves
    each saved adapter. `stop` is the prompt family's (`stop_rule`)."""
    if cfg.backend == "vllm":
        from policies.vllm_backend import VLLMGenerator

        return VLLMGenerator(model, cfg, seed=seed, stop=stop, max_lora_rank=max_lora_rank, dtype=dtype,
                             distributed=world > 1)
    return HFGenerator(policy, tokenizer, cfg, seed=seed, stop=stop, sync=sync)
