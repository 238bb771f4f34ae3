"""Held-out evaluation: the same measurement for the starting policy and every iteration.

Greedy decoding (`generation.eval_temperature`) on the first `eval_questions` validation
rows, one program per question and prompt family; accuracy under the task metric,
logical accuracy on counterfactual scenes (shapes), the families' aggregates, and the
best constant answer's accuracy on the same questions beside them. Scoring is
`rewards.labels`' (the one place answers meet labels) and the metrics are
`train.records.eval_metrics`'s. One `EvalRecord` per question goes to
`runs/<name>/eval/<point>.jsonl` (`base`, `iter_000`, ...): `bench/learning_curve.py`
turns them into curves with bootstrap intervals and `vprl report` into its per-family table.

Cost: counterfactual scenes are drawn and rendered once per question for the whole run
(they depend on the question and `data.seed`, not on the policy), and the starting
policy's programs are cached under `<output_dir>/.cache/base_eval/`: every seed and
config of a data setup starts from the same weights (LoRA's B is zero at init), so
repeated runs reuse its programs instead of generating them again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict
from pathlib import Path

BASE = "base"


def point_name(iteration: int) -> str:
    return f"iter_{iteration:03d}"


def evaluated(cfg, iteration: int) -> bool:
    """Whether a run evaluates the held-out set after `iteration`: every `eval_every`-th and the last."""
    return (iteration + 1) % cfg.eval_every == 0 or iteration + 1 == cfg.iterations


class EvalSampler:
    """The generator as evaluation calls it: at the evaluation temperature, and, for
    weights that never change between runs (the starting policy), read from / written to
    a file keyed by the model, the prompts and every setting that shapes the output."""

    def __init__(self, generator, temperature: float, cache: Path | None = None, identity: dict | None = None):
        self.generator, self.temperature, self.cache = generator, temperature, cache
        self.identity = dict(identity or {})
        self.hits = 0

    def _path(self, prompts: list[str], n: int, kw: dict) -> Path:
        cfg = getattr(self.generator, "config", None)
        settings = {k: getattr(cfg, k, None) for k in ("top_p", "max_new_tokens", "batch_size", "prefix_cache")}
        blob = json.dumps([self.identity, settings, kw.get("max_new_tokens"), n, prompts], sort_keys=True, default=str)
        return self.cache / f"{hashlib.sha256(blob.encode()).hexdigest()[:24]}.json"

    def generate(self, prompts: list[str], n: int = 1, **kw):
        from policies.sampling import Sample

        kw = {"temperature": self.temperature, **kw}
        if self.cache is None:
            return self.generator.generate(prompts, n, **kw)
        path = self._path(prompts, n, kw)
        if path.exists():
            try:
                samples = [Sample(**s) for s in json.loads(path.read_text())]
                if len(samples) == len(prompts) * n:
                    self.hits += 1
                    return samples
            except (ValueError, TypeError):
                pass  # a damaged cache file is regenerated below
        samples = self.generator.generate(prompts, n, **kw)
        self.cache.mkdir(parents=True, exist_ok=True)
        _replace(path, json.dumps([asdict(s) for s in samples]))
        return samples


class HeldOut:
    """Evaluates a policy on this rank's shard of the held-out rows; gathers and logs."""

    def __init__(self, cfg, rows: list[dict], all_rows: list[dict], executor, selfplay, tokenizer,
                 gather=lambda x: x, main_proc: bool = True):
        self.cfg, self.rows, self.executor, self.selfplay = cfg, rows, executor, selfplay
        self.tokenizer, self.gather, self.main_proc = tokenizer, gather, main_proc
        self.folder = cfg.run_dir / "eval"
        # The best single answer on exactly these questions: the floor every accuracy sits on.
        self.constant_answer, self.constant_accuracy = constant_baseline(all_rows, cfg.data.metric)
        self.counterfactuals: dict = {}  # question id -> scenes with images, drawn once per run

    def base(self, generator, seed: int, fresh: bool = True) -> dict:
        """The starting policy's point: evaluated once per run, read back on resume.

        fresh: the generator still holds the starting weights. A resumed run that has no
        base point on disk (it predates them) gets none rather than a wrong one.
        """
        summary = self.folder / f"{BASE}.json"
        if summary.exists():
            return json.loads(summary.read_text())
        if not fresh:
            return {}
        metrics = self.evaluate(generator, 0, BASE, seed, starting_weights=True)
        if self.main_proc:
            _replace(summary, json.dumps(metrics, indent=1))
        return metrics

    def evaluate(self, generator, iteration: int, point: str, seed: int, starting_weights: bool = False) -> dict:
        """Metrics of one point (`eval/...`, all ranks), and its per-question records on disk.

        seed: the generator's sampling seed for this point (matters only when
        eval_temperature > 0). starting_weights: the policy still has its initial weights
        (the base point, or any point of a run that never updates, such as pool_only), so
        its programs are read from / written to the cache shared by runs.
        """
        from train.evaluate import family_hits, summarize
        from train.records import eval_metrics
        from train.rollout import collect
        from train.selfplay import judge_reply

        cfg, sp = self.cfg, self.selfplay
        t0 = time.time()
        temperature = cfg.generation.eval_temperature
        identity = {"model": cfg.model, "dtype": cfg.dtype, "temperature": temperature,
                    **({"seed": seed} if temperature > 0 else {})}  # greedy programs do not depend on the seed
        sampler = EvalSampler(generator, temperature, Path(cfg.output_dir) / ".cache" / "base_eval"
                              if starting_weights else None, identity)
        generator.reseed(seed)
        by_family = {}
        for name in sp.names:
            prompts, _ = sp.prompts(name, self.tokenizer, self.rows, iteration, cfg.seed + 1)
            # Each rollout's `accuracy`: the task metric of its row, against its labels.
            by_family[name] = collect(self.rows, prompts, sampler, 1, self.executor, metric=cfg.data.metric,
                                      progress=self.main_proc, desc=f"evaluate {name}") if self.rows else []
        hits = family_hits(self.rows, {n: [r.result.answer for r in rs] for n, rs in by_family.items()},
                           cfg.data.metric, sp.cfg.aggregate, judge_fn=lambda prompt: judge_reply(generator, prompt))
        generator.drain()  # ZeRO-3: no rank leaves generation while another still runs forwards
        records, logical = question_records(by_family[sp.names[0]], self.rows, self.executor, cfg,
                                            self.counterfactuals)
        records = self.gather(records)
        metrics = eval_metrics(records, {k: self.gather(v) for k, v in hits.items()})
        metrics.update(summarize(self.gather(logical), "eval"))
        metrics["eval/constant_answer_accuracy"] = self.constant_accuracy
        if starting_weights:
            metrics["eval/cached"] = float(sampler.hits > 0)
        metrics["time/eval"] = time.time() - t0
        if self.main_proc:
            _replace(self.folder / f"{point}.jsonl", "".join(json.dumps(asdict(r)) + "\n" for r in records))
        return metrics


