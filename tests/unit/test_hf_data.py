"""The real-dataset loader on tiny local fixtures written in each dataset's published schema.

Every fixture is built in tmp_path with real PNG/JPEG bytes; nothing is downloaded.
"""

import json

import datasets
import pytest
from datasets import ClassLabel, Dataset, DatasetDict, Features, List, Value
from PIL import Image as PILImage

from envs.data import hf
from envs.data.hf import load_vqa
from envs.data.presets import PRESETS, get_preset, select_subsample
from rewards.metrics import METRICS, REFERENCE_COLUMN, get_metric
from tests.helpers.vqa_files import COLORS, gqa_fixture, image_bytes

def img(i=0):
    return {"bytes": image_bytes(i), "path": None}


IMAGE = datasets.Image()
TEXT = Value("string")


def load(source, tmp_path, **kwargs):
    return load_vqa(str(source), cache_dir=str(tmp_path / "hf-cache"), **kwargs)


# -- one fixture per preset, in the published schema ---------------------------------------


def vqav2_fixture(tmp_path):
    answers = List({"answer": TEXT, "answer_confidence": TEXT, "answer_id": Value("int64")})
    ds = Dataset.from_dict(
        {"question_type": ["how many", "what color"], "multiple_choice_answer": ["2", "red"],
         "answers": [[{"answer": a, "answer_confidence": "yes", "answer_id": k + 1}
                      for k, a in enumerate(["2"] * 9 + ["3"])],
                     [{"answer": "red", "answer_confidence": "yes", "answer_id": k + 1}
                      for k in range(10)]],
         "image_id": [1, 2], "answer_type": ["number", "other"], "question_id": [10, 20],
         "question": ["How many dogs?", "What color is the car?"], "image": [img(0), img(1)]},
        features=Features({"question_type": TEXT, "multiple_choice_answer": TEXT,
                           "answers": answers, "image_id": Value("int64"), "answer_type": TEXT,
                           "question_id": Value("int64"), "question": TEXT, "image": IMAGE}))
    DatasetDict({"validation": ds, "test": ds}).save_to_disk(str(tmp_path / "vqav2"))
    return tmp_path / "vqav2"


def okvqa_fixture(tmp_path):
    ds = Dataset.from_dict(
        {"question_id": [1, 2], "question": ["What sport?", "What food?"],
         "answers": [["tennis"] * 10, ["pizza"] * 6 + ["pie"] * 4],
         "question_type": ["sports", "food"], "answer_type": ["other", "other"],
         "image": [img(0), img(1)]},
        features=Features({"question_id": Value("int64"), "question": TEXT,
                           "answers": List(TEXT), "question_type": TEXT, "answer_type": TEXT,
                           "image": IMAGE}))
    ds.save_to_disk(str(tmp_path / "okvqa"))
    return tmp_path / "okvqa"


def aokvqa_fixture(tmp_path):
    ds = Dataset.from_dict(
        {"image": [img(0)], "question_id": ["q1"], "question": ["What is the man doing?"],
         "choices": [["surfing", "skiing", "running", "eating"]], "correct_choice_idx": [0],
         "direct_answers": [["surfing"] * 7 + ["surf"] * 3], "difficult_direct_answer": [False],
         "rationales": [["He is on a board in the sea."]]},
        features=Features({"image": IMAGE, "question_id": TEXT, "question": TEXT,
                           "choices": List(TEXT), "correct_choice_idx": Value("int32"),
                           "direct_answers": List(TEXT),
                           "difficult_direct_answer": Value("bool"), "rationales": List(TEXT)}))
    path = tmp_path / "aokvqa.parquet"
    ds.to_parquet(str(path))
    return path


def chartqa_fixture(tmp_path):
    ds = Dataset.from_dict(
        {"image": [img(0), img(1)], "query": ["Share of A?", "Which is larger?"],
         "label": [["12.5"], ["Asia"]], "human_or_machine": [0, 1]},
        features=Features({"image": IMAGE, "query": TEXT, "label": List(TEXT),
                           "human_or_machine": ClassLabel(names=["human", "machine"])}))
    ds.save_to_disk(str(tmp_path / "chartqa"))
    return tmp_path / "chartqa"


