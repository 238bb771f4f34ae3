"""Does this machine fit the run? The launch file, the GPUs and the optional packages.

A run asks for things some machines cannot give: vLLM and DeepSpeed across processes
need CUDA GPUs and their packages (`make venv-gpu`), an accelerate file with
`use_cpu: true` trains on the CPU even beside GPUs, and precision is set in three
places (the config's `dtype`, accelerate's `mixed_precision`, the DeepSpeed JSON's
`bf16`/`fp16`) that must agree. `problems()` lists each mismatch as one line:

- `machine`: a GPU-only setting on a machine without CUDA (refused at start-up);
- `package`: an optional package the run needs is not installed (refused at start-up);
- `precision`: the files disagree with `dtype` (refused, also in a dry run: a mistake);
- `note`: worth a line but not wrong (a CPU launch file on a GPU machine, bf16 on a CPU).

A dry run (`--dry-run`) names `machine` and `package` problems as skipped and checks the
rest, so a GPU recipe can be checked on a laptop or in CI.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from policies.vllm_backend import INSTALL
from train.config_rules import ConfigError


@dataclass
class Problem:
    kind: str  # machine | package | precision | note
    text: str

    @property
    def refused(self) -> bool:
        return self.kind != "note"


@dataclass
class Launch:
    """What the accelerate launch file (and its DeepSpeed JSON) ask for."""

    path: str | None = None  # None: read from accelerate's environment variables
    distributed_type: str = "NO"  # NO | MULTI_GPU | DEEPSPEED | ...
    num_processes: int = 1
    num_machines: int = 1
    mixed_precision: str = "no"
    use_cpu: bool = False
    deepspeed_file: str | None = None
    deepspeed: dict = field(default_factory=dict)  # the JSON's contents
    zero3_init: bool = False

    @property
    def zero_stage(self) -> int | None:
        if self.distributed_type != "DEEPSPEED":
            return None
        return int(self.deepspeed.get("zero_optimization", {}).get("stage", 0))

    def describe(self) -> str:
        where = self.path or "accelerate's environment"
        if self.zero_stage is not None:
            how = f"DeepSpeed ZeRO-{self.zero_stage} ({self.deepspeed_file})"
        else:
            how = {"NO": "one process", "MULTI_GPU": "DDP"}.get(self.distributed_type, self.distributed_type)
            how += ", on the CPU" if self.use_cpu else ""
        return f"{where}: {how}, {self.num_processes} process(es) on {self.num_machines} machine(s)"


def gpu_count(env=None) -> int:
    """CUDA GPUs this machine shows: VPRL_GPUS if set (an override for tests and for
    machines where detection is wrong), else `nvidia-smi -L` within CUDA_VISIBLE_DEVICES,
    else torch's count."""
    env = os.environ if env is None else env
    forced = env.get("VPRL_GPUS", "").strip()
    if forced:
        if not forced.isdigit():
            raise ConfigError(f"VPRL_GPUS={forced!r} must be a number of GPUs (0 for CPU only)")
        return int(forced)
    count = None
    smi = shutil.which("nvidia-smi", path=env.get("PATH"))
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, env=dict(env))
            if out.returncode == 0:
                count = sum(line.startswith("GPU ") for line in out.stdout.splitlines())
        except (OSError, subprocess.TimeoutExpired):
            count = None
    if count is None:
        try:
            import torch

            return torch.cuda.device_count()
        except Exception:  # torch missing or its CUDA runtime broken: no usable GPU
            return 0
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:  # nvidia-smi lists every GPU; the processes see only these
        count = min(count, len([v for v in visible.split(",") if v.strip() and v.strip() != "-1"]))
    return count


def has_package(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def read_launch(path: str | Path, num_processes: int | None = None) -> Launch:
    """Read an accelerate config file as `accelerate launch --config_file` would (unknown
    keys are accelerate's error), and the DeepSpeed JSON it names."""
    from accelerate.commands.config.config_args import load_config_from_file

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"accelerate config {str(path)!r} does not exist; pick one in configs/accelerate/")
    try:
        cc = load_config_from_file(str(path))
    except Exception as e:  # accelerate's ValueError for unknown keys, YAML errors
        raise ConfigError(f"accelerate config {path}: {str(e).splitlines()[0]}") from None
    kind = getattr(cc.distributed_type, "value", str(cc.distributed_type))
    launch = Launch(str(path), kind, num_processes or int(cc.num_processes or 1), int(cc.num_machines or 1),
                    str(getattr(cc.mixed_precision, "value", cc.mixed_precision) or "no"), bool(cc.use_cpu))
    if kind == "DEEPSPEED":
        ds = dict(cc.deepspeed_config or {})
        launch.zero3_init = bool(ds.get("zero3_init_flag", False))
        launch.deepspeed_file = ds.get("deepspeed_config_file")
        if not launch.deepspeed_file:
            raise ConfigError(f"accelerate config {path}: deepspeed_config.deepspeed_config_file is not set; "
                              "point it at configs/deepspeed/zero2.json or zero3.json")
        launch.deepspeed = _read_json(launch.deepspeed_file, path)
    return launch


def _read_json(file: str, origin: Path) -> dict:
    ds_path = Path(file)
    if not ds_path.is_file():
        raise ConfigError(f"accelerate config {origin}: its DeepSpeed file {file!r} does not exist (paths are "
                          "relative to where you launch; launch from the repository root)")
    try:
        return json.loads(ds_path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"DeepSpeed config {file} is not valid JSON ({e})") from None