def question_records(rollouts, rows: list[dict], executor, cfg, cache: dict) -> tuple[list, list[dict]]:
    """One `EvalRecord` per greedy rollout, with its logical accuracy on `cfg.eval_counterfactuals`
    scenes (`cache`: the scenes, drawn once per question), and the logical reports themselves."""
    from train.evaluate import logical_metrics
    from train.records import EvalRecord

    logical = logical_metrics(rollouts, rows, executor, cfg.eval_counterfactuals, cfg.data.seed,
                              cache=cache) if cfg.eval_counterfactuals else []
    by_row = {rep["row"]: rep for rep in logical}
    return [EvalRecord.of(r, rows[r.row], by_row.get(r.row)) for r in rollouts], logical


def constant_baseline(rows, metric: str = "gqa_accuracy") -> tuple[str | None, float]:
    """The single answer that scores best on `rows` under their metric, and its score.

    Every distinct reference answer is tried as the constant prediction (an answer that
    is never a reference scores no better under these metrics).
    """
    from collections import Counter

    from rewards.labels import answer_score

    rows = [r for r in rows if r.get("answer") is not None or r.get("answers")]
    if not rows:
        return None, float("nan")
    candidates = Counter()
    for r in rows:
        candidates.update([r["answer"]] if r.get("answer") is not None else list(r["answers"]))
    best, best_score = None, -1.0
    for answer, _ in candidates.most_common():
        score = sum(answer_score(answer, r, metric) for r in rows) / len(rows)
        if score > best_score:
            best, best_score = answer, score
    return best, best_score


def _replace(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all (a kill leaves the old file or none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
