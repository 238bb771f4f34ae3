"""train.ending: every way `train/iterate.py` ends closes what the run opened, once,
newest first, with the console last (issue 26: the cleanup was written three times)."""

import signal

import pytest

from train import checkpoint as ckpt
from train.ending import Ending


class Log:
    """Records what was closed, in order; stands in for the console, tools, executor, tracker."""

    def __init__(self):
        self.events = []

    def thing(self, name):
        log = self

        class Thing:
            def close(self, error=False):
                log.events.append(f"{name}{' (error)' if error else ''}")

            def finish(self):
                log.events.append(f"{name} finished")

        return Thing()


@pytest.fixture
def opened(tmp_path):
    log = Log()
    ending = Ending(log.thing("console"), tmp_path / "run", main_proc=True)
    (tmp_path / "run").mkdir()
    for name in ("tools", "executor"):
        ending.opened(log.thing(name))
    ending.opened(log.thing("tracker"), tracker=True)
    return log, ending, tmp_path / "run"


def _checkpoint(run_dir):
    (run_dir / ckpt.ITER_DIR / "iter_000").mkdir(parents=True)
    (run_dir / ckpt.ITER_DIR / "iter_000" / "state.json").write_text("{}")


def test_a_finished_run_closes_everything_newest_first_and_the_console_last(opened):
    log, ending, _ = opened
    ending.close()
    assert log.events == ["tracker finished", "executor", "tools", "console"]


def test_a_stopped_run_closes_then_says_why_in_one_line(opened, capsys):
    log, ending, run_dir = opened
    previous = signal.getsignal(signal.SIGTERM)
    try:
        status = ending.stop(ckpt.Preempted(), 3)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN  # a second SIGTERM cannot cut it short
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert status == ckpt.PREEMPTED_STATUS and "preempted: SIGTERM in iteration 3" in capsys.readouterr().err
    assert log.events == ["tracker finished", "executor", "tools", "console"]


def test_a_crash_before_the_first_checkpoint_leaves_nothing_behind(opened):
    log, ending, run_dir = opened
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        ending.crash()
    assert log.events == ["console (error)", "tracker finished", "executor", "tools"]
    assert not run_dir.exists()


def test_a_crash_after_a_checkpoint_keeps_the_run_and_leaves_wandb_to_mark_it_failed(opened):
    log, ending, run_dir = opened
    _checkpoint(run_dir)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        ending.crash()
    assert log.events == ["console (error)", "executor", "tools"]  # the sandbox still closes
    assert ckpt.completed_iterations(run_dir) == [0]
