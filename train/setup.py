"""Start-up checks and construction for `train/iterate.py`.

Everything that can be wrong in a config is checked here, before a run folder exists
or a model is loaded, and reported as a one-line ConfigError.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envs.cliargs import number
from train.config import Config, ConfigError, check_registered


class _TrainParser(argparse.ArgumentParser):
    """Its --help ends with every config key, generated from the dataclasses when asked."""

    def format_help(self) -> str:
        from train.config_help import config_help

        return super().format_help() + "\n" + config_help() + "\n"


def build_parser(prog: str = "train/iterate.py") -> argparse.ArgumentParser:
    parser = _TrainParser(
        prog=prog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Reward-weighted policy iteration for visual-program policies. Each iteration samples\n"
            "programs for training questions, runs them in the sandbox, scores them with the\n"
            "configured rewards, fine-tunes a LoRA adapter on the reward-weighted NLL of the\n"
            "programs, evaluates on the held-out split, checkpoints, and stops early when the\n"
            "training reward declines. Writes runs/<run_name>/, with report.html (`vprl report`) at the end."
        ),
        epilog="example:\n  accelerate launch train/iterate.py --config configs/shapes_rwr_cpu.yaml iterations=2 optim.lr=1e-4",
    )
    parser.add_argument("--config", help="YAML experiment config (keys below; they match train/config.py's dataclasses)")
    parser.add_argument("--print-config", action="store_true",
                        help="print the resolved config (file, overrides and defaults) as YAML and exit")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the config, load the data and the model, and exit without writing anything; what needs "
                             "a GPU, a download or an absent package is named as skipped")
    parser.add_argument("--accelerate-config", metavar="FILE",
                        help="with --dry-run: also check the accelerate config file (and its DeepSpeed JSON) that the "
                             "launch would use, against the config and this machine (launch/*.sh --dry-run pass it)")
    parser.add_argument("--num-processes", type=number(int, at_least=1), metavar="N",
                        help="with --accelerate-config: the process count the launch passes (default: the file's)")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="dotted overrides applied after the file, e.g. generation.temperature=0.7")
    return parser


def validate(cfg: Config, skipped: list[str] | None = None) -> None:
    """Reject bad names and paths now, not an hour into the run.

    Types, allowed values and ranges were checked when the config was loaded (the rules
    live on the fields in train/config.py); what is left needs the registries and the disk.
    With `skipped` (a dry run), what only a download would fix (a model not in the local
    cache, a preset's data not on disk) is added there as one line instead of raised.
    """
    import rewards
    from policies.model import ModelError, locate

    for spec in cfg.rewards:
        try:
            fn = rewards.get(spec.name)
        except KeyError as e:
            raise ConfigError(str(e).strip("'\"")) from None
        check = getattr(fn, "check_kwargs", None)  # a reward may vet its own options
        if check is not None:
            try:
                check(dict(spec.kwargs))
            except ValueError as e:
                raise ConfigError(f"rewards[{spec.name}].kwargs: {e}") from None
    check_registered(cfg)  # prompt families, tool backends, metrics
    from train.admission import check_options

    try:
        check_options(cfg.selfplay.admission, cfg.selfplay.admission_options)
    except ValueError as e:
        raise ConfigError(f"selfplay.admission_options: {e}") from None
    _check_objective(cfg)
    if cfg.generation.max_model_len is not None and cfg.generation.max_model_len <= cfg.generation.max_new_tokens:
        raise ConfigError(f"generation.max_model_len={cfg.generation.max_model_len} leaves no room for a prompt "
                          f"before generation.max_new_tokens={cfg.generation.max_new_tokens}; raise it")
    try:
        _check_data(cfg)
    except ConfigError as e:
        if skipped is None or not _downloadable(cfg):
            raise
        skipped.append(f"data: {e} (a {cfg.data.name} copy is downloaded once, see docs/scaling.md)")
    from envs.tools import BackendError, check_backend

    try:  # a backend whose models cannot be loaded fails now, naming the missing setting
        check_backend(cfg.env.backend, cfg.env.backend_kwargs, tool_host=cfg.env.tool_host,
                      setting="env.backend_kwargs.{key}")
    except BackendError as e:
        if skipped is None or NOT_CACHED_TOOL not in str(e):
            raise ConfigError(str(e)) from None
        skipped.append(f"tools: {e}")
    try:
        locate(cfg.model)  # writes nothing: the data is checked before any model is prepared
    except ModelError as e:
        if skipped is None or NOT_CACHED not in str(e):
            raise ConfigError(str(e)) from None
        skipped.append(f"model: {e}")


# How the loaders say that only a download is missing (policies.model, envs.tools.hf_backend).
NOT_CACHED = "is not in the local Hugging Face cache"
NOT_CACHED_TOOL = "nor in the local Hugging Face cache"


def _downloadable(cfg: Config) -> bool:
    """A published dataset (a preset) whose local copy is not there yet."""
    from envs.data.presets import PRESETS

    return cfg.data.name in PRESETS and cfg.data.path is not None and not Path(cfg.data.path).expanduser().exists()


def _check_objective(cfg: Config) -> None:
    from train.search import PROBE_MIN

    if cfg.eval_every > 1 and cfg.early_stopping.monitor.startswith("eval/"):
        raise ConfigError(f"early_stopping.monitor={cfg.early_stopping.monitor} reads the held-out evaluation of "
                          f"every iteration, but eval_every={cfg.eval_every} skips some; set eval_every=1 "
                          "or monitor reward/mean or probe/reward")
    if cfg.objective.dynamic_sampling and cfg.programs_per_question < 2:
        raise ConfigError("objective.dynamic_sampling needs programs_per_question >= 2: one program per "
                          "question never disagrees with itself")
    if cfg.objective.clip_eps_high and not cfg.objective.clip_eps:
        raise ConfigError("objective.clip_eps_high widens the ratio clip, but clip_eps=0 computes no ratio: "
                          "set objective.clip_eps (e.g. 0.2), or clip_eps_high=0")
    if 0 < cfg.objective.template_tests < PROBE_MIN:
        raise ConfigError(f"objective.template_tests={cfg.objective.template_tests} is fewer than the {PROBE_MIN} "
                          f"questions a template needs to be tested; set it to 0 or at least {PROBE_MIN} (e.g. 16)")
    if cfg.objective.demo_baseline and cfg.objective.name == "eq8":
        raise ConfigError("objective.demo_baseline moves a group's baseline, and eq8 has none: set "
                          "objective.name=rloo or grpo, or demo_baseline=false")
    if cfg.search.compose == 3 and not cfg.search.attributes:
        raise ConfigError("search.compose=3 selects patches by a documented attribute for its third call, but "
                          "search.attributes is false; set search.attributes=true, or search.compose=2")
    if cfg.search.rehearse and not (cfg.search.library and cfg.search.compose):
        raise ConfigError("search.rehearse teaches the proven composed forms the library remembers, but "
                          f"search.library={cfg.search.library} and search.compose={cfg.search.compose}; set both "
                          "(e.g. search.library=32 search.compose=2), or search.rehearse=0")
    if cfg.objective.name != "eq8" and cfg.programs_per_question < 2:
        raise ConfigError(f"objective.name={cfg.objective.name} compares programs of one question: set "
                          "programs_per_question >= 2, or use objective.name=eq8")


def _check_data(cfg: Config) -> None:
    from envs.data.presets import DEFAULT_FIELDS, PRESETS

    data = cfg.data
    known = ("shapes", "files", "disk", *sorted(PRESETS))
    if data.name not in known:
        raise ConfigError(f"data.name {data.name!r} is unknown; known: {', '.join(known)} "
                          "(files: your own VQA data in data.path)")
    if data.name != "shapes" and data.path is None:
        raise ConfigError(f"data.name {data.name!r} needs data.path: an image folder with metadata.jsonl "
                          "or metadata.csv, a parquet/json/csv file, or a saved Dataset/DatasetDict")
    if data.path is not None and not Path(data.path).expanduser().exists():
        make = (f"; write the synthetic set there with `vprl data shapes --out {data.path}`"
                if data.name == "shapes" else "; point data.path at your dataset folder or file")
        raise ConfigError(f"data.path {data.path!r} does not exist{make}")
    if data.image_root is not None and not Path(data.image_root).expanduser().is_dir():
        raise ConfigError(f"data.image_root {data.image_root!r} is not a folder; point it at the folder "
                          "your image file names are relative to")
    fields = set(DEFAULT_FIELDS) | (set(PRESETS[data.name].fields) if data.name in PRESETS else set())
    for ours, theirs in data.columns.items():
        if ours not in fields or not isinstance(theirs, str) or not theirs:
            raise ConfigError(f"data.columns.{ours}={theirs!r}: map one of our fields ({', '.join(sorted(fields))}) "
                              "to the name of your column, e.g. data.columns.question=prompt")
    if (data.columns or data.image_root) and data.path is None:
        raise ConfigError("data.columns and data.image_root apply to data.path; set data.name=files data.path=...")


def load_data(cfg: Config, progress: bool = True):
    """Return (train rows, eval rows) as `datasets.Dataset`s, checked: a missing column,
    an empty split or too many unreadable images is a one-line ConfigError here, before
    any model loads. Fills `data.metric` when the config left it empty (the preset's, the
    data's own metric column, else gqa_accuracy), so config.yaml records the metric used."""
    from envs.data.files import DEFAULT_METRIC

    data = cfg.data
    if data.name == "shapes" and data.path is None:
        from envs.data.shapes import build_dataset

        dd = build_dataset(train=data.train_size, validation=data.validation_size, test=0,
                           seed=data.seed, progress=progress)
        data.metric = data.metric or DEFAULT_METRIC
        return dd["train"], dd["validation"]
    from envs.data.files import CONFIG_HINTS, load_splits
    from envs.data.hf import DataError
    from envs.data.presets import PRESETS

    try:
        loaded = load_splits(data.path, (data.train_split, data.eval_split), train_split=data.train_split,
                             eval_split=data.eval_split, columns=data.columns, image_root=data.image_root,
                             metric=data.metric, preset=data.name if data.name in PRESETS else None,
                             seed=data.seed, eval_size=data.validation_size, subsample=data.subsample,
                             max_bad_fraction=data.max_bad_fraction, hints=CONFIG_HINTS)
    except (DataError, ValueError) as e:  # missing columns, empty splits, malformed rows, ...
        raise ConfigError(str(e).strip().splitlines()[0]) from None
    for line in loaded.lines():  # kept/skipped counts by reason, and how held-out rows were made
        print(f"data: {line}", file=sys.stderr)
    data.metric = data.metric or loaded.metric
    return loaded.rows[data.train_split], loaded.rows[data.eval_split]


def dry_run(cfg: Config, skipped: list[str] = (), launch_file: str | None = None,
            num_processes: int | None = None) -> int:
    """`--dry-run`: load and check everything a run needs, print what was found, write nothing.

    `launch_file` is the accelerate config the launch would use (the launch scripts pass
    it); with it, its DeepSpeed JSON, precision, the GPUs and the optional packages are
    checked against the config as at start-up. What this machine cannot do (a GPU, a
    package) and what needs a download (`skipped`, from `validate`) is printed as one
    `skipped:` line each; everything else still runs."""
    import rewards
    from envs.prompts import get_family
    from policies.lora import attach_lora
    from policies.model import load_model
    from train import machine

    skipped = list(skipped)
    launch = machine.read_launch(launch_file, num_processes) if launch_file else machine.launch_from_env()
    found = machine.problems(cfg, launch, machine.gpu_count())
    elsewhere = any(p.kind == "machine" for p in found)  # a run meant for another machine: its notes are moot
    for p in found:
        if p.kind in ("machine", "package"):
            skipped.append(f"{p.kind}: {p.text}")
        elif p.refused:
            raise ConfigError(p.text)
        elif not elsewhere:
            print(f"note: {p.text}")
    print(f"config: valid ({cfg.iterations} iterations x {cfg.questions_per_iteration} questions x "
          f"{cfg.programs_per_question} programs; rewards {', '.join(s.name for s in cfg.rewards)})")
    print(f"launch: {launch.describe()}; {machine.precision_line(cfg, launch)}")
    print(f"generation: {cfg.generation.backend}; tools: {cfg.env.backend}; prompt: {cfg.env.prompt}")
    has_data = not any(s.startswith("data:") for s in skipped)
    has_model = not any(s.startswith("model:") for s in skipped)
    question = "Is there a red circle?"  # the prompt's length when the data is not on disk yet
    if has_data:
        train_rows, eval_rows = load_data(cfg, progress=False)
        if not len(train_rows):
            raise ConfigError(f"the {cfg.data.train_split!r} split is empty; nothing to train on")
        question = train_rows[0]["question"]
        print(f"data: {len(train_rows)} {cfg.data.train_split} rows, {len(eval_rows)} {cfg.data.eval_split} rows")
    rewards.RewardSet(cfg.rewards, failure_limit=cfg.reward_failure_limit, context={"run_dir": str(cfg.run_dir)})
    if has_model:
        model, tokenizer = load_model(cfg.model, cfg.dtype)
        model = attach_lora(model, cfg.lora)
        prompt = get_family(cfg.env.prompt).render(tokenizer, question, [])
        total = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        print(f"model: {cfg.model} ({total / 1e6:.1f}M parameters, {trainable / 1e6:.2f}M trainable in the LoRA "
              f"adapter, {cfg.dtype}); first prompt {len(tokenizer(prompt)['input_ids'])} tokens")
    for line in skipped:
        print(f"skipped: {line}")
    print(f"dry run: nothing written; the run would write {cfg.run_dir}/"
          + (f" ({len(skipped)} check(s) skipped above)" if skipped else ""))
    return 0


def make_accelerator():
    """An Accelerator that runs multi-process CPU jobs too.

    Without a GPU, accelerate only forms a process group when told `cpu=True`; but
    `cpu=True` also switches DeepSpeed off, so a DeepSpeed launch keeps it unset.
    """
    import os

    import torch
    from accelerate import Accelerator

    deepspeed = os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true"
    return Accelerator(cpu=not torch.cuda.is_available() and not deepspeed)
