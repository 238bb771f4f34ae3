"""Bad data stops a run before any model is resolved, loaded or written (issue 26).

Each kind of bad data goes through `train.iterate.main` in-process with an empty model
cache (VPRL_CACHE): the run must end with exit status 2 and one `error:` line, and the
cache must still be empty (de-quantising the embedded model costs 45 s and 517 MB)."""

import json

import pytest
from PIL import Image

from train.iterate import main


def _folder_without_metadata(root):
    Image.new("RGB", (8, 8)).save(root / "a.png")
    return ["data.name=files", f"data.path={root}"]


def _csv_without_the_question_column(root):
    Image.new("RGB", (8, 8)).save(root / "a.png")
    (root / "qa.csv").write_text("file_name,prompt,answer\na.png,what?,yes\n")
    return ["data.name=files", f"data.path={root / 'qa.csv'}"]


def _corrupt_images(root):
    rows = []
    for i in range(4):
        (root / f"{i}.png").write_bytes(b"not a png")
        rows.append({"file_name": f"{i}.png", "question": "Is it red?", "answer": "yes"})
    (root / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ["data.name=files", f"data.path={root}"]


def _malformed_rows(root):
    Image.new("RGB", (8, 8)).save(root / "a.png")
    (root / "metadata.jsonl").write_text('{"file_name": "a.png", "question": "", "answer": "yes"}\n' * 5)
    return ["data.name=files", f"data.path={root}"]


def _missing_path(root):
    return ["data.name=files", f"data.path={root / 'nowhere'}"]


@pytest.mark.parametrize("bad", [_folder_without_metadata, _csv_without_the_question_column, _corrupt_images,
                                 _malformed_rows, _missing_path])
def test_bad_data_fails_before_the_model_is_prepared(bad, tmp_path, monkeypatch, capsys):
    cache, data = tmp_path / "cache", tmp_path / "data"
    cache.mkdir()
    data.mkdir()
    monkeypatch.setenv("VPRL_CACHE", str(cache))
    status = main(["--config", "configs/shapes_rwr_cpu.yaml", f"output_dir={tmp_path / 'runs'}", "run_name=bad",
                   "tracking.mode=disabled", *bad(data)])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert status == 2 and len(errors) == 1, errors
    assert not any(cache.iterdir()), "the model cache was written before the data was checked"
    assert not (tmp_path / "runs" / "bad").exists()
