"""Pool admission modes: correctness (seed 002), unit_tests and counterfactual, on real
shapes rows, the real sandbox, and the scene unit-test source."""

import json
from types import SimpleNamespace

import pytest

from envs.data.programs import reference_program
from envs.data.shapes import build_dataset
from train.admission import check_options, label_columns
from train.config import SelfPlayConfig
from train.selfplay import SelfPlay

ALWAYS_YES = "def execute_command(image):\n    return 'yes'\n"


@pytest.fixture(scope="module")
def rows():
    rows = [dict(r) for r in build_dataset(train=60, validation=0, test=0, seed=5, progress=False)["train"]]
    yes = [r for r in rows if r["answer"] == "yes" and r["family"] in ("existence", "spatial_verify")][:2]
    return yes


def _rollouts(rows, executor):
    """Per row: its reference program (right for the right reasons) and a constant "yes"
    (right here, for the wrong reason). Both score 1 under the task metric."""
    out = []
    for i, row in enumerate(rows):
        for program in (reference_program(json.loads(row["spec"])), ALWAYS_YES):
            result = executor.run([program], [row["image"]])[0]
            assert result.answer == "yes"
            out.append(SimpleNamespace(row=i, program=program, result=result, parts={"correctness": 1.0},
                                       reward=1.0))
    return out


def _selfplay(tmp_path, **overrides):
    cfg = SelfPlayConfig(mode="pool_only", **overrides)
    return SelfPlay(cfg, "viper_compact", "gqa_accuracy", run_dir=tmp_path, seed=0)


def _admitted(sp):
    return sorted(e.program == ALWAYS_YES for e in sp.pools["viper_compact"].entries)


def test_correctness_admits_every_solved_program(rows, executor, tmp_path):
    sp = _selfplay(tmp_path)
    assert sp.admit("viper_compact", rows, _rollouts(rows, executor), 0, executor=executor) == 4
    assert _admitted(sp) == [False, False, True, True]
    assert "pool/viper_compact/admission/refused" not in sp.metrics()


def test_counterfactual_admission_refuses_right_for_the_wrong_reasons(rows, executor, tmp_path):
    sp = _selfplay(tmp_path, admission="counterfactual", admission_options={"m": 4})
    assert sp.admit("viper_compact", rows, _rollouts(rows, executor), 0, executor=executor) == 2
    assert _admitted(sp) == [False, False]  # only the reference programs
    m = sp.metrics()
    assert m["pool/viper_compact/admission/checked"] == 4 and m["pool/viper_compact/admission/refused"] == 2


def test_unit_tests_admission_refuses_right_for_the_wrong_reasons(rows, executor, tmp_path):
    # `answer` coverage needs no sentence embedder; scene tests cover both answers.
    options = {"test_source": "scene", "k": 4, "strategy": "answer", "layout_llm": False}
    sp = _selfplay(tmp_path, admission="unit_tests", admission_options=options)
    assert sp.admit("viper_compact", rows, _rollouts(rows, executor), 0, executor=executor) == 2
    assert _admitted(sp) == [False, False]
    assert list((tmp_path / "unit_tests").glob("*/tests.jsonl"))  # suites cached in the run folder


def test_wrong_programs_are_never_checked(rows, executor, tmp_path):
    sp = _selfplay(tmp_path, admission="counterfactual")
    wrong = [SimpleNamespace(row=0, program=ALWAYS_YES, result=SimpleNamespace(answer="no"), parts={"correctness": 0.0}, reward=0.0)]
    assert sp.admit("viper_compact", rows, wrong, 0, executor=None) == 0  # no executor needed: nothing solved
    assert sp.admission_counts["viper_compact"]["checked"] == 0


def test_label_columns_and_options():
    assert label_columns("correctness", {}) == ("answer", "answers")
    assert label_columns("counterfactual", {}) == ("answer", "answers", "spec")
    assert label_columns("unit_tests", {"test_source": "scene"}) == ("answer", "answers", "spec")
    assert label_columns("unit_tests", {"test_source": "llm"}) == ("answer", "answers")
    assert SelfPlay(SelfPlayConfig(), "viper_compact", "gqa_accuracy").label_columns() == ()  # rwr_only: no pool
    check_options("counterfactual", {"m": 2, "min_accuracy": 0.5})
    with pytest.raises(ValueError, match="m, min_accuracy"):
        check_options("counterfactual", {"scenes": 2})
    with pytest.raises(ValueError, match="takes no"):
        check_options("correctness", {"m": 2})
    with pytest.raises(ValueError, match="unknown option"):
        check_options("unit_tests", {"generatr": "scene"})