def plotqa_fixture(tmp_path):
    """PlotQA v2 qa_pairs flattened to JSON lines, images named <image_index>.png."""
    (tmp_path / "png").mkdir()
    lines = []
    for k, answer in enumerate([3.0, 12.75, "Yes"]):
        (tmp_path / "png" / f"{k}.png").write_bytes(image_bytes(k))
        lines.append({"image_index": k, "question_string": f"Question {k}?", "answer": answer,
                      "question_id": k, "template": "data_retrieval", "type": "structural"})
    path = tmp_path / "qa_pairs.jsonl"
    path.write_text("\n".join(map(json.dumps, lines)))  # mixed number/text answers
    return path


def docvqa_fixture(tmp_path, config="DocVQA"):
    if config == "DocVQA":
        cols = {"questionId": ["337", "338"], "question": ["What is the date?", "Who wrote?"],
                "question_types": [["handwritten"], ["layout", "form"]],
                "image": [img(0), img(1)], "docId": [279, 280],
                "ucsf_document_id": ["qqbj0226", "xxbj0227"], "ucsf_document_page_no": ["1", "2"],
                "answers": [["1/8/93", "January 8, 1993"], ["Dr. Lobo"]],
                "data_split": ["val", "val"]}
        feats = {"questionId": TEXT, "question": TEXT, "question_types": List(TEXT),
                 "image": IMAGE, "docId": Value("int64"), "ucsf_document_id": TEXT,
                 "ucsf_document_page_no": TEXT, "answers": List(TEXT), "data_split": TEXT}
    else:
        cols = {"questionId": ["98313"], "question": ["Which social platform is most used?"],
                "answers": [["facebook", "Facebook"]], "answer_type": [["single span"]],
                "image": [img(2)], "image_url": ["https://example.invalid/a.png"],
                "operation/reasoning": [["comparison"]], "ocr": ["..."], "data_split": ["val"]}
        feats = {"questionId": TEXT, "question": TEXT, "answers": List(TEXT),
                 "answer_type": List(TEXT), "image": IMAGE, "image_url": TEXT,
                 "operation/reasoning": List(TEXT), "ocr": TEXT, "data_split": TEXT}
    path = tmp_path / config.lower() / "validation-00000-of-00001.parquet"
    path.parent.mkdir()
    Dataset.from_dict(cols, features=Features(feats)).to_parquet(str(path))
    return path.parent


def sugarcrepe_fixture(tmp_path):
    ds = Dataset.from_dict(
        {"image": [img(0), img(1)], "filename": ["000000001.jpg", "000000002.jpg"],
         "caption": ["A white pitcher holding flowers.", "A dog on a bed."],
         "negative_caption": ["A white pitcher holding spoons.", "A cat on a bed."],
         "category": ["replace_obj", "replace_obj"]},
        features=Features({"image": IMAGE, "filename": TEXT, "caption": TEXT,
                           "negative_caption": TEXT, "category": TEXT}))
    ds.save_to_disk(str(tmp_path / "sugarcrepe"))
    return tmp_path / "sugarcrepe"


def winoground_fixture(tmp_path):
    ds = Dataset.from_dict(
        {"id": [0], "image_0": [img(0)], "image_1": [img(1)],
         "caption_0": ["an old person kisses a young person"],
         "caption_1": ["a young person kisses an old person"], "tag": ["Object"],
         "secondary_tag": [""], "num_main_preds": [1], "collapsed_tag": ["Object"]},
        features=Features({"id": Value("int32"), "image_0": IMAGE, "image_1": IMAGE,
                           "caption_0": TEXT, "caption_1": TEXT, "tag": TEXT,
                           "secondary_tag": TEXT, "num_main_preds": Value("int32"),
                           "collapsed_tag": TEXT}))
    ds.save_to_disk(str(tmp_path / "winoground"))
    return tmp_path / "winoground"


def nlvr2_fixture(tmp_path):
    ds = Dataset.from_dict(
        {"identifier": ["dev-850-0-0", "dev-850-0-1"],
         "sentence": ["The left image contains twice as many dogs.", "There are no dogs."],
         "left_image": [img(0), img(2)], "right_image": [img(1), img(3)],
         "label": ["True", "False"]},
        features=Features({"identifier": TEXT, "sentence": TEXT, "left_image": IMAGE,
                           "right_image": IMAGE, "label": TEXT}))
    ds.save_to_disk(str(tmp_path / "nlvr2"))
    return tmp_path / "nlvr2"


