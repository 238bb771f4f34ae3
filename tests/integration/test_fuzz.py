"""The fuzz tier (issue 25): seeded random and mutated programs (tests/fuzz.py) through
``Executor.run`` and every registered reward but the LLM-judged one, for a bounded time.

Nothing may raise, every result must be well-formed and loggable, and a clean probe
(tests/hostile_corpus.PROBE) must print what it printed before the fuzzing began, after
every few batches and at the end. The budget is ``VPRL_FUZZ_SECONDS`` (default 60 s of
fuzzing, on top of the executor's start-up); ``VPRL_FUZZ_SEED`` picks the stream, and a
failure names the seed and the batch so it can be replayed.
"""
import ast
import json
import os
import time
from collections import Counter


import rewards
from envs.execution import Executor
from envs.execution.results import STATUSES
from envs.execution.syntax import NODE_RULES
from tests.containment import scene
from tests.fuzz import mutate, programs, random_program
from tests.hostile_corpus import PROBE

BUDGET_S = float(os.environ.get("VPRL_FUZZ_SECONDS", "60"))
SEED = int(os.environ.get("VPRL_FUZZ_SEED", "25"))
BATCH = 12
PROBE_EVERY = 4  # batches
# Every registered reward runs on every batch, but caption_agreement: its judge is a
# language model on CPU, seconds a question (tests/integration/test_reward_hacking.py
# calls it on hostile completions). viunit writes its tests from the question's meaning.
SKIPPED_REWARDS = {"caption_agreement"}
# The rewards vprl ships, read at collection: tests that run earlier in the same session
# register rewards of their own (some return one value whatever the batch).
SHIPPED_REWARDS = tuple(rewards.available())
OPTIONS = {"viunit": dict(test_source="scene", k=2, candidates=4, strategy="answer", layout_llm=False)}
# Node types no program module holds: other parse modes, and type comments.
NOT_IN_MODULES = {"Interactive", "FunctionType", "Expression", "TypeIgnore"}


def test_the_generator_uses_every_node_type_of_the_grammar():
    import random

    rng = random.Random(SEED)
    seen = set()
    for _ in range(3000):
        try:
            tree = ast.parse(random_program(rng))
        except SyntaxError:
            continue
        seen.update(type(node).__name__ for node in ast.walk(tree))
    missing = set(NODE_RULES) - NOT_IN_MODULES - seen
    assert not missing, f"tests/fuzz.py never writes: {sorted(missing)}"
    mutated = [mutate(random_program(rng), rng) for _ in range(200)]
    assert len(set(mutated)) > 150  # mutations differ


def _probe(ex, image, salt):
    # A loaded CI machine can stretch the probe past the fuzz tier's short limit; a
    # timeout is retried (contamination shows as different output, not as slowness).
    for attempt in range(3):
        [result] = ex.run([f"# probe {salt} {attempt}\n" + PROBE], [image])
        if result.status != "timeout":
            break
    return result.status, result.stdout


def _loggable(result) -> None:
    assert result.status in STATUSES, result
    assert result.answer is None or type(result.answer) is str
    assert result.error is None or type(result.error) is str
    json.dumps(result.to_dict()).encode("utf-8")  # no lone surrogate survives


def test_fuzzed_programs_raise_nothing_and_leave_no_state_behind():
    from envs.data.shapes import build_dataset

    row = dict(build_dataset(train=1, validation=0, test=0, seed=3, progress=False)["train"][0])
    image = scene()  # the probe's; fuzzed programs run on the question's own image
    stream = programs(SEED)
    statuses = Counter()
    fns = {name: rewards.get(name) for name in SHIPPED_REWARDS if name not in SKIPPED_REWARDS}
    with Executor(timeout_s=2.0, workers=2) as ex:
        ex.wait_ready()
        fresh = _probe(ex, image, "fresh")
        assert fresh[0] == "ok", fresh
        deadline, batches = time.monotonic() + BUDGET_S, 0
        while time.monotonic() < deadline:
            batch = [next(stream) for _ in range(BATCH)]
            where = f"seed {SEED}, batch {batches}"
            results = ex.run(batch, [row["image"]] * BATCH)
            assert len(results) == BATCH, where
            for result in results:
                _loggable(result)
                statuses[result.status] += 1
            columns = {key: [row[key]] * BATCH
                       for key in ("image", "question", "answer", "answers", "spec")}
            for name, fn in fns.items():
                values = fn([""] * BATCH, batch, executor=ex, **columns, **OPTIONS.get(name, {}))
                assert len(values) == BATCH and all(
                    v is None or isinstance(v, float) for v in values), (name, where)
            batches += 1
            if batches % PROBE_EVERY == 0:
                assert _probe(ex, image, f"{SEED}-{batches}") == fresh, \
                    f"the probe changed after {where}"
        assert _probe(ex, image, f"{SEED}-end") == fresh
    print(f"fuzz: {batches} batches, {sum(statuses.values())} programs in {BUDGET_S:.0f} s: "
          f"{dict(statuses)}")
    # The stream reaches past the static policy into the children, not only into refusals.
    assert batches >= 3 and {"ok", "compile_error", "forbidden"} <= set(statuses), statuses
