"""HTML fragments of `vprl report`: tables of numbers, rollout cards, unit-test suites."""

from __future__ import annotations

import base64
import html
import math

from train.report_data import Run

MAIN_KEYS = ("reward/mean", "rollout/accuracy", "rollout/pass_rate", "loss/mean", "eval/accuracy",
             "eval/logical_accuracy", "eval/pass_rate", "probe/reward", "early_stopping/declines")


def _num(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "—"
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}" if abs(value) < 1000 else f"{value:.0f}"
    return html.escape(str(value))


def _image(run: Run | None, cell) -> str | None:
    data = run.image_bytes(cell) if run is not None else None
    if data is None:
        return None
    return f'<img class="thumb" alt="image" src="data:image/png;base64,{base64.b64encode(data).decode()}">'


def _cell(run: Run | None, value) -> str:
    image = _image(run, value)
    if image:
        return image
    if isinstance(value, (int, float, bool)) or value is None:
        return _num(value)
    text = str(value)
    if "\n" in text or len(text) > 80:
        return f"<details><summary>{html.escape(text.strip().splitlines()[0][:60])}…</summary><pre>{html.escape(text)}</pre></details>"
    return html.escape(text)


def generic_table(rows: list[dict], run: Run | None, columns: list[str] | None = None) -> str:
    """Any list of dicts as a table; image cells become thumbnails, long text folds away."""
    if not rows:
        return ""
    columns = columns or list(dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{_num(row.get(c))}</td>' if isinstance(row.get(c), (int, float))
                         else f"<td>{_cell(run, row.get(c))}</td>" for c in columns) + "</tr>"
        for row in rows)
    return f'<div class="scroll"><table><tr>{head}</tr>{body}</table></div>'


def metrics_table(run: Run, keys=MAIN_KEYS) -> str:
    """One row per iteration, one column per metric that the run has."""
    keys = [k for k in keys if any(k in m for m in run.metrics)]
    if not keys or not run.metrics:
        return ""
    rows = [{"iteration": m["iteration"], **{k: m.get(k) for k in keys}} for m in run.metrics]
    return generic_table(rows, run, ["iteration", *keys])


def family_table(run: Run) -> str:
    """Accuracy per prompt family: rollouts (training questions) and held-out answers, with aggregators."""
    keys = [k for k in run.keys("rollout/", "/accuracy") if k.count("/") == 2]
    keys += run.keys("eval/family/", "/accuracy") + run.keys("eval/aggregate/", "/accuracy")
    return metrics_table(run, keys) if keys else ""


def question_family_table(run: Run) -> str:
    """Held-out accuracy per question family (the data's `family` column), per evaluated policy."""
    points = [("starting policy", "base")] + [(f"after iteration {it}", f"iter_{it:03d}") for it in run.iterations]
    by_family: dict[str, dict[str, list[float]]] = {}
    for label, point in points:
        for row in run.answers(point):
            if isinstance(row.get("accuracy"), (int, float)):
                family = str(row.get("family") or "(none)")
                by_family.setdefault(family, {}).setdefault(label, []).append(float(row["accuracy"]))
    if not by_family:
        return ""
    labels = [label for label, _ in points if any(label in per for per in by_family.values())]
    rows = []
    for family in sorted(by_family):
        row = {"question family": family, "questions": max(len(v) for v in by_family[family].values())}
        for label in labels:
            values = by_family[family].get(label)
            row[label] = sum(values) / len(values) if values else None
        rows.append(row)
    return generic_table(rows, run) + ('<p class="muted">Accuracy (the task metric) of the held-out answers of '
                                       "each evaluated policy, by question family.</p>")


def _status(status) -> str:
    cls = "ok" if status == "ok" else "bad"
    return f'<span class="{cls}">{html.escape(str(status))}</span>'


