"""Your own VQA data from files: every source kind, column maps, seeded splits, and one
line naming the fix for each way it can be wrong (training config and `vprl data`).

Every dataset is written here by the test, with real PNG bytes, in a layout that is not
ours (its own column names, relative image paths); nothing is downloaded.
"""
import csv
import io
import json

import datasets
import pytest
from datasets import Dataset, DatasetDict, Features, Value
from PIL import Image

from envs.data.files import CLI_HINTS, CONFIG_HINTS, load_splits, seeded_split
from envs.data.files_cli import main as data_main
from envs.data.hf import DataError
from train.config import ConfigError, load_config
from train.setup import load_data, validate

COLOURS = ["red", "blue", "green", "yellow"]


def png(i: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), COLOURS[i % 4]).save(buf, format="PNG")
    return buf.getvalue()


def csv_source(tmp_path, n=30, broken=0):
    """A CSV with its own column names and images in a subfolder, paths relative to it."""
    (tmp_path / "pics").mkdir(parents=True)
    rows = []
    for i in range(n):
        name = f"pics/{i:03d}.png"
        (tmp_path / name).write_bytes(b"not a png" if i < broken else png(i))
        rows.append({"img_file": name, "prompt": "What colour is it?", "label": COLOURS[i % 4]})
    path = tmp_path / "qa.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


COLUMNS = {"question": "prompt", "answer": "label", "image": "img_file"}


def test_csv_with_its_own_column_names_gets_a_seeded_split(tmp_path):
    loaded = load_splits(csv_source(tmp_path), columns=COLUMNS, seed=3, eval_size=64)
    train, val = loaded.rows["train"], loaded.rows["validation"]
    assert (len(train), len(val)) == (24, 6)  # at most a fifth is held out
    assert set(train["id"]).isdisjoint(val["id"])
    assert train.column_names == ["id", "image", "question", "answer", "answers", "metric"]
    assert val[0]["image"].size == (16, 12) and set(train["metric"]) == {"gqa_accuracy"}
    again = load_splits(csv_source(tmp_path / "again"), columns=COLUMNS, seed=3)
    assert again.rows["validation"]["id"] == val["id"]  # the same seed holds out the same rows
    assert "held out" in loaded.note and "seed 3" in loaded.note


def test_image_folder_with_metadata_jsonl(tmp_path):
    meta = []
    for i in range(10):
        (tmp_path / f"{i}.png").write_bytes(png(i))
        meta.append({"file_name": f"{i}.png", "question": "Colour?", "answer": COLOURS[i % 4]})
    (tmp_path / "metadata.jsonl").write_text("\n".join(map(json.dumps, meta)))
    loaded = load_splits(tmp_path, eval_size=2)
    assert (len(loaded.rows["train"]), len(loaded.rows["validation"])) == (8, 2)


def test_image_folder_without_metadata_says_what_to_add(tmp_path):
    for i in range(3):
        (tmp_path / f"{i}.png").write_bytes(png(i))
    with pytest.raises(DataError, match="metadata.jsonl or metadata.csv next to the images"):
        load_splits(tmp_path)


def test_parquet_and_single_saved_dataset_and_query_label_dict(tmp_path):
    feats = Features({"image": datasets.Image(), "query": Value("string"), "label": Value("string")})
    data = {"image": [{"bytes": png(i), "path": None} for i in range(10)],
            "query": ["q?"] * 10, "label": ["a"] * 10}
    Dataset.from_dict(data, features=feats).to_parquet(str(tmp_path / "d.parquet"))
    Dataset.from_dict(data, features=feats).save_to_disk(str(tmp_path / "single"))
    DatasetDict({"train": Dataset.from_dict(data, features=feats),
                 "validation": Dataset.from_dict(data, features=feats)}
                ).save_to_disk(str(tmp_path / "dd"))
    for source in ("d.parquet", "single"):
        loaded = load_splits(tmp_path / source, eval_size=2)
        assert len(loaded.rows["train"]) == 8 and loaded.rows["train"][0]["question"] == "q?"
    loaded = load_splits(tmp_path / "dd")  # query/label are known spellings of question/answer
    assert [len(d) for d in loaded.rows.values()] == [10, 10] and not loaded.note


def test_missing_columns_name_the_fix_in_each_entry_points_spelling(tmp_path):
    source = csv_source(tmp_path)
    with pytest.raises(DataError) as err:
        load_splits(source, hints=CONFIG_HINTS)
    assert "data.columns.question=<column>" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DataError, match="--columns question=<column>"):
        load_splits(source, hints=CLI_HINTS)


def test_unreadable_images_past_the_limit_and_empty_splits_fail_in_one_line(tmp_path):
    with pytest.raises(DataError, match=r"unreadable_image=4.*data.max_bad_fraction"):
        load_splits(csv_source(tmp_path, broken=4), columns=COLUMNS, hints=CONFIG_HINTS)
    loaded = load_splits(csv_source(tmp_path / "ok", broken=1), columns=COLUMNS,
                         max_bad_fraction=0.1)
    assert sum(len(d) for d in loaded.rows.values()) == 29
    empty = {"image": [], "question": [], "answer": []}
    feats = Features({"image": datasets.Image(), "question": Value("string"),
                      "answer": Value("string")})
    one = {"image": [{"bytes": png(0), "path": None}], "question": ["q"], "answer": ["a"]}
    DatasetDict({"train": Dataset.from_dict(one, features=feats),
                 "validation": Dataset.from_dict(empty, features=feats)}
                ).save_to_disk(str(tmp_path / "dd"), num_shards={"train": 1, "validation": 1})
    with pytest.raises(DataError, match=r"\[validation\] has no rows"):
        load_splits(tmp_path / "dd")


