"""Calling train/search.py as the update does, on the viper_compact family: sampled rollouts
made from programs, one process or two ranks (threads joined by a gather, as accelerate's),
for the tests of mutation search and of composed forms."""

import threading
from dataclasses import replace

from envs.execution import Executor
from envs.prompts import get_family
from envs.tools import open_backend
from rewards.combine import RewardSet
from train.config import RewardSpec, SearchConfig
from train.rollout import Rollout
from train.search import search

FAMILY = get_family("viper_compact")
PREFIX = FAMILY.program_prefix


def rollout(row, program, reward, family="viper_compact"):
    """A finished sample of batch row `row` that wrote `program` and was rewarded `reward`."""
    return Rollout(row, "", program[len(PREFIX):], program, prompt_ids=[5], completion_ids=[7], finished=True,
                   result=None, reward=reward, prompt_family=family)


def run(rows, rollouts, executor, methods_off=False, library=None, library_size=0, probe_rows=None, **cfg):
    """search on one process under the correctness reward; `methods_off` hides the API's function
    list, so no call can be swapped for another; returns (found rollouts, stats)."""
    reward_set = RewardSet([RewardSpec("correctness")])
    family = FAMILY if not methods_off else replace(FAMILY, api="")  # no function set: no point mutation
    return search(SearchConfig(enabled=True, library=library_size, **cfg), rows, rollouts,
                  {"viper_compact": family, "visprog": get_family("visprog")}, executor, reward_set,
                  "gqa_accuracy", seed=0, library=library, probe_rows=probe_rows)


def named_prompts(name, rows):
    """A prompt per row that names its family and question, for checking which row was taught."""
    return [(f"{name}: {r['question']}", [len(r["question"])]) for r in rows]


def two_ranks(rows, sampled, **cfg):
    """search on two ranks (threads stand in for them): rank r holds questions r and r + 2 as
    its batch rows 0 and 1; the forms and wins are joined by a gather, as accelerate's."""
    barrier, slots, out = threading.Barrier(2), [None, None], [None, None]
    probe_rows = cfg.pop("probe_rows", None)

    def gather_for(rank):
        def gather(items):
            slots[rank] = list(items)
            barrier.wait()
            joined = slots[0] + slots[1]
            barrier.wait()
            return joined
        return gather

    def rank(r):
        mine = [rows[i] for i in (r, r + 2)]
        local = [replace(ro, row=ro.row // 2) for ro in sampled if ro.row % 2 == r]
        tools = open_backend("shapes-cv", {})
        with Executor(workers=1, backend=tools.spec) as ex:
            out[r] = search(SearchConfig(enabled=True, **cfg), mine, local, {"viper_compact": FAMILY}, ex,
                            RewardSet([RewardSpec("correctness")]), "gqa_accuracy", seed=0, gather=gather_for(r),
                            probe_rows=probe_rows)
        tools.close()

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert out[0] is not None and out[1] is not None
    return out
