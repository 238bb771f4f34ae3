"""`vprl report RUN [RUN ...] --out report.html`: one self-contained HTML page per set of runs.

Everything comes from the run folders (no W&B, no network): curves of reward, accuracy,
logical accuracy, pass rate and errors with one line per run, the early-stopping
decision, per-family numbers, best and worst rollouts, unit-test suites, the few-shot
pool, the resolved config and timings. Images are inlined as data URIs and a Content
Security Policy forbids any other source, so the page opens offline and a browser
reports any attempt to load something from outside. The figures are also written as PNG
files beside the page, for papers and READMEs.
"""

from __future__ import annotations

import argparse
import base64
import html
import shutil
import sys
import time
from pathlib import Path

import yaml

from envs.cliargs import number
from train.report_data import ReportError, Run, load_run, stop_decision
from train.report_tables import (config_diff, family_table, generic_table, metrics_table, question_family_table,
                                 rollout_cards, suites_view)

SECTIONS = ("summary", "curves", "errors", "early-stopping", "families", "rollouts", "unit-tests", "pool",
            "timings", "config", "log")

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1200px;padding:1em 2em;
color:#1f2328;line-height:1.4}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:1.8em}
nav a{margin-right:1em} table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}
th,td{border:1px solid #d0d7de;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f6f8fa;padding:.5em;overflow-x:auto;font-size:.85em;margin:.3em 0;white-space:pre-wrap}
img.plot{max-width:100%;border:1px solid #d0d7de} img.thumb{width:128px;image-rendering:pixelated}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:1em}
.card{border:1px solid #d0d7de;border-radius:6px;padding:.6em;display:flex;gap:.8em}
.card .body{flex:1;min-width:0} .ok{color:#1a7f37;font-weight:600} .bad{color:#cf222e;font-weight:600}
.scroll{overflow-x:auto} .muted{color:#656d76} .pass{background:#dafbe1} .fail{background:#ffebe9} details{margin:.3em 0}
"""


def _img(png: bytes, alt: str, cls: str = "plot") -> str:
    data = base64.b64encode(png).decode()
    return f'<img class="{cls}" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _section(sid: str, title: str, body: str) -> str:
    return f'<section id="{sid}">\n<h2>{html.escape(title)}</h2>\n{body}\n</section>'


def _per_run(runs: list[Run], render) -> str:
    parts = []
    for run in runs:
        body = render(run)
        if body:
            parts.append(f"<h3>{html.escape(run.name)}</h3>\n{body}" if len(runs) > 1 else body)
    return "\n".join(parts)


def _none(what: str) -> str:
    return f'<p class="muted">{html.escape(what)}</p>'


def render_html(runs: list[Run], plots: dict[str, bytes], samples: int = 4) -> str:
    names = ", ".join(r.name for r in runs)
    last = {r.name: (r.iterations[-1] if r.iterations else None) for r in runs}
    sections = []

    rows = []
    for run in runs:
        reward, acc = run.series("reward/mean"), run.series("eval/accuracy")
        rows.append({"run": run.name, "folder": str(run.path), "iterations": len(run.iterations),
                     "reward (first → last)": f"{reward[0][1]:.3f} → {reward[-1][1]:.3f}" if reward else None,
                     "held-out accuracy (first → last)": f"{acc[0][1]:.3f} → {acc[-1][1]:.3f}" if acc else None,
                     "best adapter (updates)": run.best_updates, "stopped early": (run.best or {}).get("stopped_early")})
    sections.append(_section("summary", "Summary", generic_table(rows, None)))

    legend = ('<p class="muted">One colour per run. Hollow square: the starting policy (0 updates); star: the '
              "adapter published in <code>best/</code>. The training reward of iteration t scores the policy that "
              "sampled it (t updates); held-out metrics of iteration t score the policy after its update (t + 1).</p>")
    body = _img(plots["curves"], "learning curves") + legend if "curves" in plots else _none("no metrics yet")
    body += _per_run(runs, metrics_table)
    sections.append(_section("curves", "Reward, accuracy, logical accuracy and pass rate per iteration", body))

    body = _img(plots["errors"], "error breakdown") if "errors" in plots else _none("no rollout errors recorded")
    body += _per_run(runs, lambda r: metrics_table(r, ("rollout/pass_rate", "rollout/error/compile",
                                                        "rollout/error/runtime", "rollout/error/timeout",
                                                        "rollout/error/other", "eval/pass_rate")))
    sections.append(_section("errors", "Error breakdown", body))

    body = "<ul>" + "".join(f"<li><b>{html.escape(r.name)}</b>: {html.escape(stop_decision(r))}</li>" for r in runs) + "</ul>"
    sections.append(_section("early-stopping", "Early stopping", body))

    body = (_img(plots["families"], "accuracy by prompt family") if "families" in plots else "")
    body += "<h3>Prompt families</h3>" + (_per_run(runs, family_table) or _none("no per-family metrics"))
    body += ("<h3>Question families (held-out answers)</h3>"
             + (_per_run(runs, question_family_table) or _none("no held-out answers table in these runs")))
    sections.append(_section("families", "Per-family accuracy", body))

    body = _per_run(runs, lambda r: rollout_cards(r, last[r.name], samples))
    sections.append(_section("rollouts", "Rollouts: best and worst of the last iteration",
                             body or _none("no rollout table in these runs")))

    body = _per_run(runs, lambda r: suites_view(r, last[r.name]))
    sections.append(_section("unit-tests", "Unit-test suites", body or _none("no unit-test reward in these runs")))

    def pool(run: Run) -> str:
        rows = run.table(last[run.name], "pool/contents") if last[run.name] is not None else []
        return generic_table(rows, run) if rows else ""

    sections.append(_section("pool", "Few-shot pool contents (last iteration)",
                             _per_run(runs, pool) or _none("no few-shot pool in these runs (selfplay.mode rwr_only)")))

    body = _img(plots["timings"], "timings") if "timings" in plots else _none("no timings yet")
    body += _per_run(runs, lambda r: metrics_table(r, ("time/rollout", "time/update", "time/eval", "time/iteration")))
    sections.append(_section("timings", "Timings per phase (seconds)", body))

    body = config_diff(runs) + "".join(
        f"<details{' open' if len(runs) == 1 else ''}><summary>{html.escape(r.name)}: config.yaml</summary>"
        f"<pre>{html.escape(yaml.safe_dump(r.config, sort_keys=False))}</pre></details>" for r in runs)
    sections.append(_section("config", "Resolved config", body))

    def log(run: Run) -> str:
        if not (run.path / "train.log").is_file():
            return _none("no train.log")
        if not run.warnings:
            return _none("train.log has no warnings or errors")
        shown = run.warnings[-50:]
        return f"<pre>{html.escape(chr(10).join(shown))}</pre>"

    sections.append(_section("log", "Warnings and errors from train.log", _per_run(runs, log)))

    nav = " ".join(f'<a href="#{sid}">{sid.replace("-", " ")}</a>' for sid in SECTIONS)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>vprl report: {html.escape(names)}</title>
<style>{CSS}</style></head>
<body>
<h1>vprl report</h1>
<p class="muted">{html.escape(names)} · written {time.strftime('%Y-%m-%d %H:%M')} by <code>vprl report</code></p>
<nav>{nav}</nav>
{chr(10).join(sections)}
</body></html>
"""


def write_report(run_dirs: list[str | Path], out: str | Path, samples: int = 4) -> tuple[Path, list[Path]]:
    """Write the page and its PNG figures (in `<stem>_plots/` beside it); returns their paths."""
    from train.report_plots import all_plots

    runs = [load_run(d) for d in run_dirs]
    out = Path(out)
    plots = all_plots(runs)
    page = render_html(runs, plots, samples)
    out.parent.mkdir(parents=True, exist_ok=True)
    plot_dir = out.with_name(f"{out.stem}_plots")
    shutil.rmtree(plot_dir, ignore_errors=True)
    written = []
    if plots:
        plot_dir.mkdir()
        for name, png in plots.items():
            (plot_dir / f"{name}.png").write_bytes(png)
            written.append(plot_dir / f"{name}.png")
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out, written


def report_at_end(run_dir: Path) -> Path | None:
    """The run's own report, written when training ends; a failure here is a warning, not a failed run."""
    try:
        page = write_report([run_dir], run_dir / "report.html")[0]
        print(f"report: {page}")
        return page
    except Exception as e:
        print(f"warning: could not write the report ({type(e).__name__}: {e}); "
              f"try `vprl report {run_dir}`", file=sys.stderr)
        return None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vprl report",
        description="Write one self-contained HTML report (images inlined, opens offline) of one or more run "
                    "folders, with the figures also as PNG files in <out>_plots/ beside it. Needs no W&B.",
        epilog="example: vprl report runs/shapes-rwr-cpu runs/shapes-viunit-cpu --out compare.html",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run folders (runs/<run_name>)")
    parser.add_argument("--out", help="the HTML file to write (default: RUN/report.html for one run, "
                                      "report.html for several)")
    parser.add_argument("--samples", type=number(int, at_least=0),
                        default=4, help="best and worst rollouts shown per run (4)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = args.out or (Path(args.runs[0]) / "report.html" if len(args.runs) == 1 else Path("report.html"))
    try:
        page, plots = write_report(args.runs, out, args.samples)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"report: {page}")
    if plots:
        print(f"figures: {plots[0].parent}/ ({', '.join(p.name for p in plots)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
