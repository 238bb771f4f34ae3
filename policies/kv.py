"""Calling a causal LM with an explicit KV cache across transformers versions.

transformers 5.x renamed the `past_key_values` argument and output field to `cache`;
older releases only know the former. Shared-prefix reuse in generation and in the
update goes through these two helpers so the rest of the code need not care.
"""

from __future__ import annotations

import functools
import inspect


def _base(model):
    while True:
        inner = getattr(model, "module", None)  # DDP / DeepSpeed wrappers
        if inner is None:
            break
        model = inner
    return model.get_base_model() if hasattr(model, "get_base_model") else model


@functools.lru_cache(maxsize=None)
def _cache_kw(model_cls) -> str:
    params = inspect.signature(model_cls.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def forward(model, cache=None, **kwargs):
    """`model(**kwargs)` with `cache` passed under the name this transformers expects."""
    if cache is not None:
        kwargs[_cache_kw(type(_base(model)))] = cache
    return model(**kwargs)


def cache_of(output):
    return output.cache if getattr(output, "cache", None) is not None else output.past_key_values