def test_a_missing_split_names_the_ones_there_are(tmp_path):
    feats = Features({"image": datasets.Image(), "question": Value("string"),
                      "answer": Value("string")})
    one = {"image": [{"bytes": png(0), "path": None}] * 2, "question": ["q"] * 2, "answer": ["a"] * 2}
    DatasetDict({"train": Dataset.from_dict(one, features=feats),
                 "test": Dataset.from_dict(one, features=feats)}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(DataError, match=r"no split 'validation' \(it has train, test\).*data.eval_split"):
        load_splits(tmp_path / "dd", hints=CONFIG_HINTS)
    assert len(load_splits(tmp_path / "dd", ("train", "test")).rows["test"]) == 2
    with pytest.raises(DataError, match="at least 2"):
        seeded_split(Dataset.from_dict({"a": [1]}), 5, 0)


def test_metric_is_honoured_for_files_and_presets_and_checked(tmp_path):
    loaded = load_splits(csv_source(tmp_path), columns=COLUMNS, metric="anls")
    assert set(loaded.rows["train"]["metric"]) == {"anls"} and loaded.metric == "anls"
    with pytest.raises(DataError, match="metric 'bleu' is unknown"):
        load_splits(csv_source(tmp_path / "b"), columns=COLUMNS, metric="bleu")


def config(tmp_path, *overrides):
    return load_config(None, [f"output_dir={tmp_path / 'runs'}", *overrides])


def test_training_config_reads_files_and_fills_the_metric(tmp_path, capsys):
    source = csv_source(tmp_path)
    cfg = config(tmp_path, "data.name=files", f"data.path={source}", "data.columns.question=prompt",
                 "data.columns.answer=label", "data.columns.image=img_file")
    validate(cfg)
    train, val = load_data(cfg)
    assert (len(train), len(val)) == (24, 6) and cfg.data.metric == "gqa_accuracy"
    assert "held out" in capsys.readouterr().err


@pytest.mark.parametrize("overrides, message", [
    (["data.name=myvqa"], "data.name 'myvqa' is unknown; known: shapes, files"),
    (["data.name=files"], "data.name 'files' needs data.path"),
    (["data.name=files", "data.path=/no/such/dir"], "point data.path at your dataset"),
    (["data.columns.query=prompt", "data.name=files", "data.path=."], "data.columns.query"),
    (["data.metric=bleu"], "data.metric 'bleu' is not a per-question metric"),
])
def test_bad_data_configs_fail_at_start_up_in_one_line(tmp_path, overrides, message):
    with pytest.raises(ConfigError) as err:
        validate(config(tmp_path, *overrides))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_load_errors_are_config_errors_in_config_spelling(tmp_path):
    cfg = config(tmp_path, "data.name=files", f"data.path={csv_source(tmp_path)}")
    with pytest.raises(ConfigError, match="data.columns.question=<column>"):
        load_data(cfg)


def test_import_writes_our_format_atomically_and_check_reads_it(tmp_path, capsys):
    source, out = csv_source(tmp_path), tmp_path / "ours"
    cols = ["--columns", "question=prompt,answer=label", "--columns", "image=img_file"]
    assert data_main([str(source), "--out", str(out), *cols], "import") == 0
    printed = capsys.readouterr().out
    assert "kept 30 of 30 rows" in printed and "data.name=files" in printed
    dd = datasets.load_from_disk(str(out))
    assert sorted(dd) == ["train", "validation"] and len(dd["validation"]) == 6
    assert data_main([str(out)], "check") == 0
    assert "ok: train 24, validation 6" in capsys.readouterr().out
    # A failed import leaves --out as it was.
    assert data_main([str(source), "--out", str(out), "--overwrite"], "import") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vprl data import: error:") and "--columns question=<column>" in err
    assert "\n" not in err and len(datasets.load_from_disk(str(out))["train"]) == 24
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ours", "pics", "qa.csv"]


@pytest.mark.parametrize("argv, message", [
    (["nope"], "does not exist"),
    (["SRC", "--columns", "question"], "write OUR_FIELD=THEIR_COLUMN"),
    (["SRC", "--metric", "bleu"], "metric 'bleu' is unknown"),
])
def test_check_refuses_bad_input_with_exit_2(tmp_path, capsys, argv, message):
    source = str(csv_source(tmp_path))
    assert data_main([source if a == "SRC" else str(tmp_path / a) if a == "nope" else a
                      for a in argv], "check") == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_a_presets_metric_is_the_configs_when_given(tmp_path):
    """data.name=chartqa used to drop data.metric silently."""
    feats = Features({"image": datasets.Image(), "query": Value("string"), "label": Value("string")})
    Dataset.from_dict({"image": [{"bytes": png(i), "path": None} for i in range(10)],
                       "query": ["How many?"] * 10, "label": ["3"] * 10},
                      features=feats).to_parquet(str(tmp_path / "chartqa.parquet"))
    for metric, expected in ((None, "relaxed_accuracy"), ("anls", "anls")):
        cfg = config(tmp_path, "data.name=chartqa", f"data.path={tmp_path / 'chartqa.parquet'}",
                     f"data.metric={metric or 'null'}")
        train, _ = load_data(cfg)
        assert set(train["metric"]) == {expected} and cfg.data.metric == expected


def test_vprl_eval_names_its_own_split_flag(tmp_path, capsys):
    from train.eval_cli import main as eval_main

    source = csv_source(tmp_path)
    assert eval_main(["--data", str(source), "--columns", "question=prompt,answer=label,image=img_file",
                      "--split", "test"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("vprl eval: error:") and "--split" in err and "split=" not in err