def launch_from_env(env=None) -> Launch:
    """The launch as `accelerate launch` hands it to each process (its environment)."""
    env = os.environ if env is None else env
    deepspeed = env.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true"
    world = int(env.get("WORLD_SIZE", "1") or 1)
    # WORLD_SIZE counts every node's processes: one "machine" of them all.
    launch = Launch(None, "DEEPSPEED" if deepspeed else ("MULTI_GPU" if world > 1 else "NO"), world, 1,
                    env.get("ACCELERATE_MIXED_PRECISION", "no"),
                    env.get("ACCELERATE_USE_CPU", "false").lower() == "true")
    if deepspeed:
        launch.deepspeed_file = env.get("ACCELERATE_DEEPSPEED_CONFIG_FILE")
        if launch.deepspeed_file and Path(launch.deepspeed_file).is_file():
            launch.deepspeed = json.loads(Path(launch.deepspeed_file).read_text())
        launch.zero3_init = env.get("ACCELERATE_DEEPSPEED_ZERO3_INIT", "false").lower() == "true"
    return launch


def problems(cfg, launch: Launch, gpus: int, packages=has_package) -> list[Problem]:
    """Every way `cfg` under `launch` does not fit a machine with `gpus` CUDA GPUs."""
    out: list[Problem] = []
    name = launch.path or "the launch"
    vllm = cfg.generation.backend == "vllm"
    deepspeed = launch.distributed_type == "DEEPSPEED"
    tool_device = str(cfg.env.backend_kwargs.get("device") or "")
    if gpus == 0:
        if vllm:
            out.append(Problem("machine", "generation.backend=vllm needs a CUDA GPU and this machine has none; "
                                          "use generation.backend=hf on CPUs"))
        if deepspeed and launch.num_processes * launch.num_machines > 1:
            out.append(Problem("machine", f"{name} runs DeepSpeed over {launch.num_processes} processes, which "
                                          "needs a CUDA GPU each and this machine has none; on CPUs use "
                                          "configs/accelerate/cpu.yaml (launch/local.sh picks it)"))
        if launch.mixed_precision in ("bf16", "fp16", "fp8") and not launch.use_cpu:
            out.append(Problem("machine", f"{name} sets mixed_precision={launch.mixed_precision}, meant for GPUs, "
                                          "and this machine has none; on CPUs use configs/accelerate/cpu.yaml"))
        if tool_device.startswith("cuda"):
            out.append(Problem("machine", f"env.backend_kwargs.device={tool_device} needs a CUDA GPU and this "
                                          "machine has none; use env.backend_kwargs.device=cpu"))
        if cfg.dtype != "float32":
            out.append(Problem("note", f"dtype={cfg.dtype} without a GPU: measured 20x slower than float32 on "
                                       "CPUs without AMX (bench/README.md); dtype=float32 suits CPUs"))
    elif launch.use_cpu:
        out.append(Problem("note", f"{name} has use_cpu: true, so this run trains on the CPU although the "
                                   f"machine has {gpus} GPU(s); launch/local.sh picks a GPU config"))
    if vllm and not packages("vllm"):
        out.append(Problem("package", f"generation.backend=vllm needs vLLM, which is not installed: {INSTALL}"))
    if deepspeed and not packages("deepspeed"):
        out.append(Problem("package", f"{name} uses DeepSpeed, which is not installed: {INSTALL}"))
    out += _precision(cfg, launch, name)
    if deepspeed and cfg.lora.init == "base":
        # ZeRO keeps its own fp32 master copy of the adapter: writing weights into the
        # module (a reset) is undone at the next step.
        out.append(Problem("precision", "lora.init=base is not supported under DeepSpeed; use lora.init=continue"))
    return out


def _precision(cfg, launch: Launch, name: str) -> list[Problem]:
    out = []
    ds = launch.deepspeed
    if cfg.dtype == "bfloat16":
        if launch.mixed_precision == "fp16":
            out.append(Problem("precision", f"dtype=bfloat16 but {name} sets mixed_precision=fp16; "
                                            "set mixed_precision: bf16 (or 'no')"))
        if ds.get("fp16", {}).get("enabled") in (True, "true", "auto") and "fp16" in ds:
            out.append(Problem("precision", f"dtype=bfloat16 but {launch.deepspeed_file} enables fp16; "
                                            "remove its fp16 section and keep bf16.enabled: auto"))
        if launch.distributed_type == "DEEPSPEED" and ds.get("bf16", {}).get("enabled") in (False, "false", None):
            out.append(Problem("precision", f"dtype=bfloat16 but {launch.deepspeed_file} leaves bf16 off, so "
                                            "DeepSpeed would train in float32; set bf16.enabled: auto"))
    elif cfg.dtype == "float16" and launch.mixed_precision == "bf16":
        out.append(Problem("precision", f"dtype=float16 but {name} sets mixed_precision=bf16; make them agree"))
    return out


def precision_line(cfg, launch: Launch) -> str:
    """What the run computes in, as the files decide it."""
    if launch.distributed_type == "DEEPSPEED":
        bf16 = launch.deepspeed.get("bf16", {}).get("enabled")
        on = cfg.dtype == "bfloat16" if bf16 == "auto" else bool(bf16)
        return f"{cfg.dtype} weights; DeepSpeed bf16 {'on' if on else 'off'}"
    return f"{cfg.dtype} weights; mixed_precision {launch.mixed_precision}"


def check_start(cfg, say=print, env=None) -> None:
    """At start-up: a refused problem is a ConfigError (one line, exit 2); notes are said.
    Every rank checks, rank 0 alone speaks: one line however many processes were launched."""
    env = os.environ if env is None else env
    first = int(env.get("RANK", "0") or 0) == 0
    found = problems(cfg, launch_from_env(env), gpu_count(env))
    for p in found:
        if not p.refused and first:
            say(f"note: {p.text}")
    refused = [p for p in found if p.refused]
    if refused:
        if not first:
            raise SystemExit(2)
        raise ConfigError(refused[0].text)
