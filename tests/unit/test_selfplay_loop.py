"""train.selfplay: the glue between few-shot pools and the training loop (no model)."""

from types import SimpleNamespace

from envs.selfplay import PoolEntry
from train.config import SelfPlayConfig
from train.selfplay import SelfPlay


class _Tok:
    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}


def test_k_grows_per_step_and_rwr_only_never_uses_shots():
    sp = SelfPlay(SelfPlayConfig(mode="pool_only", shots_per_step=[0, 4, 8]), "viper_compact", "gqa_accuracy")
    assert [sp.k_at(i) for i in range(5)] == [0, 4, 8, 8, 8]
    assert not sp.updates and sp.uses_pool
    rwr = SelfPlay(SelfPlayConfig(), "viper_compact", "gqa_accuracy")
    assert rwr.k_at(3) == 0 and rwr.updates and rwr.names == ["viper_compact"]


def test_prompts_stay_zero_shot_until_the_pool_holds_k():
    sp = SelfPlay(SelfPlayConfig(mode="pool_only", shots_per_step=[2]), "viper_compact", "gqa_accuracy")
    rows = [{"question": "Is there a red circle?", "id": "q1"}]
    prompt0, shots0 = sp.prompts("viper_compact", None, rows, 0, seed=0)
    assert shots0 == [[]]
    for i in range(2):
        sp.pools["viper_compact"].admit(PoolEntry(f"How many squares {i}?", "def execute_command(image):\n"
                                                  "    image_patch = ImagePatch(image)\n    return '1'\n",
                                                  "1", 1.0, 0, "viper_compact", f"s{i}"))
    prompt1, shots1 = sp.prompts("viper_compact", None, rows, 0, seed=0)
    assert len(shots1[0]) == 2 and "How many squares" in prompt1[0] and len(prompt1[0]) > len(prompt0[0])


def test_admission_reads_the_task_metric():
    sp = SelfPlay(SelfPlayConfig(mode="pool_only", families=["viper_compact", "tool_api"], aggregate=["majority", "oracle"]),
                  "viper_compact", "gqa_accuracy")
    rows = [{"question": "q?", "answer": "yes", "id": "a"}, {"question": "r?", "answer": "2", "id": "b"}]
    rollouts = [SimpleNamespace(row=0, program="p0", reward=0.3, parts={"correctness": 1.0},
                                result=SimpleNamespace(answer="yes")),
                SimpleNamespace(row=1, program="p1", reward=1.0, parts={"correctness": 0.0},
                                result=SimpleNamespace(answer="3"))]
    assert sp.admit("viper_compact", rows, rollouts, 0) == 1


def test_refined_programs_become_completions_of_the_first_prompt():
    sp = SelfPlay(SelfPlayConfig(), "viper_compact", "gqa_accuracy")
    prefix = sp.families["viper_compact"].program_prefix
    ro = SimpleNamespace(program=prefix + "\n    return 'yes'\n")
    assert sp.training_completion(ro, "viper_compact", _Tok()) == [ord(c) for c in "\n    return 'yes'"]
    assert sp.training_completion(SimpleNamespace(program="def other(): pass"), "viper_compact", _Tok()) is None
