"""Where a run's numbers go: `metrics.jsonl` in the run folder and a W&B run.

W&B runs offline unless the user is logged in, so a laptop with no network still gets
a real run folder that `wandb sync` uploads later.
"""

from __future__ import annotations

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


def _cell(value):
    """Table cells: PIL images become W&B images, everything else passes through."""
    if _is_image(value):
        import wandb

        return wandb.Image(value)
    return value


def _clean(value):
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return value


class Tracker:
    """Writes one metrics line per iteration and mirrors it to W&B (main process only)."""

    def __init__(self, cfg, run_dir: Path, config_dict: dict, enabled: bool = True, resume_id: str | None = None):
        self.run_dir = run_dir
        self.enabled = enabled
        self.cfg = cfg
        self.run = None
        if not (enabled and cfg.wandb):
            return
        mode = wandb_mode(cfg.mode)
        if mode == "disabled":
            return
        import wandb

        kwargs = dict(project=cfg.project, entity=cfg.entity, name=run_dir.name, dir=str(run_dir),
                      config=config_dict, mode=mode, settings=wandb.Settings(silent=True, console="off"))
        try:
            self.run = wandb.init(id=resume_id, resume="allow" if resume_id else None, **kwargs)
        except Exception as e:  # e.g. the killed run's stream still registered under that id
            if resume_id is None:
                raise
            print(f"warning: could not reopen W&B run {resume_id} ({e}); logging to a new run", file=sys.stderr)
            self.run = wandb.init(**kwargs, notes=f"resumed from W&B run {resume_id}")
        self.run.define_metric("iteration")
        self.run.define_metric("*", step_metric="iteration")

    @property
    def run_id(self) -> str | None:
        return self.run.id if self.run is not None else None

    def log(self, metrics: dict, table_rows: list[dict] | None = None, tables: dict | None = None) -> None:
        """One metrics line; `table_rows` become the completions table, `tables` more named tables."""
        if not self.enabled:
            return
        with open(self.run_dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps({k: _clean(v) for k, v in metrics.items()}) + "\n")
        if self.run is None:
            return
        payload = dict(metrics)
        for key, rows in {"rollout/completions": table_rows, **(tables or {})}.items():
            if rows:
                import wandb

                columns = list(rows[0])
                payload[key] = wandb.Table(columns=columns, data=[[_cell(row.get(c)) for c in columns] for row in rows])
                # Offline runs write table images as the word "Image" (wandb/wandb#4611),
                # so the images also go out as a captioned media list.
                images = [(c, row) for row in rows for c in columns if _is_image(row.get(c))][:MAX_MEDIA]
                if images:
                    payload[f"{key}_images"] = [wandb.Image(row[c], caption=_caption(row, c)) for c, row in images]
        self.run.log(payload)

    def summary(self, values: dict) -> None:
        if self.run is not None:
            self.run.summary.update(values)

    def finish(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None
