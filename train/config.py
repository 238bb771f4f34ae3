"""Experiment configuration: dataclasses whose YAML keys match their fields one to one.

`load_config(path, overrides)` reads a YAML file, applies dotted `key=value` overrides,
and rejects unknown keys, wrong types and out-of-range values with one line that says
what to change. The rules live on the fields themselves, so a new field is checked and
documented (`vprl train --help`) by writing its annotation:

    mode: Literal["a", "b"] = "a"          # one of a fixed set of values
    lr: Positive[float] = 2e-4             # a number > 0 (also NonNegative, AtLeast1, Fraction)
    rewards: NonEmpty[list[RewardSpec]]    # a list (or string) with at least one item
    prompt: Registered[str, "envs.prompts:FAMILIES"]  # a name from a registry (checked by
                                           # train.setup.validate, since plug-ins may add names)

A comment after a field is its help text. The rules are defined in train/config_rules.py.
"""

from __future__ import annotations

import dataclasses
import types
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import yaml

from policies import DEFAULT_MODEL
from policies.sampling import GenerationConfig
from rewards.combine import RewardSpec  # the one reward spec: configs, the env and RewardSet share it
from rewards.unit_tests.scoring import THETA  # the one θ default (ViUniT's passing threshold)


from train.config_rules import (AtLeast1, ConfigError, Fraction, MinLen, NonEmpty, NonNegative, OneOf,  # noqa: F401
                                Positive, Range, Registered, did_you_mean)


# ---------------------------------------------------------------------- the config


@dataclass
class LoraConfig:
    r: AtLeast1[int] = 16
    alpha: Positive[int] = 32
    dropout: Annotated[float, Range(ge=0, lt=1)] = 0.05
    target_modules: NonEmpty[list[str]] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    bias: Literal["none", "all", "lora_only"] = "none"  # which biases train beside the adapter (PEFT)
    init: Literal["continue", "base"] = "continue"  # continue: keep training last iteration's adapter; base: restart it


@dataclass
class OptimConfig:
    lr: Positive[float] = 2e-4
    warmup_ratio: Fraction[float] = 0.1
    schedule: Literal["linear", "constant"] = "linear"
    max_grad_norm: Positive[float] = 0.3
    weight_decay: NonNegative[float] = 0.0
    epochs: AtLeast1[int] = 1  # passes over an iteration's rollouts
    micro_batch_size: AtLeast1[int] = 16  # examples per forward on one rank (a memory knob)
    batch_size: AtLeast1[int] | None = None  # examples per optimizer step over all ranks; null: micro_batch_size
    max_skipped_steps: NonNegative[int] = 3  # optimizer steps skipped for a non-finite loss before the run stops
    normalizer: Positive[float] | None = None  # N in Eq. 8's sum of w*NLL / N; null: the iteration's rollouts on all ranks
    token_reduction: Literal["mean", "sum"] = "mean"  # mean: per-example NLL averaged over its tokens; sum: Eq. 8 literally
    share_prefix: bool = True  # run the prompt prefix shared by a micro-batch once


@dataclass
class WeightingConfig:
    transform: Literal["identity", "threshold"] = "identity"  # threshold: ViUniT Eq. 10, 1 if S >= theta else S
    threshold: float = THETA  # theta of the threshold transform
    clip_negative: bool = True  # negative rewards train with weight 0
    # Weight 0 for every program of a question whose programs all scored alike (all solved,
    # or none): it teaches only what the policy already does (DAPO's filter, without resampling).
    skip_settled: bool = False


@dataclass
class ObjectiveConfig:
    """How rewards train the policy (train/objectives.py; the README's "Objectives")."""

    name: Literal["eq8", "rloo", "grpo"] = "eq8"  # eq8: ViUniT's reward-weighted NLL | rloo: reward minus the other programs' mean | grpo: group z-score (negative weights allowed)
    clip_eps: NonNegative[float] = 0.0  # PPO clip of the ratio to the sampling policy (e.g. 0.2); 0: no ratio
    # DAPO's decoupled clip: the ratio's upper bound is 1 + clip_eps_high (0: 1 + clip_eps). A wide
    # upper bound lets right programs rise freely while wrong ones fall at most to 1 - clip_eps.
    clip_eps_high: NonNegative[float] = 0.0
    kl_coef: NonNegative[float] = 0.0  # beta of KL(policy || starting policy), k3 estimator; 0: no KL term
    # DAPO's dynamic sampling: draw rounds of questions_per_iteration fresh questions until that
    # many have programs that disagree (a nonzero group advantage), at most max_sampling_rounds.
    dynamic_sampling: bool = False
    max_sampling_rounds: AtLeast1[int] = 3  # the rollout budget: rounds x questions_per_iteration x programs_per_question
    replay_capacity: NonNegative[int] = 0  # rewarded programs of earlier iterations trained on again; 0: no replay
    replay_decay: Annotated[float, Range(gt=0, le=1)] = 0.5  # a replayed program's weight: reward x decay^age (iterations)
    # rloo/grpo: a searched program's reward also joins its question's baseline, so samples of a
    # question search solved are pushed down even where all of them were wrong.
    demo_baseline: bool = False
    # Each sampled program also scored on up to this many other training questions of its template
    # (train/template_tests.py); its reward becomes the mean, so a yes/no guess scores near a half. 0: off
    template_tests: NonNegative[int] = 0


