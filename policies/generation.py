"""Batched sampling on the Hugging Face path, with shared-prefix KV reuse.

`transformers.generate` recomputes the API text and in-context examples for every row
and keeps finished rows in the batch. On a CPU, per-step overhead rather than FLOPs
bounds decoding, so this loop (1) prefills the prompt prefix shared by the whole batch
once and copies its KV cache to every row, (2) drops rows from the batch as soon as
their program ends, and (3) stops at the end of the function instead of at EOS.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from policies.kv import cache_of, forward, reserve, shared_prefix_length


@dataclass
class GenerationConfig:
    temperature: float = 1.0
    top_p: float = 0.9
    max_new_tokens: int = 320
    batch_size: int = 32
    prefix_cache: bool = True
    backend: str = "hf"
    # A regex over (last character + new token text): a match ends the row and drops the
    # token. The default ends a program at its first line outside `execute_command`.
    stop: str = r"\n\S"


@dataclass
class Sample:
    prompt_index: int
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    finished: bool = True
    extra: dict = field(default_factory=dict)


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


class HFGenerator:
    """Samples completions from a causal LM; `weights_changed()` after each update."""

    def __init__(self, model, tokenizer, config: GenerationConfig | None = None, seed: int = 0):
        self.model = model
        self.tokenizer = tokenizer
        self.config = config or GenerationConfig()
        self._stop = re.compile(self.config.stop)
        self.generator = torch.Generator().manual_seed(seed)
        self._prefix_cache: dict[tuple, object] = {}
        self.stop_ids = {i for i in (tokenizer.eos_token_id, tokenizer.pad_token_id) if i is not None}
        # Token text pieces for cheap incremental stop detection; the final text is decoded
        # properly from the ids.
        self._pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        self._pieces = [tokenizer.convert_tokens_to_string([p]) if p is not None else "" for p in self._pieces]

    @property
    def temperature(self) -> float:
        return self.config.temperature

    @temperature.setter
    def temperature(self, value: float) -> None:
        self.config.temperature = value

    def weights_changed(self, adapter_dir=None) -> None:
        """Drop cached prefix KV: it was computed with the previous weights."""
        self._prefix_cache.clear()

    @torch.no_grad()
    def generate(self, prompts: list[str], n: int = 1, progress: bool = False, desc: str = "generate") -> list[Sample]:
        """Return len(prompts) * n samples, grouped by prompt (all n of prompt 0 first)."""
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
                out.extend(self._generate_chunk(chunk))
                bar.update(len(chunk))
        finally:
            self.model.train(was_training)
            bar.close()
        return out

    def _prefix_kv(self, prefix: tuple):
        cache = self._prefix_cache.get(prefix)
        if cache is None:
            ids = torch.tensor([prefix])
            cache = cache_of(forward(self.model, input_ids=ids, use_cache=True, logits_to_keep=1))
            self._prefix_cache = {prefix: cache}  # one entry: prompts share one prefix
        return copy.deepcopy(cache)

    def _generate_chunk(self, chunk: list[tuple[int, list[int]]]) -> list[Sample]:
        cfg, model = self.config, self.model
        token_rows = [ids for _, ids in chunk]
        p = shared_prefix_length(token_rows) if cfg.prefix_cache and len(token_rows) > 1 else 0
        if cfg.prefix_cache and len(token_rows) == 1:
            p = len(token_rows[0]) - 1
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
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        past = None
        if p:
            past = self._prefix_kv(tuple(token_rows[0][:p]))
            past.batch_repeat_interleave(b)
        logits = forward(
            model, past, input_ids=suffix_ids, attention_mask=mask, position_ids=positions[:, p:],
            use_cache=True, logits_to_keep=1,
        )
        past = cache_of(logits)
        reserve(past, cfg.max_new_tokens)
        next_logits = logits.logits[:, -1]
        last_pos = positions[:, -1]

        alive = list(range(b))  # batch row -> chunk row
        generated: list[list[int]] = [[] for _ in range(b)]
        texts = [""] * b
        finished = [False] * b
        for _step in range(cfg.max_new_tokens):
            tokens = sample_top_p(next_logits, cfg.temperature, cfg.top_p, self.generator)
            keep = []
            for j, row in enumerate(alive):
                tok = int(tokens[j])
                if tok in self.stop_ids:
                    finished[row] = True
                    continue
                piece = self._pieces[tok]
                tail = texts[row][-1:] + piece
                if self._stop.search(tail):  # the token leaves the function: drop it and stop
                    finished[row] = True
                    continue
                generated[row].append(tok)
                texts[row] += piece
                keep.append(j)
            if not keep:
                break
            if len(keep) < len(alive):
                index = torch.tensor(keep)
                past.batch_select_indices(index)
                mask = mask[index]
                last_pos = last_pos[index]
                tokens = tokens[index]
                alive = [alive[j] for j in keep]
            mask = torch.cat([mask, torch.ones((len(alive), 1), dtype=torch.long)], dim=1)
            last_pos = last_pos + 1
            out = forward(
                model, past, input_ids=tokens[:, None], attention_mask=mask, position_ids=last_pos[:, None],
                use_cache=True,
            )
            past = cache_of(out)
            next_logits = out.logits[:, -1]

        samples = []
        for row, (prompt_index, ids) in enumerate(chunk):
            text = self.tokenizer.decode(generated[row], skip_special_tokens=True)
            samples.append(Sample(prompt_index, ids, generated[row], text, finished[row]))
        return samples
