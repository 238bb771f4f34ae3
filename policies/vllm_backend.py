"""vLLM generation for GPU machines (the `gpu` extra: `make venv-gpu`).

vLLM pins its own CUDA torch, so it is imported only when `generation.backend: vllm`
is chosen (a missing vLLM is refused at start-up by train/machine.py, before any model
loads). It runs colocated with the trainer: one engine per training rank, on that rank's
GPU, taking `generation.gpu_memory_utilization` of it for its weights and KV cache, in
the config's `dtype`, holding at most `generation.max_model_len` tokens per sequence.

Sampling streams: every program is its own request with its own seed, derived from the
generator's seed (which the trainer sets per run seed, phase, iteration and rank, as on
the HF path) and the program's place in the call, so ranks never share a stream and a
resumed run draws what an uninterrupted one would, whatever vLLM batches together.

Adapters: each iteration's adapter is served through a LoRARequest with a new id, so
vLLM loads it from disk again (on every rank: every rank calls `load_adapter`) and no
cached KV of an older adapter is hit. The adapter is written by rank 0 only, so on
several nodes the run folder must be on a filesystem every node sees.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from policies.sampling import GenerationConfig, Sample, token_pieces, trim_to_program

# vLLM matches stop strings literally: these end the common top-level lines that follow
# a program early; the exact stop rule (`end_of_program`, bracket- and string-aware) is
# applied to every completion afterwards.
STOP = ["\n#", "\ndef ", "\nclass ", "\nprint(", "\n```", "\nif __name__", "\nexecute_command("]

INSTALL = "make venv-gpu (or pip install -e '.[gpu]')"


def request_seed(seed: int, index: int) -> int:
    """The seed of the `index`-th program of a call made with generator seed `seed`."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little") >> 1  # vLLM takes a non-negative int


class VLLMGenerator:
    def __init__(self, model: str, config: GenerationConfig | None = None, seed: int = 0, stop=None,
                 max_lora_rank: int = 16, dtype: str = "bfloat16", distributed: bool = False):
        try:
            from vllm import LLM
        except ImportError as e:
            raise ImportError(f"generation.backend=vllm needs vLLM, which is not installed: {INSTALL}") from e
        from policies.model import resolve

        self.config = config or GenerationConfig(backend="vllm")
        self.stop = stop  # the prompt family's rule: None is the program's end (then STOP ends early too)
        self.path = str(resolve(model))
        extra = {}
        if distributed:
            # One engine per training rank, each on its own GPU (as TRL's colocate mode does).
            extra["distributed_executor_backend"] = "external_launcher"
        if self.config.max_model_len is not None:
            extra["max_model_len"] = self.config.max_model_len
        self.llm = LLM(model=self.path, enable_prefix_caching=True, enable_lora=True,
                       max_lora_rank=_allowed_rank(max_lora_rank), seed=seed, dtype=dtype,
                       gpu_memory_utilization=self.config.gpu_memory_utilization, **extra)
        self.tokenizer = self.llm.get_tokenizer()
        self.eos = self.tokenizer.eos_token_id
        self._pieces = token_pieces(self.tokenizer)
        self.seed = seed
        self.adapter: str | None = None
        self._adapter_id = 0

    def load_adapter(self, path=None) -> None:
        """Serve the adapter saved at `path` (None: the base model); a new id each call,
        so vLLM reads it from disk again."""
        if path is not None and not (Path(path) / "adapter_config.json").is_file():
            raise FileNotFoundError(f"no adapter at {path} on this node: rank 0 writes it, so on several nodes "
                                    "output_dir must be on a filesystem every node sees")
        self.adapter = None if path is None else str(path)
        self._adapter_id += 1

    def reseed(self, seed: int) -> None:
        self.seed = seed

    def drain(self) -> None:
        """Each rank's engine runs on its own: nothing to keep in step."""

    def generate(self, prompts: list[str], n: int = 1, *, temperature: float | None = None,
                 max_new_tokens: int | None = None, progress: bool = False, desc: str = "generate") -> list[Sample]:
        from vllm import SamplingParams, TokensPrompt
        from vllm.lora.request import LoRARequest

        cfg = self.config
        lora = LoRARequest(f"it{self._adapter_id}", self._adapter_id, self.adapter) if self.adapter else None
        # Token ids from our tokenizer call, as on the HF path (vLLM would add special tokens).
        ids = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        rows = [i for i in range(len(prompts)) for _ in range(n)]  # grouped by prompt, as HF returns them
        params = [SamplingParams(n=1, temperature=cfg.temperature if temperature is None else temperature,
                                 top_p=cfg.top_p, max_tokens=max_new_tokens or cfg.max_new_tokens,
                                 stop=STOP if self.stop is None else None, seed=request_seed(self.seed, k))
                  for k in range(len(rows))]
        self.seed += 1  # the next call draws fresh samples; reseed() restarts the stream
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=ids[i]) for i in rows], params,
                                    lora_request=lora, use_tqdm=progress)
        samples = []
        for i, out in zip(rows, outputs):
            comp = out.outputs[0]
            tokens = list(comp.token_ids)
            eos = bool(tokens) and tokens[-1] == self.eos  # the loop adds its own EOS when it trains
            tokens = tokens[:-1] if eos else tokens
            matched = comp.stop_reason if isinstance(comp.stop_reason, str) else ""
            tokens, ended = trim_to_program(tokens, self._pieces, tail=matched, stop=self.stop)
            samples.append(Sample(i, ids[i], tokens, self.tokenizer.decode(tokens, skip_special_tokens=True),
                                  finished=ended or eos))
        return samples


def _allowed_rank(r: int) -> int:
    """vLLM accepts only some max_lora_rank values; take the smallest that fits r."""
    for allowed in (8, 16, 32, 64, 128, 256, 320, 512):
        if r <= allowed:
            return allowed
    return r
