"""envs.atomic: a folder is replaced whole, and never goes missing on the way (issue 26)."""

import json

import pytest

import envs.atomic as atomic
from train.checkpoint import publish_best


def _folder(path, text):
    path.mkdir(parents=True)
    (path / "f.txt").write_text(text)
    return path


def test_swap_in_exchanges_in_one_step_where_linux_can(tmp_path):
    old, new = _folder(tmp_path / "out", "old"), _folder(tmp_path / "new", "new")
    assert atomic._exchange(new, old)  # renameat2(RENAME_EXCHANGE) on this kernel and filesystem
    assert (old / "f.txt").read_text() == "new" and (new / "f.txt").read_text() == "old"


def test_a_kill_right_after_the_swap_leaves_the_new_folder(tmp_path, monkeypatch):
    out, new = _folder(tmp_path / "out", "old"), _folder(tmp_path / "new", "new")

    def killed(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        atomic.swap_in(new, out)
    assert (out / "f.txt").read_text() == "new"


def test_without_exchange_two_renames_still_replace_whole(tmp_path, monkeypatch):
    out, new = _folder(tmp_path / "out", "old"), _folder(tmp_path / "new", "new")
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    atomic.swap_in(new, out)
    assert (out / "f.txt").read_text() == "new" and not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_write_leaves_the_old_folder(tmp_path):
    out = _folder(tmp_path / "out", "old")

    def write(tmp):
        (tmp / "half").write_text("x")
        raise OSError("disk full")

    with pytest.raises(OSError):
        atomic.replace_folder(out, write)
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and (out / "f.txt").read_text() == "old"


def test_publish_best_replaces_best_whole_and_keeps_it_on_failure(tmp_path):
    first, second = _folder(tmp_path / "a1", "one"), _folder(tmp_path / "a2", "two")
    publish_best(tmp_path, first, {"iteration": 0})
    publish_best(tmp_path, second, {"iteration": 1})
    best = tmp_path / "best"
    assert (best / "adapter" / "f.txt").read_text() == "two" and json.loads((best / "best.json").read_text()) == {
        "iteration": 1}
    with pytest.raises(OSError):
        publish_best(tmp_path, tmp_path / "missing", {"iteration": 2})
    assert (best / "adapter" / "f.txt").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a1", "a2", "best"]
