"""Experiment configuration: dataclasses whose YAML keys match their fields one to one.

`load_config(path, overrides)` reads a YAML file, applies dotted `key=value` overrides,
and rejects unknown keys and wrong types with one line that says what to change.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A configuration mistake; its message is one line naming the fix."""


@dataclass
class LoraConfig:
    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    bias: str = "none"
    init: str = "continue"  # continue: keep training last iteration's adapter; base: restart it


@dataclass
class OptimConfig:
    lr: float = 2e-4
    warmup_ratio: float = 0.1
    schedule: str = "linear"
    max_grad_norm: float = 0.3
    weight_decay: float = 0.0
    epochs: int = 1
    micro_batch_size: int = 16
    token_reduction: str = "mean"  # mean: per-example NLL averaged over its tokens; sum: Eq. 8 literally
    share_prefix: bool = True  # run the prompt prefix shared by a micro-batch once


@dataclass
class WeightingConfig:
    transform: str = "identity"  # identity | threshold (ViUniT Eq. 10: 1 if S >= theta else S)
    threshold: float = 0.8
    clip_negative: bool = True


@dataclass
class GenerationConfig:
    backend: str = "hf"  # hf | vllm
    temperature: float = 1.0
    top_p: float = 0.9
    max_new_tokens: int = 320
    batch_size: int = 32
    prefix_cache: bool = True
    eval_temperature: float = 0.0


@dataclass
class EarlyStoppingConfig:
    enabled: bool = True
    patience: int = 2
    min_delta: float = 0.0


@dataclass
class SelfPlayConfig:
    mode: str = "rwr_only"  # rwr_only: LoRA update, fixed prompt | pool_only: seed 002, no gradient | pool_and_rwr
    families: list[str] = field(default_factory=list)  # prompt families, one pool each; [] = env.prompt
    shots_per_step: list[int] = field(default_factory=lambda: [0, 4, 8])  # k at iteration i (last repeats)
    strategy: str = "random"  # random | similar | diverse
    capacity: int = 64
    eviction: str = "oldest"  # oldest | lowest_reward | least_diverse
    threshold: float = 1.0  # admission: the task metric (correctness part) at least this
    max_refinements: int = 0  # self-refinement rounds on compile/runtime errors
    aggregate: list[str] = field(default_factory=lambda: ["majority", "judge", "oracle"])


@dataclass
class TrackingConfig:
    wandb: bool = True
    project: str = "vprl"
    entity: str | None = None
    mode: str = "auto"  # auto: online when logged in, else offline | online | offline | disabled
    table_rows: int = 64


@dataclass
class DataConfig:
    name: str = "shapes"  # shapes: generated from `seed`; disk: a `vprl data shapes --out DIR` folder
    path: str | None = None
    train_size: int = 512
    validation_size: int = 64
    seed: int = 0
    train_split: str = "train"
    eval_split: str = "validation"
    metric: str = "gqa_accuracy"
    subsample: str | int | None = None  # real datasets: "paper" (e.g. GQA 10 per group) or a row count
    max_bad_fraction: float = 0.05  # malformed rows (missing/corrupt image, empty question) allowed before stopping


@dataclass
class EnvConfig:
    prompt: str = "viper_compact"
    backend: str = "shapes-cv"
    backend_kwargs: dict = field(default_factory=dict)  # e.g. {detector: PATH, vqa: PATH, clip: PATH} for hf
    tool_host: str = "auto"  # auto: heavy backends (anything but shapes-cv) run in a tool host | always | never
    timeout_s: float = 5.0
    memory_mb: int = 1024
    workers: int = 2


@dataclass
class RewardSpec:
    name: str
    weight: float = 1.0
    kwargs: dict = field(default_factory=dict)


@dataclass
class Config:
    run_name: str = "shapes-rwr"
    output_dir: str = "runs"
    seed: int = 0
    model: str = "embedded:smollm2-135m-instruct"
    dtype: str = "float32"
    data: DataConfig = field(default_factory=DataConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    rewards: list[RewardSpec] = field(default_factory=lambda: [RewardSpec("correctness")])
    iterations: int = 3
    questions_per_iteration: int = 32
    programs_per_question: int = 4
    eval_questions: int = 32
    eval_counterfactuals: int = 4  # M scenes per shapes question for logical accuracy; 0 turns it off
    reward_failure_limit: int = 3
    resume: bool = False
    lora: LoraConfig = field(default_factory=LoraConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    weighting: WeightingConfig = field(default_factory=WeightingConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    early_stopping: EarlyStoppingConfig = field(default_factory=EarlyStoppingConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.run_name


def _type_name(tp) -> str:
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


def _coerce(value, tp, where: str):
    """Check `value` against the annotation `tp`, building nested dataclasses."""
    origin = typing.get_origin(tp)
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


def _build(cls, values: dict, where: str = ""):
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in values.items():
        path = f"{where}.{key}" if where else key
        if key not in known:
            raise ConfigError(f"unknown config key {path!r}; known keys here: {', '.join(sorted(known))}")
        kwargs[key] = _coerce(value, hints[key], path)
    try:
        return cls(**kwargs)
    except TypeError as e:  # a required field (e.g. a reward's name) is missing
        raise ConfigError(f"{where or 'config'}: {e}") from None


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


def save_config(cfg: Config, path: Path) -> None:
    path.write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
