"""Where a run's numbers go: `metrics.jsonl`, `tables/` and `train.log` in the run folder,
and a W&B run.

W&B runs offline unless the user is logged in, so a laptop with no network still gets
a real run folder that `wandb sync` uploads later. The run folder never depends on W&B:
if W&B fails (its login, its service), training goes on and the files are complete.
"""

from __future__ import annotations

import hashlib
import json
import math
import netrc
import os
import sys
from pathlib import Path


def wandb_mode(requested: str) -> str:
    """auto → online when an API key is configured, else offline."""
    if requested != "auto":
        if requested not in ("online", "offline", "disabled"):
            raise ValueError(f"tracking.mode {requested!r}: use auto, online, offline or disabled")
        return requested
    if os.environ.get("WANDB_MODE"):
        return os.environ["WANDB_MODE"]
    if os.environ.get("WANDB_API_KEY"):
        return "online"
    try:
        hosts = netrc.netrc().hosts
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        hosts = {}
    return "online" if any("wandb" in h for h in hosts) else "offline"


MAX_MEDIA = 40


def _is_image(value) -> bool:
    from PIL import Image

    return isinstance(value, Image.Image)


def _caption(row: dict, image_column: str) -> str:
    # Short fields only: a program's source would drown the caption.
    return " | ".join(f"{k}: {v}" for k, v in row.items() if k != image_column and len(str(v)) < 120)


def _clean(value):
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return value


def rollout_table(rollouts, rows: list[dict], iteration: int, weights: list[float]) -> list[dict]:
    """One table row per rollout: what the W&B table and `vprl report` show of it
    (`accuracy` is the task metric against the label, logged whatever the rewards are;
    `weights[i]` is what the update gave rollout i)."""
    out = []
    for r, weight in zip(rollouts, weights):
        row = rows[r.row]
        out.append({"iteration": iteration, "question": row["question"], "image": row.get("image"),
                    "question_family": row.get("family"), "program": r.program, "prompt_family": r.prompt_family,
                    "answer": r.result.answer, "expected": row.get("answer"), "status": r.result.status,
                    "error": r.result.error, "refined": r.refined, "accuracy": r.accuracy,
                    **{f"reward/{k}": v for k, v in r.parts.items()}, "reward": r.reward, "weight": weight})
    return out


def _png(image) -> bytes:
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def write_tables(run_dir: Path, iteration: int, tables: dict[str, list[dict]]) -> None:
    """W&B-free copies of the tables: `tables/iter_NNN/<name>.jsonl`, images as PNG files in
    `tables/media/` (by content hash, so an image shared by many rows is stored once)."""
    media = run_dir / "tables" / "media"
    pngs: dict[int, str] = {}  # id(image) -> relative path, for this call

    def cell(value):
        if _is_image(value):
            if id(value) not in pngs:
                data = _png(value)
                name = f"media/{hashlib.sha1(data).hexdigest()[:16]}.png"
                if not (run_dir / "tables" / name).exists():
                    media.mkdir(parents=True, exist_ok=True)
                    (run_dir / "tables" / name).write_bytes(data)
                pngs[id(value)] = name
            return {"image": pngs[id(value)]}
        return _clean(value) if isinstance(value, float) else value

    for key, rows in tables.items():
        path = run_dir / "tables" / f"iter_{iteration:03d}" / f"{key}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(json.dumps({k: cell(v) for k, v in row.items()}, default=str) + "\n"
                               for row in rows))
        tmp.replace(path)


class Tracker:
    """Writes one metrics line (and the tables) per iteration and mirrors them to W&B
    (main process only). A W&B failure is a warning, never the end of the run."""

    def __init__(self, cfg, run_dir: Path, config_dict: dict, enabled: bool = True, resume_id: str | None = None):
        self.run_dir = run_dir
        self.enabled = enabled
        self.cfg = cfg
        self.run = None
        if not enabled:
            return
        mode = wandb_mode(cfg.mode)
        if mode == "disabled":
            return
        import wandb

        # console="wrap": W&B keeps what the console showed (files/output.log) beside the metrics.
        kwargs = dict(project=cfg.project, entity=cfg.entity, name=run_dir.name, dir=str(run_dir),
                      config=config_dict, mode=mode, settings=wandb.Settings(silent=True, console="wrap"))
        try:
            try:
                self.run = wandb.init(id=resume_id, resume="allow" if resume_id else None, **kwargs)
            except Exception as e:  # e.g. the killed run's stream still registered under that id
                if resume_id is None:
                    raise
                print(f"warning: could not reopen W&B run {resume_id} ({e}); logging to a new run", file=sys.stderr)
                self.run = wandb.init(**kwargs, notes=f"resumed from W&B run {resume_id}")
            self.run.define_metric("iteration")
            self.run.define_metric("*", step_metric="iteration")
        except Exception as e:  # no login for mode=online, no disk space, a service that will not start
            self._wandb_failed("could not start", e)

    def _wandb_failed(self, what: str, error: Exception) -> None:
        """Stop using W&B for the rest of the run; the run folder stays complete."""
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        print(f"warning: W&B {what} ({type(error).__name__}: {message}); training goes on without W&B, "
              f"metrics in {self.run_dir / 'metrics.jsonl'}", file=sys.stderr)
        self.run = None
        try:
            import wandb

            wandb.teardown()  # else its exit hook prints a traceback about the dead service
        except Exception:
            pass

    @property
    def run_id(self) -> str | None:
        return self.run.id if self.run is not None else None

    def log(self, metrics: dict, table_rows: list[dict] | None = None, tables: dict | None = None) -> None:
        """One metrics line; `table_rows` become the completions table, `tables` more named tables."""
        if not self.enabled:
            return
        with open(self.run_dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps({k: _clean(v) for k, v in metrics.items()}) + "\n")
        tables = {k: v for k, v in {"rollout/completions": table_rows, **(tables or {})}.items() if v}
        if "iteration" in metrics:
            write_tables(self.run_dir, int(metrics["iteration"]), tables)
        if self.run is None:
            return
        try:
            self.run.log(self._payload(metrics, tables))
        except Exception as e:  # e.g. its service died: ConnectionResetError
            self._wandb_failed("stopped working", e)

    @staticmethod
    def _payload(metrics: dict, tables: dict) -> dict:
        import wandb

        payload = dict(metrics)
        images: dict[int, object] = {}  # one wandb.Image per PIL image, however many rows show it

        def cell(value):
            if _is_image(value):
                return images.setdefault(id(value), wandb.Image(value))
            return value

        for key, rows in tables.items():
            columns = list(rows[0])
            payload[key] = wandb.Table(columns=columns, data=[[cell(row.get(c)) for c in columns] for row in rows])
            # Offline runs write table images as the word "Image" (wandb/wandb#4611),
            # so the images also go out as a captioned media list.
            shown = [(c, row) for row in rows for c in columns if _is_image(row.get(c))][:MAX_MEDIA]
            if shown:
                payload[f"{key}_images"] = [wandb.Image(row[c], caption=_caption(row, c)) for c, row in shown]
        return payload

    def summary(self, values: dict) -> None:
        if self.run is not None:
            try:
                self.run.summary.update(values)
            except Exception as e:
                self._wandb_failed("stopped working", e)

    def finish(self) -> None:
        if self.run is not None:
            try:
                self.run.finish()
            except Exception as e:
                self._wandb_failed("could not finish", e)
            self.run = None