@dataclass
class SearchConfig:
    """Program search where sampling found nothing (train/search.py, policies/mutation.py):
    expert iteration's search step. Off by default: it changes what the update sees."""

    enabled: bool = False  # search the questions whose sampled programs all fell short, after each rollout
    mutants_per_question: AtLeast1[int] = 256  # mutants made per unsolved question (the shortest); those reading it become forms
    depth: AtLeast1[int] = 4  # edits a mutant may be from a sampled program
    beam: AtLeast1[int] = 64  # programs of one depth edited at the next (the shortest)
    forms: AtLeast1[int] = 8  # general forms (the question a slot) run on every searched question: the commonest
    min_share: Annotated[float, Range(gt=0, le=1)] = 0.5  # a form is kept when it beats the samples on this share of them
    below: Annotated[float, Range(gt=0)] = 1.0  # a question is searched when its best sampled reward is below this
    teach_solved: bool = False  # teach a kept form on the solved questions too, where it does as well as their best sample
    library: NonNegative[int] = 0  # kept forms remembered across iterations (newest first) and tried again; 0: forgotten
    compose: Annotated[int, Range(ge=0, le=3)] = 0  # also compose programs of up to this many tool calls (1-3; 3 needs attributes) over the question's phrases; 0: off
    attributes: bool = False  # compose also compares two phrases' found patches by the attributes the API documents (spatial relations)
    probe: Annotated[int, Range(ge=8)] = 16  # training questions of its template a composed form must get right (9 in 10; 8 at least)
    teach_probe: NonNegative[int] = 0  # also teach a proven composed form on up to this many of the probe questions it got right; 0: off
    rehearse: NonNegative[int] = 0  # every iteration, teach each template's remembered proven form on this many fresh training questions of it where right (needs library, compose); 0: off


# The one sampler config lives with the sampler (`policies` may not import `train`); its
# fields' rules are stated here, where the rules live.
GenerationConfig.__annotations__.update(
    temperature=NonNegative[float], top_p=Annotated[float, Range(gt=0, le=1)], max_new_tokens=AtLeast1[int],
    batch_size=AtLeast1[int], eval_temperature=NonNegative[float],
    gpu_memory_utilization=Annotated[float, Range(gt=0, le=1)], max_model_len=AtLeast1[int] | None)


@dataclass
class EarlyStoppingConfig:
    enabled: bool = True
    patience: AtLeast1[int] = 2  # declines of the training reward in a row that stop the run
    min_delta: NonNegative[float] = 0.0  # a drop smaller than this is not a decline
    monitor: Literal["reward/mean", "probe/reward", "eval/accuracy", "eval/logical_accuracy"] = "reward/mean"  # the score that declines (the paper: training reward) and picks best/
    probe_questions: AtLeast1[int] = 32  # monitor probe/reward: fixed training questions that score every adapter alike


@dataclass
class SelfPlayConfig:
    mode: Literal["rwr_only", "pool_only", "pool_and_rwr"] = "rwr_only"  # rwr_only: LoRA update, fixed prompt | pool_only: seed 002, no gradient | pool_and_rwr
    families: list[Registered[str, "envs.prompts:FAMILIES"]] = field(default_factory=list)  # prompt families, one pool each; [] = env.prompt
    shots_per_step: list[NonNegative[int]] = field(default_factory=lambda: [0, 4, 8])  # k at iteration i (last repeats)
    strategy: Literal["random", "similar", "diverse"] = "random"  # how shots are picked from the pool
    capacity: AtLeast1[int] = 64
    eviction: Literal["oldest", "lowest_reward", "least_diverse"] = "oldest"
    threshold: float = 1.0  # admission: the task metric (correctness part) at least this
    admission: Literal["correctness", "unit_tests", "counterfactual"] = "correctness"  # also required to become a shot: nothing more (seed 002) | passing the question's unit tests | right answers on its counterfactual scenes
    admission_options: dict = field(default_factory=dict)  # unit_tests: the viunit reward's options (test_source, k, theta, ...); counterfactual: m (scenes, 4), min_accuracy (1.0)
    max_refinements: NonNegative[int] = 0  # self-refinement rounds on compile/runtime errors
    aggregate: list[Literal["majority", "judge", "oracle"]] = field(default_factory=lambda: ["majority", "judge", "oracle"])


