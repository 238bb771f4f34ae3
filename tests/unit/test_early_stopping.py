"""Early stopping on declining mean training reward."""

from train.early_stopping import EarlyStopper


def test_stops_after_patience_declines_and_points_at_the_best_policy():
    s = EarlyStopper(patience=2, min_delta=0.0)
    # reward of iteration t scores the adapter of iteration t-1
    assert not s.update(0.2, -1)
    assert not s.update(0.5, 0)
    assert not s.update(0.4, 1)      # first decline
    assert s.update(0.3, 2)          # second decline -> stop
    assert s.best_policy == 0 and s.best == 0.5 and s.declines == 2


def test_recovery_resets_the_count_and_min_delta_absorbs_noise():
    s = EarlyStopper(patience=2, min_delta=0.05)
    s.update(0.5, -1)
    assert not s.update(0.47, 0) and s.declines == 0   # within min_delta
    assert not s.update(0.4, 1) and s.declines == 1
    assert not s.update(0.49, 2) and s.declines == 0   # back within min_delta of best
    assert not s.update(0.6, 3) and s.best_policy == 3


def test_disabled_never_stops_but_still_tracks_best():
    s = EarlyStopper(patience=1, enabled=False)
    s.update(1.0, -1)
    assert not s.update(0.0, 0)
    assert s.best_policy == -1


def test_state_round_trip_keeps_progress_and_takes_settings_from_the_new_config():
    s = EarlyStopper(patience=3)
    s.update(0.3, -1)
    s.update(0.1, 0)
    t = EarlyStopper(patience=5, min_delta=0.01, enabled=False)  # the resumed run's config
    t.load_state_dict(s.state_dict())
    assert (t.best, t.best_policy, t.declines, t.scores) == (0.3, -1, 1, {-1: 0.3, 0: 0.1})
    assert (t.patience, t.min_delta, t.enabled) == (5, 0.01, False)


def test_a_nan_reward_neither_improves_nor_declines():
    s = EarlyStopper(patience=1)
    assert not s.update(float("nan"), -1)
    assert s.best is None
    s.update(0.4, 0)
    assert not s.update(float("nan"), 1) and s.best == 0.4 and s.declines == 0
    assert s.update(0.1, 2) and s.best_policy == 0


def test_a_tie_goes_to_the_later_adapter():
    s = EarlyStopper(patience=2)
    s.update(0.5, -1)
    assert not s.update(0.5, 0) and s.best_policy == 0 and s.declines == 0
