"""The real embedder (all-MiniLM-L6-v2 from its wheel) in the pool and the sampler."""

from __future__ import annotations

import numpy as np

from envs.selfplay import FewShotPool, PoolEntry, sample_shots
from policies.embed import default_embedder


def test_default_embedder_offline_normalised_cached_and_useful():
    embed = default_embedder()
    assert default_embedder() is embed  # one model per process
    questions = ["How many red circles are there?", "What color is the large square?",
                 "Is the triangle to the left of the circle?"]
    vectors = embed(questions)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embed([]).shape == (0, 384)

    pool = FewShotPool(capacity=10, embed=embed)
    for i, q in enumerate(questions):
        pool.admit(PoolEntry(q, f"    return '{i}'\n", str(i), 1.0, 0, "viper_compact", i))
    (shot,) = sample_shots(pool, "Count the red circles in the picture.", 1, strategy="similar")
    assert shot[0] == questions[0]
    assert 0.0 < pool.stats()["diversity"] < 2.0