@dataclass
class TrackingConfig:
    project: str = "vprl"
    entity: str | None = None
    mode: Literal["auto", "online", "offline", "disabled"] = "auto"  # auto: online when logged in, else offline
    table_rows: NonNegative[int] = 64  # rollouts per iteration kept in the rollout table
    report: bool = True  # write runs/<name>/report.html when the run ends (`vprl report`)

    @staticmethod
    def old_keys(values: dict, where: str) -> dict:
        """`wandb: false` was a second switch for what `mode: disabled` says."""
        if "wandb" not in values:
            return values
        values = dict(values)
        on = values.pop("wandb")
        if not isinstance(on, bool):
            raise ConfigError(f"{where}.wandb must be true or false (better: drop it and set {where}.mode)")
        warnings.warn(f"{where}.wandb is deprecated; use {where}.mode (wandb: false is mode: disabled)",
                      FutureWarning, stacklevel=2)
        if not on:
            values["mode"] = "disabled"
        return values


@dataclass
class DataConfig:
    # shapes: generated from `seed` (or a `vprl data shapes --out DIR` folder in `path`);
    # files: your VQA data in `path` (image folder with metadata.jsonl/.csv, parquet/json/csv
    # file, saved Dataset/DatasetDict); a preset name (gqa, chartqa, ...): its published schema
    name: str = "shapes"
    path: str | None = None
    columns: dict = field(default_factory=dict)  # our field -> your column, e.g. {question: prompt}
    image_root: str | None = None  # folder image file names are relative to (default: the source's)
    train_size: AtLeast1[int] = 512  # generated shapes only
    validation_size: NonNegative[int] = 64  # generated shapes; for a one-split source, the rows held out (at most 1/5)
    seed: int = 0
    train_split: str = "train"
    eval_split: str = "validation"
    # the task metric; default: the preset's, the data's own metric column, else gqa_accuracy
    metric: Registered[str, "rewards.metrics:REFERENCE_COLUMN", "per-question metric"] | None = None
    subsample: str | int | None = None  # real datasets: "paper" (e.g. GQA 10 per group) or a row count
    max_bad_fraction: Fraction[float] = 0.05  # malformed rows (missing/corrupt image, empty question) allowed before stopping


@dataclass
class EnvConfig:
    prompt: Registered[str, "envs.prompts:FAMILIES"] = "viper_compact"  # prompt family
    backend: Registered[str, "envs.tools:available_backends"] = "shapes-cv"  # perception backend of the tools
    backend_kwargs: dict = field(default_factory=dict)  # e.g. {detector: PATH, vqa: PATH, clip: PATH} for hf
    tool_host: Literal["auto", "always", "never"] = "auto"  # auto: heavy backends (anything but shapes-cv) run in a tool host
    timeout_s: Positive[float] = 5.0  # per program
    memory_mb: AtLeast1[int] = 1024  # per sandbox worker
    workers: AtLeast1[int] = 2  # sandbox worker processes


