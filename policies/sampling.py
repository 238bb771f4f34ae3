"""What a sampler is asked for and hands back, without torch: the `generation:` config,
`Sample`, the `Generator` protocol (see `policies.generation`), and the stop rules that
decide where a completion ends, shared by the HF loop and the vLLM path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Literal, Protocol

from policies.programs import ProgramEnd


@dataclass
class GenerationConfig:
    """The `generation:` section of an experiment config (train.config adds its range rules)."""

    backend: Literal["hf", "vllm"] = "hf"  # vllm needs a CUDA GPU and the gpu extra (`make venv-gpu`)
    temperature: float = 1.0  # sampling temperature of the rollouts (0: greedy)
    top_p: float = 0.9
    max_new_tokens: int = 320
    batch_size: int = 32  # prompts x programs generated together
    prefix_cache: bool = True  # encode the prompt prefix shared by a batch once
    eval_temperature: float = 0.0  # held-out evaluation (0: greedy)
    gpu_memory_utilization: float = 0.3  # vllm: share of each rank's GPU its engine takes (weights + KV cache) beside the trainer
    max_model_len: int | None = None  # vllm: longest prompt + program it holds (sizes its KV cache); null: the model's own limit


@dataclass
class Sample:
    prompt_index: int
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    finished: bool = True  # ended on its own (program end or EOS), not cut by max_new_tokens
    extra: dict = field(default_factory=dict)


class Generator(Protocol):
    def generate(self, prompts: list[str], n: int = 1, *, temperature: float | None = None,
                 max_new_tokens: int | None = None, progress: bool = False, desc: str = "generate") -> list[Sample]:
        ...

    def load_adapter(self, path) -> None:
        ...

    def reseed(self, seed: int) -> None:
        ...

    def drain(self) -> None:
        ...


class RegexStop:
    """A stop rule for free text: a match over (last character + new piece) ends the
    output before that piece (e.g. a blank line, or the next `Query:`)."""

    def __init__(self, pattern: str):
        self._re = re.compile(pattern)
        self._last = ""

    def feed(self, piece: str) -> int | None:
        if self._re.search(self._last + piece):
            return 0
        self._last = piece[-1:] or self._last
        return None


def token_pieces(tokenizer) -> list[str]:
    """The text of each token id on its own, for incremental stop detection (the final
    text is decoded properly from the ids)."""
    pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    return [tokenizer.convert_tokens_to_string([p]) if p is not None else "" for p in pieces]


def keeps_token(piece: str, kept: int) -> bool:
    """A token in which the program ended stays if it carries program text before the
    cut (e.g. `)` of ")\nprint"), else it is dropped with what follows."""
    return bool(piece[:kept].strip())


def stop_rule(stop) -> Callable[[], object]:
    """A prompt family's `stop` as a factory of per-row rules: None is the end of the
    Python program (`ProgramEnd`), a string a regex over the text (e.g. scripts end at
    a blank line), anything else is already a factory."""
    if stop is None:
        return ProgramEnd
    if isinstance(stop, str):
        return lambda: RegexStop(stop)
    return stop


def trim_to_program(tokens: list[int], pieces: list[str], tail: str = "", stop=None) -> tuple[list[int], bool]:
    """The tokens of a finished completion up to the end of its program, by the same
    rule the HF loop applies while sampling; `tail` is text the backend removed after
    them (a matched stop string). Returns (tokens, whether the program ended)."""
    stop = stop_rule(stop)()
    for i, tok in enumerate(tokens):
        kept = stop.feed(pieces[tok])
        if kept is not None:
            return tokens[: i + keeps_token(pieces[tok], kept)], True
    return list(tokens), bool(tail) and stop.feed(tail) is not None
