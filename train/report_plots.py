"""The report's figures, as PNG bytes (matplotlib, no display needed).

Every curve has one line per run, on one axis of "updates" (0 = the starting policy), with
the starting point drawn as a hollow square and the best adapter as a star.
"""

from __future__ import annotations

import io

from train.report_data import Run

ERROR_GROUPS = ("compile", "runtime", "timeout", "other")
PHASES = ("rollout", "update", "eval")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a cluster node
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    return buf.getvalue()


def _mark(ax, run: Run, points, color) -> None:
    """The starting policy (hollow square) and the best adapter (star) on a curve."""
    values = dict(points)
    if 0 in values:
        ax.plot([0], [values[0]], "s", mfc="none", mec=color, ms=10, mew=1.5)
    best = run.best_updates
    if best is not None and best in values:
        ax.plot([best], [values[best]], "*", color=color, ms=15, mec="black", mew=0.6)


def _axes_style(ax, title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=11)
    ax.set_xlabel("updates (0 = starting policy)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.xaxis.get_major_locator().set_params(integer=True)


def curves(runs: list[Run], panels: list[tuple[str, list[tuple[str, str]]]], ylabel: str = "",
           free_y: tuple[str, ...] = ()) -> bytes | None:
    """One panel per (title, [(metric key, line style label)]), two per row; one colour per run.
    Rates and accuracies keep the y axis at [0, 1], so noise looks as small as it is;
    panels named in `free_y` (a reward, which weights can scale) choose their own."""
    plt = _pyplot()
    panels = [(t, ks) for t, ks in panels if any(r.series(k) for r in runs for k, _ in ks)]
    if not panels:
        return None
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 3.9 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = ["-", "--", ":", "-."]
    last = max(x for r in runs for _, ks in panels for k, _ in ks for x, _ in r.series(k))
    for ax, (title, keys) in zip(axes.flat, panels):
        ax.set_xlim(-0.3, last + 0.3)  # every panel starts at the starting policy, with or without a point there
        for i, run in enumerate(runs):
            color = colors[i % len(colors)]
            for j, (key, label) in enumerate(keys):
                points = run.series(key)
                if not points:
                    continue
                xs, ys = zip(*points)
                name = run.name if len(keys) == 1 else f"{run.name} {label}"
                ax.plot(xs, ys, styles[j % len(styles)], color=color, marker="o", ms=4, label=name)
                _mark(ax, run, points, color)
        _axes_style(ax, title, ylabel)
        if title not in free_y:
            ax.set_ylim(-0.03, 1.03)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


def main_curves(runs: list[Run]) -> bytes | None:
    return curves(runs, [
        ("training reward (mean)", [("reward/mean", "")]),
        ("accuracy: greedy held-out, sampled training", [("eval/accuracy", "greedy, held-out"),
                                                          ("rollout/accuracy", "sampled (training temperature)")]),
        ("logical accuracy (counterfactual scenes)", [("eval/logical_accuracy", "")]),
        ("programs that run (pass rate)", [("rollout/pass_rate", "rollouts"), ("eval/pass_rate", "held-out")]),
    ], free_y=("training reward (mean)",))


def error_breakdown(runs: list[Run]) -> bytes | None:
    return curves(runs, [(f"{group} errors (share of rollouts)", [(f"rollout/error/{group}", "")])
                         for group in ERROR_GROUPS], ylabel="share")


def family_curves(runs: list[Run]) -> bytes | None:
    """Held-out accuracy per prompt family and per aggregator over the families."""
    keys = sorted({k for r in runs for k in r.keys("eval/family/", "/accuracy") + r.keys("eval/aggregate/", "/accuracy")})
    if len(keys) < 2:  # one family: the same curve as held-out accuracy
        return None
    return curves(runs, [("held-out accuracy by prompt family", [(k, k.split("/")[2]) for k in keys])])


def timings(runs: list[Run]) -> bytes | None:
    """Seconds per phase per iteration, stacked; one panel per run."""
    plt = _pyplot()
    runs = [r for r in runs if r.series("time/iteration")]
    if not runs:
        return None
    fig, axes = plt.subplots(1, len(runs), figsize=(5.2 * len(runs), 3.6), squeeze=False)
    for ax, run in zip(axes[0], runs):
        iterations = [int(m["iteration"]) for m in run.metrics]
        bottom = [0.0] * len(iterations)
        for phase in PHASES:
            values = [float(m.get(f"time/{phase}") or 0.0) for m in run.metrics]
            ax.bar(iterations, values, bottom=bottom, label=phase)
            bottom = [b + v for b, v in zip(bottom, values)]
        other = [max(0.0, float(m.get("time/iteration") or 0.0) - b) for m, b in zip(run.metrics, bottom)]
        ax.bar(iterations, other, bottom=bottom, label="other")
        ax.set_title(f"{run.name}: seconds per iteration", fontsize=11)
        ax.set_xlabel("iteration")
        ax.set_ylabel("seconds")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return _png(fig)


def all_plots(runs: list[Run]) -> dict[str, bytes]:
    """name -> PNG, for the figures that have data."""
    made = {"curves": main_curves(runs), "errors": error_breakdown(runs), "families": family_curves(runs),
            "timings": timings(runs)}
    return {name: png for name, png in made.items() if png}