@dataclass
class Config:
    run_name: NonEmpty[str] = "shapes-rwr"
    output_dir: str = "runs"
    seed: int = 0
    model: str = DEFAULT_MODEL  # a Hugging Face model folder, hub id in the cache, or embedded:NAME
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    data: DataConfig = field(default_factory=DataConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    rewards: NonEmpty[list[RewardSpec]] = field(default_factory=lambda: [RewardSpec("correctness")])  # summed with their weights
    iterations: AtLeast1[int] = 3
    questions_per_iteration: AtLeast1[int] = 32
    programs_per_question: AtLeast1[int] = 4
    eval_questions: NonNegative[int] = 32
    eval_every: AtLeast1[int] = 1  # held-out evaluation after every k-th iteration (and always the base point and the last)
    eval_counterfactuals: NonNegative[int] = 4  # M scenes per shapes question for logical accuracy; 0 turns it off
    reward_failure_limit: AtLeast1[int] = 3  # batches in which a reward raised before the run stops
    resume: bool = False  # continue after the last complete iteration of run_name
    lora: LoraConfig = field(default_factory=LoraConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    weighting: WeightingConfig = field(default_factory=WeightingConfig)
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    early_stopping: EarlyStoppingConfig = field(default_factory=EarlyStoppingConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.run_name


# ---------------------------------------------------------------------- loading


def _type_name(tp) -> str:
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


def _coerce(value, tp, where: str):
    """Check `value` against the annotation `tp`, building nested dataclasses."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *rules = typing.get_args(tp)
        value = _coerce(value, base, where)
        for rule in rules:
            if hasattr(rule, "check"):  # OneOf waits for the registries (train.setup.validate)
                rule.check(value, where)
        return value
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ConfigError(f"{where} {value!r} is not allowed{did_you_mean(value, allowed)}; "
                              f"use one of {', '.join(map(str, allowed))}")
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if errors else f"{where}: null is not allowed")
    if dataclasses.is_dataclass(tp):
        if tp is RewardSpec and isinstance(value, str):
            value = {"name": value}
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping of {tp.__name__} fields, got {value!r}")
        return _build(tp, value, where)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item,) = typing.get_args(tp) or (typing.Any,)
        return [_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is float and isinstance(value, str):
        # PyYAML reads `1e-3` (no dot) as a string; users write it that way all the time.
        try:
            return float(value)
        except ValueError:
            pass
    if tp in (int, float, str, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: expected {_type_name(tp)}, got {value!r}; fix the value in your config")
        return value
    return value


def field_types(cls) -> dict:
    """Each field's annotation, with its rules (`Annotated` extras) kept."""
    return typing.get_type_hints(cls, include_extras=True)


def _build(cls, values: dict, where: str = ""):
    if hasattr(cls, "old_keys"):  # keys a release renamed keep working, with one warning line
        values = cls.old_keys(values, where)
    hints = field_types(cls)
    known = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in values.items():
        path = f"{where}.{key}" if where else key
        if key not in known:
            raise ConfigError(f"unknown config key {path!r}{did_you_mean(key, known)}; "
                              f"known keys here: {', '.join(sorted(known))}")
        kwargs[key] = _coerce(value, hints[key], path)
    try:
        return cls(**kwargs)
    except TypeError as e:  # a required field (e.g. a reward's name) is missing
        raise ConfigError(f"{where or 'config'}: {e}") from None


def check_registered(obj, where: str = "") -> None:
    """Names checked against registries (`Registered[...]` fields), after plug-ins are imported."""
    hints = field_types(type(obj))
    for f in dataclasses.fields(obj):
        path = f"{where}.{f.name}" if where else f.name
        _check_registered(getattr(obj, f.name), hints[f.name], path)


def _check_registered(value, tp, where: str) -> None:
    if dataclasses.is_dataclass(value):
        return check_registered(value, where)
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *rules = typing.get_args(tp)
        for rule in rules:
            if isinstance(rule, OneOf) and value is not None and value not in (names := rule.names()):
                problem = f"is not a {rule.what}" if rule.what else "is unknown"
                raise ConfigError(f"{where} {value!r} {problem}{did_you_mean(value, names)}; "
                                  f"known: {', '.join(names)}")
        return _check_registered(value, base, where)
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(tp) or (typing.Any,)
        for i, v in enumerate(value):
            _check_registered(v, item, f"{where}[{i}]")
    elif origin in (typing.Union, types.UnionType) and value is not None:
        for arg in typing.get_args(tp):
            _check_registered(value, arg, where)


def _set_dotted(tree: dict, dotted: str, value) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {dotted!r}: {key!r} is not a section")
    node[keys[-1]] = value


def load_config(path: str | Path | None, overrides: list[str] = ()) -> Config:
    tree: dict = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file {str(path)!r} does not exist; pass an existing YAML file to --config")
        try:
            tree = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"{path} is not valid YAML ({str(e).splitlines()[0]})") from None
        if not isinstance(tree, dict):
            raise ConfigError(f"{path} must hold a mapping of config keys at the top level")
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r} must look like key=value (e.g. optim.lr=1e-4)")
        _set_dotted(tree, key, yaml.safe_load(raw) if raw else "")
    return _build(Config, tree)


def to_dict(cfg: Config) -> dict:
    return dataclasses.asdict(cfg)


def to_yaml(cfg: Config) -> str:
    return yaml.safe_dump(to_dict(cfg), sort_keys=False)


def save_config(cfg: Config, path: Path) -> None:
    path.write_text(to_yaml(cfg))
