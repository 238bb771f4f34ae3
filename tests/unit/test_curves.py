"""Learning-curve statistics: the two-level bootstrap and reading runs' held-out records."""

import json

import numpy as np
import pytest

from train.curves import bootstrap_mean, curve, read_run, versus


def test_constant_values_give_a_degenerate_interval():
    assert bootstrap_mean(np.full((3, 50), 0.25), replicates=200) == (0.25, 0.25, 0.25)


def test_interval_holds_the_mean_and_narrows_with_more_questions():
    rng = np.random.default_rng(0)
    small = rng.binomial(1, 0.4, size=(3, 64)).astype(float)
    large = rng.binomial(1, 0.4, size=(3, 1024)).astype(float)
    m, lo, hi = bootstrap_mean(small)
    assert lo <= m <= hi and lo < hi
    _, lo2, hi2 = bootstrap_mean(large)
    assert (hi2 - lo2) < (hi - lo) / 2  # ~1/sqrt(16) as wide


def test_seed_spread_widens_the_interval():
    """Questions alike but seeds far apart: resampling seeds must show it."""
    q = np.random.default_rng(1).binomial(1, 0.5, size=256).astype(float)
    same = np.stack([q, q, q])
    apart = np.stack([np.clip(q + d, 0, 1) for d in (-0.3, 0.0, 0.3)])
    _, lo1, hi1 = bootstrap_mean(same)
    _, lo2, hi2 = bootstrap_mean(apart)
    assert hi2 - lo2 > 1.5 * (hi1 - lo1)


def test_one_seed_matches_the_binomial_standard_error_and_covers_at_the_nominal_level():
    """With one seed the bootstrap resamples questions only: its interval should be
    about ±1.96·sqrt(p(1-p)/Q) wide, and hold the true accuracy ~95% of the time."""
    rng = np.random.default_rng(2)
    x = rng.binomial(1, 0.4, size=(1, 400)).astype(float)
    m, lo, hi = bootstrap_mean(x)
    expected = 2 * 1.96 * np.sqrt(m * (1 - m) / 400)
    assert abs((hi - lo) - expected) < 0.15 * expected
    hits = 0
    for trial in range(200):
        x = rng.binomial(1, 0.4, size=(1, 120)).astype(float)
        _, lo, hi = bootstrap_mean(x, replicates=400, seed=trial)
        hits += lo <= 0.4 <= hi
    assert 0.88 <= hits / 200 <= 0.99


def test_several_seeds_cover_a_question_and_seed_effect():
    """Questions of varied difficulty shared by 3 seeds that shift accuracy: the
    two-level interval holds the population mean at least ~90% of the time."""
    rng = np.random.default_rng(3)
    hits = 0
    for trial in range(150):
        p = rng.beta(0.8, 1.2, size=120)  # per-question difficulty, mean 0.4
        shift = rng.normal(0, 0.05, size=3)
        x = rng.binomial(1, np.clip(p[None, :] + shift[:, None], 0, 1)).astype(float)
        _, lo, hi = bootstrap_mean(x, replicates=400, seed=trial)
        hits += lo <= 0.4 <= hi
    assert hits / 150 >= 0.88


def test_nan_entries_are_left_out_and_bad_input_is_refused():
    x = np.array([[1.0, np.nan, 0.0, 1.0], [np.nan, 1.0, 1.0, 1.0]])
    assert bootstrap_mean(x, replicates=100)[0] == pytest.approx(5 / 6)
    assert bootstrap_mean([1.0, 0.0, 1.0, 1.0], replicates=100)[0] == 0.75  # a vector is one seed
    with pytest.raises(ValueError, match="seeds x questions"):
        bootstrap_mean(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="level"):
        bootstrap_mean([1.0], level=1.5)


