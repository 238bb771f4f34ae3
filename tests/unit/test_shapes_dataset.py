"""build_dataset and the `vprl data shapes` command."""
import json

import datasets
import pytest

from envs.data import cli
from envs.data.scene import Scene
from envs.data.shapes import build_dataset
from envs.data.spec import answer_spec

COLUMNS = ["id", "image", "question", "answer", "answers", "family", "scene", "spec"]


def _rows(ds):
    return [{k: (v if k != "image" else None) for k, v in r.items()}
            for r in ds.cast_column("image", datasets.Image(decode=False))]


def test_columns_and_ground_truth():
    dd = build_dataset(train=12, validation=3, test=2, seed=0, progress=False)
    assert list(dd) == ["train", "validation", "test"]
    assert [len(dd[s]) for s in dd] == [12, 3, 2]
    assert dd["train"].column_names == COLUMNS
    assert isinstance(dd["train"].features["image"], datasets.Image)
    row = dd["train"][0]
    assert row["image"].size == (256, 256)
    scene, spec = Scene.from_json(row["scene"]), json.loads(row["spec"])
    assert spec["family"] == row["family"] and answer_spec(spec, scene) == row["answer"]
    assert row["answers"] == [row["answer"]] and row["id"] == "shapes-train-000000"


def test_deterministic_from_seed():
    a = build_dataset(train=5, validation=2, test=2, seed=3, progress=False)
    b = build_dataset(train=5, validation=2, test=2, seed=3, progress=False)
    raw = lambda d: list(d.cast_column("image", datasets.Image(decode=False))["image"])
    for split in a:
        assert _rows(a[split]) == _rows(b[split]) and raw(a[split]) == raw(b[split])
    c = build_dataset(train=5, validation=2, test=2, seed=4, progress=False)
    assert _rows(a["train"]) != _rows(c["train"])
    # a split's rows do not depend on the other splits' sizes
    d = build_dataset(train=9, validation=2, test=0, seed=3, progress=False)
    assert _rows(d["validation"]) == _rows(a["validation"])


def test_options_reach_the_scenes():
    dd = build_dataset(train=4, validation=0, test=0, seed=1, clutter=0.5, overlap=True,
                       families=["itm"], progress=False)
    assert set(dd["train"]["family"]) == {"itm"}
    assert all(Scene.from_json(s).clutter for s in dd["train"]["scene"])
    with pytest.raises(ValueError):
        build_dataset(train=-1, progress=False)


def test_cli_writes_a_loadable_dataset(tmp_path, capsys):
    out = tmp_path / "shapes"
    assert cli.main(["--out", str(out), "--train", "4", "--val", "2", "--test", "1",
                     "--seed", "2", "--no-progress"]) == 0
    dd = datasets.load_from_disk(str(out))
    assert [len(dd[s]) for s in ("train", "validation", "test")] == [4, 2, 1]
    assert [p.name for p in tmp_path.iterdir()] == ["shapes"]  # no temp folders left behind


@pytest.mark.parametrize("argv, message", [
    (["--train", "-1"], "an integer >= 0"),
    (["--clutter", "2"], "a finite number >= 0 and <= 1"),
    (["--families", "existence,bogus"], "unknown families"),
    (["--bogus"], "unrecognized arguments"),
])
def test_cli_bad_arguments_exit_2_with_one_line(tmp_path, capsys, argv, message):
    assert cli.main(["--out", str(tmp_path / "d"), "--no-progress"] + argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err and err.startswith("vprl data shapes: error:")
    assert not (tmp_path / "d").exists()


def test_cli_refuses_non_empty_out_without_overwrite(tmp_path, capsys):
    out = tmp_path / "d"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    args = ["--out", str(out), "--train", "2", "--val", "1", "--test", "1", "--no-progress"]
    assert cli.main(args) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "mine"
    assert cli.main(args + ["--overwrite"]) == 0
    assert not (out / "keep.txt").exists()
    assert len(datasets.load_from_disk(str(out))["train"]) == 2


def test_cli_failure_leaves_no_partial_output(tmp_path, monkeypatch):
    def boom(self, *a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(datasets.DatasetDict, "save_to_disk", boom)
    with pytest.raises(OSError):
        cli.main(["--out", str(tmp_path / "d"), "--train", "2", "--val", "0", "--test", "0",
                  "--no-progress"])
    assert list(tmp_path.iterdir()) == []
