"""Suites: building from a scripted LLM (the unit-test model is a boundary we replace with
fixed replies to keep this tier fast; the real model runs in tests/integration), coverage
order with dropped captions, the run-folder cache, and option checking."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from PIL import Image

from rewards.unit_tests.suite import Suite, SuiteBuilder, SuiteConfig, load_suite, save_suite, suite_key
from rewards.unit_tests.types import UnitTest


def _embed(texts):
    # A deterministic stand-in embedding: hashed bytes -> 8-d vector.
    return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(float)
                     for t in texts])


class ScriptedLLM:
    def __init__(self, replies):
        self.replies, self.calls = replies, 0

    def __call__(self, prompts, n):
        self.calls += 1
        return [[self.replies[i % len(self.replies)] for i in range(n)] for _ in prompts]


class ColourSynth:
    """Draws a flat image per caption; captions containing 'nolayout' get none."""

    def __init__(self):
        self.seen = []

    def __call__(self, tests, seed=0):
        self.seen += [t.caption for t in tests]
        return [None if "nolayout" in t.caption else Image.new("RGB", (16, 16), (len(t.caption) * 7 % 255, 0, 0))
                for t in tests]


REPLY = ('red circle" Answer: yes\n2. Image Caption: "blue square nolayout" Answer: no\n'
         '3. Image Caption: "green triangle" Answer: no\n4. Image Caption: "two red circles" Answer: yes\n'
         '5. Image Caption: "an empty image" Answer: no\n')


class FakeTok:
    chat_template = None


def _builder(tmp_path=None, k=3, **kw):
    llm = ScriptedLLM([REPLY])
    b = SuiteBuilder(SuiteConfig(test_source="llm", k=k, **kw), cache_dir=tmp_path, complete=llm, embed=_embed,
                     synthesizer=ColourSynth())
    return b, llm


def test_build_replaces_dropped_captions_and_counts_them(monkeypatch):
    import rewards.unit_tests.llm_source as g

    monkeypatch.setattr(g.prompts, "render", lambda tok, q, program=None: f"Q: {q}")
    b, llm = _builder(k=4)
    (suite,) = b.build([{"question": "Is there a red circle?"}])
    assert len(suite) == 4 and len(suite.images) == 4
    assert all("nolayout" not in t.caption for t in suite.tests)
    assert suite.stats == {"candidates": 5, "dropped": 1}
    assert b.stats["no_layout"] == 1 and b.stats["suites_built"] == 1
    # answer_then_input: both answers come first.
    assert {suite.tests[0].answer, suite.tests[1].answer} == {"yes", "no"}


def test_suites_are_cached_on_disk_and_reused(tmp_path, monkeypatch):
    import rewards.unit_tests.llm_source as g

    monkeypatch.setattr(g.prompts, "render", lambda tok, q, program=None: f"Q: {q}")
    b1, llm1 = _builder(tmp_path)
    rows = [{"question": "Is there a red circle?"}, {"question": "Is there a red circle?"}, {"question": "Other?"}]
    s1 = b1.build(rows)
    assert llm1.calls == 1 and b1.stats["suites_built"] == 2  # duplicates built once, in one batch
    b2, llm2 = _builder(tmp_path)
    s2 = b2.build(rows)
    assert llm2.calls == 0 and b2.stats["suites_cached"] == 2
    assert [t.caption for t in s2[0].tests] == [t.caption for t in s1[0].tests]
    assert np.array_equal(np.asarray(s2[0].images[0]), np.asarray(s1[0].images[0]))
    # Different settings -> a different suite folder.
    assert suite_key("q", None, SuiteConfig(k=3)) != suite_key("q", None, SuiteConfig(k=4))


def test_save_is_atomic_and_leftovers_are_ignored(tmp_path):
    suite = Suite("q", [UnitTest("a", "yes")], [Image.new("RGB", (4, 4))], {"candidates": 1})
    (tmp_path / "abc.tmp123").mkdir()  # a killed writer's leftovers
    save_suite(suite, tmp_path / "abc")
    assert load_suite(tmp_path / "abc").tests[0].caption == "a"
    assert load_suite(tmp_path / "missing") is None
    assert not any(p.name.startswith("abc.tmp") and p.name != "abc.tmp123" for p in tmp_path.iterdir())


def test_config_errors_are_one_line_and_name_the_choices():
    with pytest.raises(ValueError, match="test_source 'gpt'.*llm, scene"):
        SuiteConfig(test_source="gpt")
    with pytest.raises(ValueError, match="strategy"):
        SuiteConfig(strategy="everything")
    with pytest.raises(ValueError, match="diffusion_model"):
        SuiteConfig(synthesis="diffusers")
    with pytest.raises(ValueError, match="unknown option.*kk"):
        SuiteConfig.from_kwargs({"kk": 3})


def test_viunit_options_are_checked_at_startup(tmp_path):
    from train.config import ConfigError, load_config
    from train.setup import validate

    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text("rewards:\n  - name: viunit\n    kwargs: {test_source: scene, aggregator: median}\n")
    with pytest.raises(ConfigError, match="aggregator 'median'"):
        validate(load_config(str(cfg_path), []))
    cfg_path.write_text("rewards:\n  - name: viunit\n    kwargs: {with_program: true}\n")
    with pytest.raises(ConfigError, match="suite per program"):
        validate(load_config(str(cfg_path), []))
    cfg_path.write_text("rewards:\n  - name: viunit\n    kwargs: {generatr: scene}\n")
    with pytest.raises(ConfigError, match="unknown option"):
        validate(load_config(str(cfg_path), []))


def test_a_second_writer_of_the_same_suite_loses_quietly(tmp_path):
    a = Suite("q", [UnitTest("first", "yes")], [Image.new("RGB", (4, 4))], {})
    b = Suite("q", [UnitTest("second", "yes")], [Image.new("RGB", (4, 4))], {})
    save_suite(a, tmp_path / "k")
    save_suite(b, tmp_path / "k")  # e.g. another rank built the same question
    assert load_suite(tmp_path / "k").tests[0].caption == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["k"]


def test_viunit_state_is_per_instance_and_its_table_shows_what_it_scored():
    """Regression (issue 12): viunit kept its last batch in a function attribute
    (`viunit.last`) and its builders in a module global, so whichever caller scored last
    in the process decided what the W&B table showed. Now each instance keeps its own,
    and the table holds every batch scored since it was last read (rollouts and their
    refinements: the batch that was trained on)."""
    import json

    import rewards
    from envs.data.programs import reference_program
    from envs.data.shapes import build_dataset
    from envs.execution import Executor

    rows = [dict(r) for r in build_dataset(train=2, validation=0, test=0, seed=3, progress=False)["train"]]
    right = [reference_program(json.loads(r["spec"])) for r in rows]
    yes = "def execute_command(image):\n    return 'yes'\n"
    a, b = rewards.get("viunit"), rewards.get("viunit")
    assert a is not b and a.__name__ == "viunit"  # TRL logs a reward by its __name__
    options = dict(test_source="scene", k=2, candidates=4, strategy="answer", layout_llm=False)
    with Executor(workers=1) as ex:
        for row, program in zip(rows, right):  # two batches, e.g. rollouts then refined programs
            assert a([""], [program], question=[row["question"]], spec=[row["spec"]], executor=ex, **options) == [1.0]
        b([""], [yes], question=[rows[0]["question"]], spec=[rows[0]["spec"]], executor=ex, **options)
    table = a.table_rows()
    assert {r["question"] for r in table} == {r["question"] for r in rows}
    assert {r["program"] for r in table} == set(right) and all(r["passed"] for r in table)
    assert a.table_rows() == []  # read once
    assert {r["program"] for r in b.table_rows()} == {yes}
    assert a.metrics()["suites_built"] == 2 and b.metrics()["suites_built"] == 1
