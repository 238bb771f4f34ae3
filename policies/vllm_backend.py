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
                 seed: int = 0, max_lora_rank: int = 16, gpu_memory_utilization: float = 0.5, **_):
        try:
            from vllm import LLM
        except ImportError as e:
            raise ImportError("generation.backend: vllm needs the extra: pip install -e '.[vllm]' (GPU machines)") from e
        from policies.model import resolve

        self.path = str(resolve(model))
        self.llm = LLM(model=self.path, enable_prefix_caching=True, enable_lora=True, max_lora_rank=max_lora_rank,
                       seed=seed, gpu_memory_utilization=gpu_memory_utilization)
        self.tokenizer = self.llm.get_tokenizer()
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.adapter: str | None = None
        self._adapter_id = 0

    def weights_changed(self, adapter_dir: str | None = None) -> None:
        """Serve the adapter saved at `adapter_dir` from now on (a new id busts vLLM's cache)."""
        if adapter_dir is not None:
            self.adapter = str(adapter_dir)
            self._adapter_id += 1

    def generate(self, prompts: list[str], n: int = 1, progress: bool = False, desc: str = "generate") -> list[Sample]:
        from vllm import SamplingParams
        from vllm.lora.request import LoRARequest

        params = SamplingParams(n=n, temperature=self.temperature, top_p=self.top_p,
                                max_tokens=self.max_new_tokens, stop=STOP)
        lora = LoRARequest(f"it{self._adapter_id}", self._adapter_id, self.adapter) if self.adapter else None
        outputs = self.llm.generate(prompts, params, lora_request=lora, use_tqdm=progress)
        samples = []
        for i, out in enumerate(outputs):
            for comp in out.outputs:
                samples.append(Sample(i, list(out.prompt_token_ids), list(comp.token_ids), comp.text,
                                      finished=comp.finish_reason != "length"))
        return samples
