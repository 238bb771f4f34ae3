"""k-shot sampling: zero-shot fallback, random / similar / diverse picks, prompt rendering."""

from __future__ import annotations

import random

import numpy as np
import pytest

from envs.prompts import get_family
from envs.selfplay import FewShotPool, PoolEntry, sample_shots
from policies.programs import program_body

HEADER = "def execute_command(image):\n"

# Hand-made 2-D directions: the right pick for each strategy is known by geometry.
VECTORS = {
    "q_east": [1.0, 0.0],
    "q_east_north": [0.95, 0.31],
    "q_north": [0.0, 1.0],
    "q_west": [-1.0, 0.0],
    "q_south": [0.0, -1.0],
    "query": [0.99, 0.1],
}


def embed(texts):
    return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def make_pool(questions, family="viper_compact", embed_fn=embed):
    pool = FewShotPool(capacity=50, embed=embed_fn)
    for i, q in enumerate(questions):
        body = f"    image_patch = ImagePatch(image)\n    return '{q}'\n"
        pool.admit(PoolEntry(q, HEADER + body, q, 1.0, 0, family, i))
    return pool


def test_program_body_strips_header_and_keeps_bare_bodies():
    body = "    image_patch = ImagePatch(image)\n    return 'yes'"
    assert program_body(HEADER + body + "\n\n") == body + "\n"
    assert program_body(body) == body + "\n"
    assert program_body(HEADER) == ""


def test_zero_shot_until_the_pool_holds_k_entries():
    pool = make_pool(["q_east", "q_north", "q_west"])
    for strategy in ("random", "similar", "diverse"):
        assert sample_shots(pool, "query", 4, strategy=strategy, rng=0) == []
        assert len(sample_shots(pool, "query", 3, strategy=strategy, rng=0)) == 3
    assert sample_shots(pool, "query", 0) == []
    assert sample_shots(FewShotPool(capacity=4), "query", 1) == []


def test_fallback_counts_only_usable_entries():
    pool = make_pool(["q_east", "q_north", "q_west"])
    # The example being solved never sees its own solution, so 3 entries give 2 shots.
    assert sample_shots(pool, "query", 3, exclude_source_id=0) == []
    shots = sample_shots(pool, "query", 2, rng=0, exclude_source_id=0)
    assert sorted(q for q, _ in shots) == ["q_north", "q_west"]
    # Another family's programs are no examples for this family.
    assert sample_shots(pool, "query", 1, family="pot") == []


def test_identical_shots_are_not_repeated():
    pool = make_pool(["q_east", "q_north"])
    pool.admit(PoolEntry("q_east", pool.entries[0].program, "q_east", 1.0, 1, "viper_compact", 99))
    assert len(pool) == 3
    assert sample_shots(pool, "query", 3) == []


def test_random_is_seeded_distinct_and_needs_no_embedder():
    pool = make_pool([f"q{i}" for i in range(10)], embed_fn=None)
    a = sample_shots(pool, "anything", 4, rng=np.random.default_rng(3))
    b = sample_shots(pool, "anything", 4, rng=np.random.default_rng(3))
    assert a == b and len({q for q, _ in a}) == 4
    c = sample_shots(pool, "anything", 4, rng=random.Random(1))
    assert len({q for q, _ in c}) == 4
    seen = {q for seed in range(20) for q, _ in sample_shots(pool, "anything", 2, rng=seed)}
    assert len(seen) > 4  # not always the same entries


def test_similar_picks_nearest_with_nearest_last():
    pool = make_pool(["q_west", "q_north", "q_east", "q_south", "q_east_north"])
    shots = sample_shots(pool, "query", 2, strategy="similar")
    assert [q for q, _ in shots] == ["q_east_north", "q_east"]


def test_diverse_anchors_on_nearest_then_spreads_out():
    pool = make_pool(["q_east", "q_east_north", "q_north", "q_west"])
    shots = sample_shots(pool, "query", 2, strategy="diverse")
    assert [q for q, _ in shots] == ["q_east", "q_west"]
    shots = sample_shots(pool, "query", 3, strategy="diverse")
    assert [q for q, _ in shots] == ["q_east", "q_west", "q_north"]


def test_embedding_strategies_need_an_embedder():
    pool = make_pool(["q_east", "q_north"], embed_fn=None)
    with pytest.raises(ValueError, match="needs embed"):
        sample_shots(pool, "query", 1, strategy="similar")
    assert len(sample_shots(pool, "query", 1, strategy="similar", embed=embed)) == 1
    with pytest.raises(ValueError, match="unknown shot strategy"):
        sample_shots(pool, "query", 1, strategy="best")


def test_shots_render_into_the_family_prompt():
    family = get_family("viper_compact")
    pool = make_pool(["q_east", "q_north"])
    shots = sample_shots(pool, "query", 2, strategy="similar")
    prompt = family.render(None, "How many squares?", shots=shots)
    for q, body in shots:
        assert body.startswith(family.body_start)
        assert f"# Query: {q}\n{family.header}{body}" in prompt
    assert prompt.endswith("# Query: How many squares?\n" + family.program_prefix)
    assert prompt.count(family.header) == len(family.examples) + 2 + 1
