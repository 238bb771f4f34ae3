"""vLLM generation for GPU machines (optional extra: `pip install -e '.[vllm]'`).

vLLM pins its own CUDA torch, so it is imported only when `generation.backend: vllm`
is chosen. Prefix caching gives the shared-prompt reuse the HF path does by hand, and
each iteration's LoRA adapter is served through a LoRARequest without merging.
"""

from __future__ import annotations

from policies.generation import Sample

# vLLM matches stop strings literally; these cover the common ways a program's body ends
# (the HF path stops at any unindented line; extraction trims whatever remains).
STOP = ["\n#", "\ndef ", "\nclass ", "\nprint(", "\n```", "\nif __name__", "\nexecute_command("]


class VLLMGenerator:
    def __init__(self, model: str, temperature: float = 1.0, top_p: float = 0.9, max_new_tokens: int = 320,
                 seed: int = 0, max_lora_rank: int = 16, gpu_memory_utilization: float = 0.5,
                 dtype: str = "bfloat16", distributed: bool = False, **_):
        try:
            from vllm import LLM
        except ImportError as e:
            raise ImportError("generation.backend: vllm needs the extra: pip install -e '.[vllm]' (GPU machines)") from e
        from policies.model import resolve

        self.path = str(resolve(model))
        extra = {}
        if distributed:
            # One engine per training rank, each on its own GPU (as TRL's colocate mode does).
            extra["distributed_executor_backend"] = "external_launcher"
        self.llm = LLM(model=self.path, enable_prefix_caching=True, enable_lora=True,
                       max_lora_rank=_allowed_rank(max_lora_rank), seed=seed, dtype=dtype,
                       gpu_memory_utilization=gpu_memory_utilization, **extra)
        self.tokenizer = self.llm.get_tokenizer()
        self.eos = self.tokenizer.eos_token_id
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.adapter: str | None = None
        self._adapter_id = 0

    def weights_changed(self, adapter_dir: str | None = None) -> None:
        """Serve the adapter saved at `adapter_dir` from now on (a new id busts vLLM's cache)."""
        if adapter_dir is not None:
            self.adapter = str(adapter_dir)
            self._adapter_id += 1

    def generate(self, prompts: list[str], n: int = 1, progress: bool = False, desc: str = "generate") -> list[Sample]:
        from vllm import SamplingParams, TokensPrompt
        from vllm.lora.request import LoRARequest

        params = SamplingParams(n=n, temperature=self.temperature, top_p=self.top_p,
                                max_tokens=self.max_new_tokens, stop=STOP)
        lora = LoRARequest(f"it{self._adapter_id}", self._adapter_id, self.adapter) if self.adapter else None
        # Token ids from our tokenizer call, as on the HF path (vLLM would add special tokens).
        ids = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=i) for i in ids], params,
                                    lora_request=lora, use_tqdm=progress)
        samples = []
        for i, out in enumerate(outputs):
            for comp in out.outputs:
                tokens = self._trim(list(comp.token_ids), comp.text)
                samples.append(Sample(i, ids[i], tokens, comp.text, finished=comp.finish_reason != "length"))
        return samples

    def _trim(self, tokens: list[int], text: str) -> list[int]:
        """Token ids matching the returned text: vLLM trims the text at a stop string but
        keeps the tokens that completed it, and keeps a sampled EOS (the loop adds its own)."""
        if tokens and tokens[-1] == self.eos:
            tokens = tokens[:-1]
        while tokens and len(self.tokenizer.decode(tokens[:-1])) >= len(text):
            tokens = tokens[:-1]
        return tokens


def _allowed_rank(r: int) -> int:
    """vLLM accepts only some max_lora_rank values; take the smallest that fits r."""
    for allowed in (8, 16, 32, 64, 128, 256, 320, 512):
        if r <= allowed:
            return allowed
    return r