def rollout_cards(run: Run, iteration: int | None, samples: int) -> str:
    """The `samples` best and worst rollouts of an iteration, each with its image and what happened."""
    rows = run.table(iteration, "rollout/completions") if iteration is not None else []
    if not rows or not samples:
        return ""
    scored = sorted(rows, key=lambda r: r.get("reward") if isinstance(r.get("reward"), (int, float)) else -math.inf,
                    reverse=True)
    best = scored[:min(samples, (len(scored) + 1) // 2)]  # a short table is split, not all "best"
    worst = scored[len(best):][::-1][:samples]
    out = [f'<p class="muted">Iteration {iteration}: {len(rows)} rollouts in the table '
           f"(tracking.table_rows); the {len(best)} best and {len(worst)} worst by reward.</p>"]
    for title, chosen in (("best", best), ("worst", worst)):
        cards = []
        for r in chosen:
            parts = ", ".join(f"{k.split('/', 1)[1]} {_num(v)}" for k, v in r.items() if k.startswith("reward/"))
            error = f"<pre>{html.escape(str(r['error']))}</pre>" if r.get("error") else ""
            family = f" · {html.escape(str(r['question_family']))}" if r.get("question_family") else ""
            cards.append(
                f'<div class="card">{_image(run, r.get("image")) or ""}<div class="body">'
                f"<b>{html.escape(str(r.get('question')))}</b>{family}<br>"
                f"answer <b>{_num(r.get('answer'))}</b> · expected <b>{_num(r.get('expected'))}</b> · "
                f"{_status(r.get('status'))}<br>reward <b>{_num(r.get('reward'))}</b> ({parts}) · "
                f"weight {_num(r.get('weight'))}{' · refined' if r.get('refined') else ''}{error}"
                f"<details><summary>program</summary><pre>{html.escape(str(r.get('program')))}</pre></details>"
                f"</div></div>")
        out.append(f"<h4>{title}</h4><div class=\"cards\">{''.join(cards)}</div>")
    return "\n".join(out)


def suites_view(run: Run, iteration: int | None) -> str:
    """Each unit-test suite: its test images with caption and expected answer, then what
    each program answered on every test (green: passed)."""
    if iteration is None:
        return ""
    out = []
    for name in run.table_names(iteration):
        if not (name.startswith("rewards/") and name.endswith("/table")):
            continue
        rows = run.table(iteration, name)
        if not rows or not {"question", "test", "caption", "expected", "actual"} <= set(rows[0]):
            out.append(f"<h4>{html.escape(name)}</h4>" + generic_table(rows, run))  # a reward's own table
            continue
        out.append(f'<h4>{html.escape(name.split("/")[1])} (iteration {iteration})</h4>')
        for question in dict.fromkeys(r["question"] for r in rows):
            qrows = [r for r in rows if r["question"] == question]
            tests = {r["test"]: r for r in qrows}
            head = "".join(f"<th>{_image(run, t.get('image')) or ''}<br>{html.escape(str(t['caption']))}<br>"
                           f"expected <b>{_num(t['expected'])}</b></th>" for t in tests.values())
            body = []
            for index in dict.fromkeys(r.get("program_index") for r in qrows):
                prow = {r["test"]: r for r in qrows if r.get("program_index") == index}
                first = next(iter(prow.values()))
                cells = "".join(
                    f'<td class="{"pass" if prow[t].get("passed") else "fail"}">{_num(prow[t].get("actual"))}</td>'
                    if t in prow else "<td>—</td>" for t in tests)
                body.append(f"<tr><td>program {index}<br>score {_num(first.get('program_score'))}"
                            f"<details><summary>source</summary><pre>{html.escape(str(first.get('program')))}</pre>"
                            f"</details></td>{cells}</tr>")
            out.append(f"<p><b>{html.escape(str(question))}</b></p><table><tr><th>program</th>{head}</tr>"
                       f"{''.join(body)}</table>")
    return "\n".join(out)


def _flatten(tree, prefix: str = "") -> dict:
    if isinstance(tree, dict):
        out = {}
        for k, v in tree.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: tree}


def config_diff(runs: list[Run]) -> str:
    """The keys whose values differ between runs (run_name aside)."""
    if len(runs) < 2:
        return ""
    flat = [_flatten(r.config) for r in runs]
    keys = [k for k in dict.fromkeys(k for f in flat for k in f)
            if k != "run_name" and len({repr(f.get(k)) for f in flat}) > 1]
    if not keys:
        return '<p class="muted">The runs share every config value except run_name.</p>'
    rows = [{"key": k, **{r.name: repr(f.get(k)) for r, f in zip(runs, flat)}} for k in keys]
    return "<h3>Differences</h3>" + generic_table(rows, None)
