"""Per-iteration checkpoints that survive `kill -9`, a full disk, and a world of ranks.

Layout of `runs/<name>/`:
    config.yaml          the resolved config
    metrics.jsonl        one line per completed iteration (rebuilt from checkpoints on resume)
    iterations/initial/  the adapter before any update
    iterations/iter_NNN/ adapter/ (peft), train_state/ (accelerate: optimizer, per-rank RNG incl.
                         CUDA, DeepSpeed shards), pool.json, metrics.json, state.json
    iterations/serving/  the latest adapter, which a vLLM generator serves
    best/                the best adapter and best.json (which one, and why)

An iteration's folder is written under a temporary name and renamed into place last, so
a folder either holds a whole iteration or does not exist. Every rank takes part in a
save (ZeRO-3 gathers the adapter, each rank writes its RNG and optimizer shard), and a
failure on any rank (e.g. no space left) fails the save on all of them, leaving the
previous checkpoint as it was.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from envs.atomic import swap_in
from policies.adapters import make_portable

ITER_DIR = "iterations"


class CheckpointError(RuntimeError):
    """A save that did not complete; the message is one line (what, where, why)."""


class Preempted(Exception):
    """SIGTERM (a scheduler's preemption or time limit) arrived."""


PREEMPTED_STATUS = 143  # 128 + SIGTERM: what a job ended by SIGTERM reports; launch/slurm.sh requeues it


class Preemption:
    """Turns SIGTERM into `Preempted` at once, or right after a checkpoint being written.

    Every completed iteration is already a resumable checkpoint, so stopping at once
    loses at most the iteration in flight, and it fits the few seconds a launcher allows
    (torchrun's agent sends SIGKILL 30 s after forwarding SIGTERM). A save in progress is
    finished first, so the newest checkpoint is never the one cut short.
    """

    def __init__(self):
        self.requested = False
        self._saving = 0

    def install(self) -> "Preemption":
        signal.signal(signal.SIGTERM, self._on_signal)
        return self

    def _on_signal(self, signum, frame) -> None:
        self.requested = True
        if not self._saving:
            raise Preempted()

    @contextlib.contextmanager
    def saving(self):
        self._saving += 1
        try:
            yield
        finally:
            self._saving -= 1
        if self.requested and not self._saving:
            raise Preempted()


def metrics_json(metrics: dict) -> dict:
    """NaN and inf are not JSON: they are written as null."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in metrics.items()}


def adapter_name(iteration: int) -> str:
    """An iteration's folder under iterations/, and its adapter's name in logs and best.json;
    -1 is the adapter before any update."""
    return "initial" if iteration < 0 else f"iter_{iteration:03d}"


def iteration_dir(run_dir: Path, iteration: int) -> Path:
    return run_dir / ITER_DIR / adapter_name(iteration)


def adapter_dir(run_dir: Path, iteration: int) -> Path:
    return iteration_dir(run_dir, iteration) / "adapter"


def completed_iterations(run_dir: Path) -> list[int]:
    root = run_dir / ITER_DIR
    if not root.is_dir():
        return []
    done = []
    for d in root.iterdir():
        if d.name.startswith("iter_") and d.name[5:].isdigit() and (d / "state.json").exists():
            done.append(int(d.name[5:]))
    return sorted(done)


def _agree(accelerator, ok: bool, error: str) -> None:
    """Every rank learns whether all ranks succeeded; raise the first error everywhere."""
    if accelerator is not None and accelerator.num_processes > 1:
        from accelerate.utils import gather_object

        results = gather_object([(ok, error)])
        failed = [e for good, e in results if not good]
        ok, error = not failed, (failed[0] if failed else "")
    if not ok:
        raise CheckpointError(error)


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def _save_adapter(policy, path: Path, weights: dict | None) -> None:
    if weights is None:
        policy.save_pretrained(path)
    else:
        policy.save_pretrained(path, state_dict=weights)
    make_portable(path)  # the base by a name other machines resolve, not a cache path


def save_adapter(run_dir: Path, name: str, policy, weights: dict | None, accelerator=None) -> Path:
    """Write an adapter to `iterations/<name>/adapter` (main process), atomically."""
    final = run_dir / ITER_DIR / name / "adapter"
    ok, error = True, ""
    if accelerator is None or accelerator.is_main_process:
        tmp = final.with_name("adapter.tmp")
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            _save_adapter(policy, tmp, weights)
            swap_in(tmp, final)  # the served adapter is never missing (envs.atomic)
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            ok, error = False, f"could not write the adapter to {final}: {_why(e)}"
    _agree(accelerator, ok, error)
    if accelerator is not None:
        accelerator.wait_for_everyone()
    return final


def save_iteration(run_dir: Path, iteration: int, policy, metrics: dict, state: dict, pool: list | None = None,
                   *, accelerator=None, weights: dict | None = None) -> Path:
    """Checkpoint one iteration; every rank calls it. `weights` are the gathered adapter
    tensors (`policies.lora.adapter_weights`); `accelerator` adds the training state."""
    final = iteration_dir(run_dir, iteration)
    tmp = final.with_name(final.name + ".tmp")
    main = accelerator is None or accelerator.is_main_process
    ok, error = True, ""
    if main:
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir(parents=True)
        except OSError as e:
            ok, error = False, f"could not create {tmp}: {_why(e)}"
    if accelerator is not None:
        _agree(accelerator, ok, error)
        try:  # optimizer (or DeepSpeed shards of it) and this rank's RNG, incl. CUDA's
            accelerator.save_state(str(tmp / "train_state"), safe_serialization=True, exclude_frozen_parameters=True)
        except OSError as e:
            ok, error = False, f"could not save the training state to {tmp}: {_why(e)}"
        _agree(accelerator, ok, error)
    if main:
        try:
            _save_adapter(policy, tmp / "adapter", weights)
            (tmp / "pool.json").write_text(json.dumps(pool or []))
            (tmp / "metrics.json").write_text(json.dumps(metrics_json(metrics)))
            # state.json last: its presence marks the folder complete even before the rename.
            (tmp / "state.json").write_text(json.dumps({"iteration": iteration, **state}))
            shutil.rmtree(final, ignore_errors=True)
            tmp.rename(final)
        except OSError as e:
            ok, error = False, f"could not save iteration {iteration} to {final}: {_why(e)}"
            shutil.rmtree(tmp, ignore_errors=True)
    _agree(accelerator, ok, error)
    if accelerator is not None:
        accelerator.wait_for_everyone()
    return final


def load_iteration(run_dir: Path, iteration: int) -> dict:
    d = iteration_dir(run_dir, iteration)
    return {
        "dir": d,
        "adapter": d / "adapter",
        "train_state": d / "train_state",
        "pool": json.loads((d / "pool.json").read_text()),
        "metrics": json.loads((d / "metrics.json").read_text()),
        "state": json.loads((d / "state.json").read_text()),
    }


def exclude_base_weights(accelerator) -> None:
    """accelerate's save_state/load_state would write and read the whole model (the frozen
    base included) on DDP; the adapter has its own peft folder, so they skip it."""
    accelerator.register_save_state_pre_hook(lambda models, weights, output_dir: weights.clear())
    accelerator.register_load_state_pre_hook(lambda models, input_dir: models.clear())


@dataclass
class Resumed:
    start: int = 0              # the first iteration to run
    wandb_id: str | None = None
    stopped: bool = False       # the checkpointed run had already stopped early
    skipped_steps: int = 0      # optimizer steps skipped so far for a non-finite loss
    replay: list = field(default_factory=list)  # the replay buffer's programs (train.replay)
    search_library: dict = field(default_factory=dict)  # search's remembered forms per family (train.search)


def start_or_resume(run_dir: Path, cfg, accelerator, policy, stopper, selfplay, save_config) -> Resumed:
    """Prepare `run_dir` for a fresh run, or restore the last complete iteration of it.

    On resume every rank loads the adapter, the pool and the stopper's progress; the
    optimizer and each rank's own RNG come from accelerate's state (DeepSpeed restores
    its sharded adapter and optimizer itself). Settings come from the new config: only
    the stopper's progress is state.
    """
    from policies.lora import adapter_weights, load_lora_weights

    done = completed_iterations(run_dir) if cfg.resume else []
    if accelerator.is_main_process:
        if not done and run_dir.exists():  # a run that died before its first checkpoint
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        clean_partial(run_dir)
        save_config(cfg, run_dir / "config.yaml")
    accelerator.wait_for_everyone()
    if not done:
        save_adapter(run_dir, "initial", policy, adapter_weights(policy), accelerator)
        return Resumed()
    last = load_iteration(run_dir, done[-1])
    deepspeed = accelerator.state.deepspeed_plugin is not None
    if not deepspeed:  # DeepSpeed's own checkpoint (in train_state) holds the adapter
        load_lora_weights(policy, last["adapter"])
    if last["train_state"].is_dir():
        accelerator.load_state(str(last["train_state"]), **({"load_module_strict": False} if deepspeed else {}))
    stopper.load_state_dict(last["state"]["early_stopping"])
    selfplay.load_json(last["pool"])
    if accelerator.is_main_process:
        rebuild_metrics(run_dir, done)
    accelerator.wait_for_everyone()
    accelerator.print(f"resuming {run_dir} after iteration {done[-1] + 1} ({adapter_name(done[-1])})")
    stopped = bool(last["state"].get("stopped"))
    return Resumed(cfg.iterations if stopped else done[-1] + 1, last["state"].get("wandb_id"), stopped,
                   last["state"].get("skipped_steps", 0), last["state"].get("replay", []),
                   last["state"].get("search_library", {}))


def rebuild_metrics(run_dir: Path, iterations: list[int]) -> None:
    """Rewrite metrics.jsonl from the checkpoints, so after a kill each completed
    iteration appears exactly once and a half-logged one not at all."""
    lines = [(iteration_dir(run_dir, i) / "metrics.json").read_text().strip() for i in iterations]
    tmp = run_dir / "metrics.jsonl.tmp"
    tmp.write_text("".join(line + "\n" for line in lines))
    tmp.replace(run_dir / "metrics.jsonl")


def clean_partial(run_dir: Path) -> None:
    root = run_dir / ITER_DIR
    if root.is_dir():
        for d in root.glob("*.tmp"):
            shutil.rmtree(d, ignore_errors=True)


def publish_best(run_dir: Path, source_adapter: Path, info: dict) -> Path:
    """Write `best/` (adapter and best.json) whole: a kill at any point leaves the old
    `best/` or the new one (envs.atomic)."""
    from envs.atomic import replace_folder

    def write(tmp: Path) -> None:
        shutil.copytree(source_adapter, tmp / "adapter")
        (tmp / "best.json").write_text(json.dumps(info, indent=2))

    return replace_folder(run_dir / "best", write)


def stop_run(error: Exception, run_dir: Path, iteration: int | None, main: bool) -> int:
    """End a run that cannot go on, with one line; every completed iteration stays resumable."""
    from train.update import NonFiniteLoss

    # Ignored, not default: torchrun's agent and the scheduler may both pass the same
    # preemption on, and a second SIGTERM must not cut this line or the cleanup short
    # (checkpoints are whole either way; a hung cleanup still ends with SIGKILL).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if not main:
        return PREEMPTED_STATUS if isinstance(error, Preempted) else 1
    done = completed_iterations(run_dir)
    kept = f"iterations 0-{done[-1]} are checkpointed" if done else "no iteration was checkpointed"
    if isinstance(error, Preempted):
        where = f" in iteration {iteration}" if iteration is not None else ""
        print(f"preempted: SIGTERM{where}; {kept}; continue with resume=true", file=sys.stderr)
        return PREEMPTED_STATUS
    print(f"error: {error}" + ("" if isinstance(error, NonFiniteLoss) else f"; {kept}; free space and continue "
                                                                            "with resume=true"), file=sys.stderr)
    return 1