def _write_run(folder, points: dict, best: int | None = None):
    (folder / "eval").mkdir(parents=True)
    for name, accs in points.items():
        (folder / "eval" / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": f"q{i}", "accuracy": a, "logical_accuracy": a / 2}) + "\n" for i, a in enumerate(accs)))
    if best is not None:
        (folder / "best").mkdir()
        (folder / "best" / "best.json").write_text(json.dumps({"iteration": best}))


def test_curve_reads_runs_pairs_gains_and_follows_the_published_adapter(tmp_path):
    base = [0, 0, 1, 0]
    _write_run(tmp_path / "a", {"base": base, "iter_000": [1, 0, 1, 0], "iter_001": [1, 1, 1, 0]}, best=1)
    # Stopped early after iteration 0 and published the starting policy (best -1).
    _write_run(tmp_path / "b", {"base": base, "iter_000": [0, 0, 0, 0]}, best=-1)
    run = read_run(tmp_path / "b")
    assert list(run["points"]) == ["base", "iter_000"] and run["final"] == "base"
    rows = {r["point"]: r for r in curve([tmp_path / "a", tmp_path / "b"], replicates=300)}
    assert list(rows) == ["base", "iter_000", "iter_001", "final"]
    assert rows["base"]["accuracy"][0] == 0.25 and "accuracy_gain" not in rows["base"]
    assert rows["iter_000"]["accuracy"][0] == pytest.approx(2 / 8)
    assert rows["iter_000"]["accuracy_gain"][0] == pytest.approx(0.0)
    # b has no iter_001: it counts with what it ended with, its published base policy.
    assert rows["iter_001"]["accuracy"][0] == pytest.approx((3 + 1) / 8)
    assert rows["final"]["accuracy"][0] == pytest.approx((3 + 1) / 8)
    assert rows["final"]["accuracy_gain"][0] == pytest.approx(0.25)
    lo, hi = rows["final"]["accuracy_gain"][1:]
    assert lo <= 0.25 <= hi
    assert rows["final"]["logical_accuracy"][0] == pytest.approx(rows["final"]["accuracy"][0] / 2)
    with pytest.raises(FileNotFoundError, match="eval/"):
        read_run(tmp_path / "missing")


def test_a_run_that_has_not_finished_counts_only_where_it_got_to(tmp_path):
    base = [0, 0, 1, 0]
    _write_run(tmp_path / "a", {"base": base, "iter_000": [1, 0, 1, 0], "iter_001": [1, 1, 1, 0]}, best=1)
    _write_run(tmp_path / "b", {"base": base, "iter_000": [0, 0, 0, 0]})  # still running: no best/
    assert read_run(tmp_path / "b")["finished"] is False
    rows = {r["point"]: r for r in curve([tmp_path / "a", tmp_path / "b"], replicates=300)}
    assert rows["iter_000"]["seeds"] == 2 and rows["iter_000"]["accuracy"][0] == pytest.approx(2 / 8)
    # b did not reach iter_001 and published nothing: iter_001 and final are a's alone.
    assert rows["iter_001"]["seeds"] == 1 and rows["iter_001"]["accuracy"][0] == pytest.approx(3 / 4)
    assert rows["final"]["seeds"] == 1 and rows["final"]["accuracy_gain"][0] == pytest.approx(0.5)


def test_versus_pairs_arms_by_seed_and_question_and_skips_unfinished_pairs(tmp_path):
    base = [0, 0, 0, 0]
    # Arm x beats the reference by one question on seed 0 and by two on seed 1.
    _write_run(tmp_path / "x0", {"base": base, "iter_000": [1, 1, 0, 0]}, best=0)
    _write_run(tmp_path / "r0", {"base": base, "iter_000": [1, 0, 0, 0]}, best=0)
    _write_run(tmp_path / "x1", {"base": base, "iter_000": [1, 1, 1, 0]}, best=0)
    _write_run(tmp_path / "r1", {"base": base, "iter_000": [0, 1, 0, 0]}, best=-1)  # published the base
    v = versus([tmp_path / "x0", tmp_path / "x1"], [tmp_path / "r0", tmp_path / "r1"], "final", replicates=500)
    assert v["seeds"] == 2 and v["point"] == "final"
    # final of r1 is its base (all zeros): differences 1/4 (seed 0) and 3/4 (seed 1).
    assert v["accuracy"][0] == pytest.approx(0.5)
    assert 0 <= v["accuracy"][1] <= 0.5 <= v["accuracy"][2] <= 1  # no difference is negative
    assert v["logical_accuracy"][0] == pytest.approx(0.25)
    last = versus([tmp_path / "x0", tmp_path / "x1"], [tmp_path / "r0", tmp_path / "r1"], "iter_000", replicates=500)
    assert last["accuracy"][0] == pytest.approx((1 / 4 + 2 / 4) / 2)
    # A reference run that has not finished does not count at `final`.
    _write_run(tmp_path / "r2", {"base": base, "iter_000": [0, 0, 0, 0]})
    _write_run(tmp_path / "x2", {"base": base, "iter_000": [1, 1, 1, 1]}, best=0)
    assert versus([tmp_path / "x2"], [tmp_path / "r2"], "final", replicates=100) == {}
    # Arms evaluated on different questions are refused, not compared.
    (tmp_path / "q").mkdir()
    _write_run(tmp_path / "q" / "x", {"base": [0, 0], "iter_000": [1, 0]}, best=0)
    (tmp_path / "q" / "x" / "eval" / "iter_000.jsonl").write_text(
        "".join(json.dumps({"id": f"other{i}", "accuracy": 1, "logical_accuracy": 1}) + "\n" for i in range(4)))
    with pytest.raises(ValueError, match="different held-out questions"):
        versus([tmp_path / "q" / "x"], [tmp_path / "r0"], "iter_000", replicates=100)


def test_the_plot_puts_each_point_at_the_iteration_it_measures(tmp_path, monkeypatch):
    """A run evaluated every 2 iterations: points at 0, 2, 4, 6, not 0, 1, 2, 3."""
    import matplotlib.pyplot as plt

    from bench.learning_curve import plot

    shown = []
    monkeypatch.setattr(plt, "close", shown.append)
    cell = (0.5, 0.4, 0.6)
    rows = [{"point": p, "accuracy": cell, "logical_accuracy": cell} for p in ("base", "iter_001", "iter_003", "iter_005")]
    plot({"arm": {"curve": rows + [{"point": "final", "accuracy": cell}], "seeds": [0], "info": {}}},
         tmp_path / "curve.png", None)
    (fig,) = shown
    for ax in fig.axes:
        assert list(ax.lines[0].get_xdata()) == [0, 2, 4, 6]
    assert (tmp_path / "curve.png").is_file()
