"""FewShotPool: admission, eviction policies, statistics, persistence across a kill."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from envs.selfplay import FewShotPool, PoolEntry, pools_from_json, pools_to_json

REPO = Path(__file__).resolve().parents[2]
BODY = "    image_patch = ImagePatch(image)\n"


def entry(i, question=None, reward=1.0, step=0, family="viper_compact", program=None, source=None):
    return PoolEntry(question=question or f"question {i}?",
                     program=program or f"def execute_command(image):\n{BODY}    return '{i}'\n",
                     answer=str(i), reward=reward, step=step, family=family,
                     source_id=i if source is None else source)


def table_embed(vectors: dict):
    """An embedder over hand-made vectors, so the right eviction is known in advance."""
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.array([vectors[t] for t in texts], dtype=np.float32)

    embed.calls = calls
    return embed


# ------------------------------------------------------------------ admission
def test_admits_at_threshold_and_rejects_below():
    pool = FewShotPool(capacity=10, threshold=1.0)
    assert pool.admit(entry(0, reward=1.0))
    assert not pool.admit(entry(1, reward=0.99))
    assert not pool.admit(entry(2, reward=None))
    assert not pool.admit(entry(3, reward=float("nan")))
    assert len(pool) == 1
    low = FewShotPool(capacity=10, threshold=0.5)
    assert low.admit(entry(1, reward=0.5)) and not low.admit(entry(2, reward=0.49))


def test_numpy_rewards_are_json_safe_and_nan_is_rejected():
    pool = FewShotPool(capacity=4)
    assert not pool.admit(entry(0, reward=np.float32("nan")))
    assert pool.admit(entry(1, reward=np.float32(1.0), step=np.int64(2), source=np.int64(5)))
    item = json.loads(json.dumps(pool.to_json()))[0]
    assert item["reward"] == 1.0 and item["step"] == 2 and item["source_id"] == 5


def test_dedupes_same_source_and_program():
    pool = FewShotPool(capacity=10)
    assert pool.admit(entry(0))
    # Same example, same program (trailing spaces differ): a duplicate.
    again = entry(0)
    again.program = again.program.replace("'0'\n", "'0'   \n\n")
    assert not pool.admit(again)
    # Same program solving another example, or another program for the same example: new.
    assert pool.admit(entry(0, source=7))
    assert pool.admit(entry(0, program=f"def execute_command(image):\n{BODY}    return 'zero'\n"))
    assert len(pool) == 3
    assert pool.stats()["duplicate"] == 1


def test_settings_are_validated():
    with pytest.raises(ValueError, match="capacity"):
        FewShotPool(capacity=0)
    with pytest.raises(ValueError, match="unknown eviction"):
        FewShotPool(capacity=3, eviction="newest")
    with pytest.raises(ValueError, match="needs embed"):
        FewShotPool(capacity=3, eviction="least_diverse")


# ------------------------------------------------------------------- eviction
def test_oldest_evicts_earliest_step_then_earliest_admitted():
    pool = FewShotPool(capacity=3, eviction="oldest")
    pool.admit(entry(0, step=1))
    pool.admit(entry(1, step=0))
    pool.admit(entry(2, step=1))
    assert pool.admit(entry(3, step=2))
    assert [e.source_id for e in pool] == [0, 2, 3]  # step 0 went first
    assert pool.admit(entry(4, step=2))
    assert [e.source_id for e in pool] == [2, 3, 4]  # then the earliest admitted of step 1
    assert pool.stats()["evicted"] == 2


def test_lowest_reward_evicts_lowest_and_can_refuse_the_newcomer():
    pool = FewShotPool(capacity=3, eviction="lowest_reward", threshold=0.5)
    for i, r in enumerate([0.9, 0.6, 0.8]):
        pool.admit(entry(i, reward=r))
    assert pool.admit(entry(3, reward=0.7))
    assert sorted(e.source_id for e in pool) == [0, 2, 3]
    # A newcomer below everyone is admitted and evicted at once: it is not in the pool.
    assert not pool.admit(entry(4, reward=0.55))
    assert sorted(e.source_id for e in pool) == [0, 2, 3]


def test_least_diverse_drops_one_of_the_closest_pair():
    vectors = {
        "count red circles?": [1.0, 0.0, 0.0],
        "how many red circles?": [0.98, 0.2, 0.0],   # near the first
        "what color is the square?": [0.0, 1.0, 0.0],
        "is the triangle left?": [0.0, 0.0, 1.0],
    }
    embed = table_embed(vectors)
    pool = FewShotPool(capacity=3, eviction="least_diverse", embed=embed)
    pool.admit(entry(0, "count red circles?"))
    pool.admit(entry(1, "what color is the square?"))
    pool.admit(entry(2, "is the triangle left?"))
    assert not pool.admit(entry(3, "how many red circles?"))
    # The newcomer and entry 0 are the closest pair; the newcomer sits nearer the square
    # question too, so it is the more redundant one and goes.
    assert sorted(e.source_id for e in pool) == [0, 1, 2]
    # Each question is embedded once however often eviction runs.
    assert sum(len(c) for c in embed.calls) == 4


def test_least_diverse_tie_goes_to_lower_reward():
    vectors = {"a": [1.0, 0.0], "b": [1.0, 0.0], "c": [0.0, 1.0]}
    pool = FewShotPool(capacity=2, eviction="least_diverse", threshold=0.5, embed=table_embed(vectors))
    pool.admit(entry(0, "a", reward=1.0))
    pool.admit(entry(1, "c", reward=1.0))
    assert not pool.admit(entry(2, "b", reward=0.6))
    assert [e.question for e in pool] == ["a", "c"]


# ------------------------------------------------------------------ statistics
def test_stats_metrics_and_table_rows():
    vectors = {"q0": [1.0, 0.0], "q1": [0.0, 1.0], "q2": [1.0, 0.0]}
    pool = FewShotPool(capacity=5, threshold=0.5, embed=table_embed(vectors))
    pool.admit(entry(0, "q0", reward=1.0, family="pot"))
    pool.admit(entry(1, "q1", reward=0.5, family="viper_compact"))
    pool.admit(entry(2, "q2", reward=1.0, family="viper_compact"))
    pool.admit(entry(3, "q0", reward=0.1))
    stats = pool.stats()
    assert stats["size"] == 3 and stats["mean_reward"] == pytest.approx(2.5 / 3)
    # Pairwise cosine distances: q0-q1 1, q0-q2 0, q1-q2 1.
    assert stats["diversity"] == pytest.approx(2 / 3)
    assert stats["by_family"] == {"pot": 1, "viper_compact": 2}
    assert stats["admitted"] == 3 and stats["rejected"] == 1
    flat = pool.metrics()
    assert flat["pool/size"] == 3 and flat["pool/by_family/pot"] == 1
    rows = pool.table_rows()
    assert len(rows) == 3 and all(list(r) == list(rows[0]) for r in rows)
    assert rows[0]["source_id"] == "0"
    json.dumps(rows)
    assert FewShotPool(capacity=2).stats()["diversity"] is None


# ---------------------------------------------------------------- persistence
def test_json_round_trip_keeps_entries_and_order():
    pool = FewShotPool(capacity=4)
    for i in range(4):
        pool.admit(entry(i, step=i, family="pot" if i % 2 else "tool_api"))
    items = json.loads(json.dumps(pool.to_json()))
    back = FewShotPool.from_json(items, capacity=4)
    assert back.entries == pool.entries
    assert not back.admit(entry(2, step=2, family="pot" if 2 % 2 else "tool_api"))  # dedupe survives
    # A smaller capacity on resume trims by the configured policy.
    assert [e.source_id for e in FewShotPool.from_json(items, capacity=2)] == [2, 3]
    with pytest.raises(ValueError, match="unknown keys"):
        FewShotPool.from_json([{**items[0], "extra": 1}], capacity=4)


def test_per_family_pools_round_trip():
    pools = {f: FewShotPool(capacity=3) for f in ("pot", "tool_api")}
    pools["pot"].admit(entry(0, family="pot"))
    pools["tool_api"].admit(entry(1, family="tool_api"))
    pools["tool_api"].admit(entry(2, family="tool_api"))
    items = pools_to_json(pools)
    back = pools_from_json(items, ["pot", "tool_api", "viper_compact"], lambda f: FewShotPool(capacity=3))
    assert [len(back[f]) for f in ("pot", "tool_api", "viper_compact")] == [1, 2, 0]


def _run(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_pool_file_survives_kill_during_save(tmp_path):
    path = tmp_path / "pool.json"
    proc = _run(f"""
        import os, signal
        from envs.selfplay import FewShotPool, PoolEntry
        pool = FewShotPool(capacity=8)
        for i in range(3):
            pool.admit(PoolEntry(f"q{{i}}", f"    return '{{i}}'\\n", str(i), 1.0, 0, "pot", i))
        pool.save({str(path)!r})
        pool.admit(PoolEntry("q9", "    return '9'\\n", "9", 1.0, 1, "pot", 9))
        os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)  # die before the swap
        pool.save({str(path)!r})
    """)
    assert proc.returncode == -9, proc.stderr
    back = FewShotPool.load(path, capacity=8)
    assert [e.question for e in back] == ["q0", "q1", "q2"]


def test_pool_in_checkpoint_survives_kill_and_resume(tmp_path):
    run_dir = tmp_path / "run"
    proc = _run(f"""
        import os, signal
        from pathlib import Path
        import torch
        from train.checkpoint import save_iteration
        from envs.selfplay import FewShotPool, PoolEntry

        class Adapter:
            def __init__(self, die):
                self.die = die
            def save_pretrained(self, path):
                if self.die:
                    os.kill(os.getpid(), signal.SIGKILL)  # killed in the middle of iteration 1
                Path(path).mkdir(parents=True)

        pool = FewShotPool(capacity=8)
        pool.admit(PoolEntry("q0", "    return 'a'\\n", "a", 1.0, 0, "pot", "row-0"))
        save_iteration(Path({str(run_dir)!r}), 0, Adapter(False), {{}}, {{}}, pool=pool.to_json())
        pool.admit(PoolEntry("q1", "    return 'b'\\n", "b", 1.0, 1, "pot", "row-1"))
        save_iteration(Path({str(run_dir)!r}), 1, Adapter(True), {{}}, {{}}, pool=pool.to_json())
    """)
    assert proc.returncode == -9, proc.stderr
    from train.checkpoint import clean_partial, completed_iterations, load_iteration

    assert completed_iterations(run_dir) == [0]
    clean_partial(run_dir)
    resumed = FewShotPool.from_json(load_iteration(run_dir, 0)["pool"], capacity=8)
    assert [(e.question, e.source_id) for e in resumed] == [("q0", "row-0")]
    # The resumed pool keeps growing and deduping like the original.
    assert resumed.admit(PoolEntry("q1", "    return 'b'\n", "b", 1.0, 1, "pot", "row-1"))
    assert not resumed.admit(PoolEntry("q0", "    return 'a'\n", "a", 1.0, 1, "pot", "row-0"))