# preset -> (fixture, load_vqa kwargs, expected rows, first row's expected answer/answers)
CASES = {
    "gqa": (gqa_fixture, lambda t: {"image_root": t / "images"}, 16, "no"),
    "vqav2": (vqav2_fixture, lambda t: {"split": "validation"}, 2, "2"),
    "okvqa": (okvqa_fixture, lambda t: {}, 2, "tennis"),
    "aokvqa": (aokvqa_fixture, lambda t: {}, 1, "surfing"),
    "chartqa": (chartqa_fixture, lambda t: {}, 2, "12.5"),
    "plotqa": (plotqa_fixture, lambda t: {"image_root": t / "png"}, 3, "3"),
    "docvqa": (docvqa_fixture, lambda t: {}, 2, "1/8/93"),
    "infovqa": (lambda t: docvqa_fixture(t, "InfographicVQA"), lambda t: {}, 1, "facebook"),
    "sugarcrepe": (sugarcrepe_fixture, lambda t: {}, 4, "yes"),
    "winoground": (winoground_fixture, lambda t: {}, 4, "yes"),
    "nlvr2": (nlvr2_fixture, lambda t: {}, 2, "yes"),
}


def test_every_preset_has_a_fixture_and_a_known_metric():
    assert set(CASES) == set(PRESETS)
    assert all(p.metric in METRICS for p in PRESETS.values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_preset_loads_its_published_schema(name, tmp_path):
    fixture, kwargs, n_rows, first_answer = CASES[name]
    ds, report = load(fixture(tmp_path), tmp_path, preset=name, **kwargs(tmp_path))
    assert len(ds) == n_rows == report.kept
    assert report.skipped == {}
    assert ds.column_names[:5] == ["id", "image", "question", "answer", "answers"]
    row = ds[0]
    assert isinstance(row["image"], PILImage.Image) and row["image"].width > 0
    assert row["question"] and row["answer"] == first_answer
    assert row["answer"] in row["answers"] or PRESETS[name].metric == "anls"
    assert set(ds["metric"]) == {PRESETS[name].metric}
    assert len(set(ds["id"])) == len(ds)
    # The gold answer earns full marks under the preset's own metric.
    metric = row["metric"]
    assert get_metric(metric)(row["answer"], row[REFERENCE_COLUMN[metric]]) == 1.0


def test_vqa_answers_come_from_structs_and_lists(tmp_path):
    ds, _ = load(vqav2_fixture(tmp_path), tmp_path, preset="vqav2", split="validation")
    assert ds[0]["answers"] == ["2"] * 9 + ["3"] and ds[0]["group"] == "2"
    assert ds[0]["question_type"] == "how many"  # extras travel along
    ok, _ = load(okvqa_fixture(tmp_path), tmp_path, preset="okvqa")
    assert ok[1]["answer"] == "pizza"  # the majority answer when only `answers` exists


def test_gqa_group_is_the_detailed_type(tmp_path):
    ds, report = load(gqa_fixture(tmp_path), tmp_path, preset="gqa",
                      image_root=tmp_path / "images")
    assert report.columns["group"] == "types.detailed"
    assert set(ds["group"]) == {"typeVerifyC", "stateChoose", "companyVerify"}
    assert ds[0]["fullAnswer"] == "Yes, it is."


def test_chartqa_group_uses_class_label_names(tmp_path):
    ds, _ = load(chartqa_fixture(tmp_path), tmp_path, preset="chartqa")
    assert ds["group"] == ["human", "machine"]


def test_winoground_expands_to_all_four_pairings(tmp_path):
    ds, report = load(winoground_fixture(tmp_path), tmp_path, preset="winoground")
    assert report.source_rows == 1 and report.candidate_rows == 4
    assert ds["answer"] == ["yes", "no", "no", "yes"]
    assert ds[1]["question"] == 'Verify image matches text="a young person kisses an old person"'
    assert ds[0]["image"].getpixel((0, 0)) == (255, 0, 0)
    assert ds[2]["image"].getpixel((0, 0)) == (0, 128, 0)


def test_sugarcrepe_gives_positive_and_negative_questions(tmp_path):
    ds, _ = load(sugarcrepe_fixture(tmp_path), tmp_path, preset="sugarcrepe")
    assert ds["answer"] == ["yes", "no", "yes", "no"]
    assert ds[1]["question"] == 'Verify image matches text="A white pitcher holding spoons."'


def test_nlvr2_places_the_pair_side_by_side(tmp_path):
    ds, _ = load(nlvr2_fixture(tmp_path), tmp_path, preset="nlvr2")
    image = ds[0]["image"]
    assert image.size == (8 + 8 + 8, 6)
    assert image.getpixel((0, 0)) == (255, 0, 0) and image.getpixel((20, 0)) == (0, 128, 0)
    assert ds["answer"] == ["yes", "no"]


def test_nlvr2_urls_are_looked_up_under_image_root_never_fetched(tmp_path):
    (tmp_path / "imgs").mkdir()
    for name, k in [("a-img0.png", 0), ("a-img1.png", 1)]:
        (tmp_path / "imgs" / name).write_bytes(image_bytes(k))
    path = tmp_path / "nlvr2.jsonl"
    rows = [{"identifier": "a", "sentence": "Two dogs.", "label": "True",
             "left_url": "https://example.invalid/x/a-img0.png",
             "right_url": "https://example.invalid/x/a-img1.png"},
            {"identifier": "b", "sentence": "No dogs.", "label": "False",
             "left_url": "https://example.invalid/x/gone.png",
             "right_url": "https://example.invalid/x/a-img1.png"}]
    path.write_text("\n".join(map(json.dumps, rows)))
    ds, report = load(path, tmp_path, preset="nlvr2", image_root=tmp_path / "imgs",
                      max_bad_fraction=0.5)
    assert ds["id"] == ["a"] and report.skipped == {"missing_image": 1}


def test_imagefolder_with_metadata(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    meta = []
    for k in range(3):
        (folder / f"{k}.png").write_bytes(image_bytes(k))
        meta.append({"file_name": f"{k}.png", "question": f"What color is {k}?",
                     "answer": COLORS[k]})
    (folder / "metadata.jsonl").write_text("\n".join(map(json.dumps, meta)))
    ds, report = load(folder, tmp_path)
    assert len(ds) == 3 and sorted(ds["answer"]) == sorted(COLORS[:3])
    assert report.metric is None and "metric" not in ds.column_names


# -- malformed rows --------------------------------------------------------------------


def messy_dataset(tmp_path, good=6):
    images = [img(k) for k in range(good)] + [{"bytes": b"\x89PNG\r\n\x1a\n broken", "path": None},
                                              None, img(0), img(1)]
    questions = [f"Question {k}?" for k in range(good)] + ["q?", "q?", "", "q?"]
    answers = ["yes"] * (good + 3) + [None]
    path = tmp_path / "messy"
    Dataset.from_dict({"image": images, "question": questions, "answer": answers},
                      features=Features({"image": IMAGE, "question": TEXT, "answer": TEXT})
                      ).save_to_disk(str(path))
    return path


def test_malformed_rows_are_skipped_and_counted(tmp_path):
    ds, report = load(messy_dataset(tmp_path, good=36), tmp_path, max_bad_fraction=0.2)
    assert len(ds) == 36 and report.candidate_rows == 40
    assert report.skipped == {"unreadable_image": 1, "missing_image": 1,
                              "empty_question": 1, "missing_answer": 1}
    assert report.bad_fraction == pytest.approx(0.1)
    assert any(e.startswith("36: unreadable_image") for e in report.examples)
    assert "skipped" in str(report)


def test_too_many_malformed_rows_raise_one_clear_line(tmp_path):
    with pytest.raises(ValueError) as err:
        load(messy_dataset(tmp_path), tmp_path)  # 4 bad of 10, default limit 5%
    message = str(err.value)
    assert "\n" not in message
    assert "max_bad_fraction=0.05" in message and "empty_question=1" in message


def test_unreadable_images_are_caught_in_the_subsample(tmp_path):
    corrupt = {"bytes": b"GIF89a truncated", "path": None}
    Dataset.from_dict({"image": [img(0), corrupt] * 5, "question": ["q?"] * 10,
                       "answer": ["a"] * 10, "group": ["g1", "g2"] * 5},
                      features=Features({"image": IMAGE, "question": TEXT, "answer": TEXT,
                                         "group": TEXT})).save_to_disk(str(tmp_path / "half"))
    with pytest.raises(ValueError, match="unreadable_image=2.*re-extract"):
        load(tmp_path / "half", tmp_path, subsample={"per_group": 2})


def test_missing_column_names_the_fix(tmp_path):
    Dataset.from_dict({"image": [img(0)], "prompt": ["q?"], "answer": ["a"]},
                      features=Features({"image": IMAGE, "prompt": TEXT, "answer": TEXT})
                      ).save_to_disk(str(tmp_path / "odd"))
    with pytest.raises(ValueError, match=r"columns=\{'question'"):
        load(tmp_path / "odd", tmp_path)
    ds, report = load(tmp_path / "odd", tmp_path, columns={"question": "prompt"})
    assert ds[0]["question"] == "q?" and report.columns["question"] == "prompt"


# -- subsampling -----------------------------------------------------------------------


def test_gqa_paper_subsample_takes_ten_per_group(tmp_path):
    ds, report = load(gqa_fixture(tmp_path), tmp_path, preset="gqa",
                      image_root=tmp_path / "images", subsample="paper", seed=3)
    counts = {g: ds["group"].count(g) for g in set(ds["group"])}
    assert counts == {"typeVerifyC": 10, "stateChoose": 3, "companyVerify": 1}
    assert report.candidate_rows == 16 and report.image_checked == 14


def test_subsample_is_deterministic_and_seeded():
    groups = ["a"] * 50 + ["b"] * 50
    first = select_subsample(100, groups, {"per_group": 5}, seed=1)
    assert first == select_subsample(100, groups, {"per_group": 5}, seed=1)
    assert first != select_subsample(100, groups, {"per_group": 5}, seed=2)
    assert first == sorted(first)


def test_subsample_top_groups_and_balanced_total():
    groups = ["a"] * 30 + ["b"] * 20 + ["c"] * 5
    top = select_subsample(55, groups, {"per_group": 10, "top_groups": 2})
    assert {groups[i] for i in top} == {"a", "b"} and len(top) == 20
    balanced = select_subsample(55, groups, {"total": 12})
    assert sorted(groups[i] for i in balanced).count("c") == 4  # 4 from each group
    assert len(select_subsample(55, None, {"total": 7})) == 7


def test_subsample_errors(tmp_path):
    with pytest.raises(ValueError, match="group column"):
        select_subsample(3, None, {"per_group": 1})
    with pytest.raises(ValueError, match="published sampling"):
        load(chartqa_fixture(tmp_path), tmp_path, preset="chartqa", subsample="paper")


# -- sources and names -----------------------------------------------------------------


def test_unknown_preset_lists_known_ones():
    with pytest.raises(ValueError, match="known presets: .*winoground"):
        get_preset("clevr")


def test_split_must_be_chosen_when_several_exist(tmp_path):
    with pytest.raises(ValueError, match="available: validation, test"):
        load(vqav2_fixture(tmp_path), tmp_path, preset="vqav2")


def test_missing_local_path_is_not_sent_to_the_hub(tmp_path, monkeypatch):
    monkeypatch.setattr(hf.datasets, "load_dataset", pytest.fail)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nope", tmp_path)


def test_hub_names_go_to_load_dataset_with_the_preset_config(monkeypatch, tmp_path):
    calls = []

    def fake_load_dataset(path, name=None, split=None, cache_dir=None, **_):
        calls.append((path, name, split))
        return Dataset.from_dict(
            {"questionId": ["1"], "question": ["q?"], "answers": [["a"]], "image": [img(0)]},
            features=Features({"questionId": TEXT, "question": TEXT, "answers": List(TEXT),
                               "image": IMAGE}))

    monkeypatch.setattr(hf.datasets, "load_dataset", fake_load_dataset)
    ds, _ = load_vqa("lmms-lab/DocVQA", split="validation", preset="docvqa")
    assert calls == [("lmms-lab/DocVQA", "DocVQA", "validation")] and len(ds) == 1
