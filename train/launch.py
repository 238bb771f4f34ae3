"""Start a run with the launch that fits this machine (`launch/local.sh` runs this).

    python -m train.launch --config configs/X.yaml [--gpus N] [--zero 2|3] [--dry-run] [key=value ...]

It counts the CUDA GPUs (VPRL_GPUS overrides; else nvidia-smi, else torch), or takes the
count to plan for (--gpus), and picks the accelerate config: none ->
configs/accelerate/cpu.yaml, one -> gpu_1.yaml (no DeepSpeed), several -> multi_gpu.yaml
(DDP) on all of them, or zero2.yaml / zero3.yaml with --zero.
Before anything starts, the config and that file are checked against the machine
(train/machine.py): a GPU-only setting here, a missing vLLM or DeepSpeed, disagreeing
precision is one line and exit status 2. `--dry-run` runs the trainer's dry run with the
same file, naming what this machine cannot check as skipped. Overrides are passed on as
they came, one argument each (`'rewards=[correctness, parse]'` stays one).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from envs.cliargs import number

ACCEL = Path("configs/accelerate")


def pick(gpus: int, zero: int | None = None) -> tuple[str, int | None]:
    """(accelerate config file, number of processes) for a machine with `gpus` GPUs."""
    if zero is not None:  # no GPU: the file's own count, which the machine check then refuses
        return str(ACCEL / f"zero{zero}.yaml"), gpus or None
    if gpus == 0:
        return str(ACCEL / "cpu.yaml"), 1
    if gpus == 1:
        return str(ACCEL / "gpu_1.yaml"), 1
    return str(ACCEL / "multi_gpu.yaml"), gpus


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="launch/local.sh", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n", 2)[2],
        epilog="Every other argument is a config override (key=value), passed on as one argument.\n\nexamples:\n  CONFIG=configs/gqa_rwr_1gpu.yaml GPUS=1 launch/local.sh --dry-run\n"
               "  CONFIG=configs/gqa_rwr_8gpu.yaml GPUS=8 ZERO=2 launch/local.sh iterations=3")
    parser.add_argument("--config", required=True, help="experiment YAML (CONFIG= in launch/local.sh)")
    parser.add_argument("--zero", type=int, choices=(2, 3), help="DeepSpeed ZeRO stage on the GPUs (ZERO=)")
    parser.add_argument("--accelerate-config", metavar="FILE",
                        help="use this accelerate config instead of picking one (ACCEL_CONFIG=)")
    parser.add_argument("--gpus", type=number(int, at_least=0), metavar="N",
                        help="plan the launch for N GPUs (GPUS=); default: the GPUs detected here. A run needs that "
                             "many; a dry run checks the planned launch on any machine")
    parser.add_argument("--num-processes", type=number(int, at_least=1), metavar="N",
                        help="processes in all (default: one per GPU, or the --accelerate-config file's)")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the config, the launch file and this machine; load data and model; start nothing")
    parser.add_argument("--check", action="store_true",
                        help="only check the config and the launch file against this machine (no model load)")
    parser.add_argument("--print-command", action="store_true", help="print the launch command instead of running it")
    return parser


def plan(args, gpus: int) -> tuple[str, int | None]:
    if args.accelerate_config:
        return args.accelerate_config, args.num_processes
    file, n = pick(gpus, args.zero)
    return file, args.num_processes or n


def main(argv: list[str] | None = None) -> int:
    from train import machine
    from train.config import ConfigError, load_config
    from train.setup import validate

    args, overrides = build_parser().parse_known_args(argv)
    try:
        detected = machine.gpu_count()
        gpus = args.gpus if args.gpus is not None else detected
        file, nproc = plan(args, gpus)
        if args.dry_run:
            from train.iterate import main as train_main

            extra = ["--num-processes", str(nproc)] if nproc else []
            return train_main(["--config", args.config, "--dry-run", "--accelerate-config", file, *extra, *overrides])
        launch = machine.read_launch(file, nproc)
        cfg = load_config(args.config, overrides)
        if args.check:
            validate(cfg)
        found = machine.problems(cfg, launch, detected)
        if gpus > detected:
            found.insert(0, machine.Problem("machine", f"the launch is planned for {gpus} GPU(s) (GPUS={gpus}) and "
                                                       f"this machine has {detected}"))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for p in found:
        if not p.refused:
            print(f"note: {p.text}", file=sys.stderr)
    refused = [p for p in found if p.refused]
    if refused:
        print(f"error: {refused[0].text}", file=sys.stderr)
        return 2
    if args.check:
        print(f"launch: {launch.describe()}; {machine.precision_line(cfg, launch)}")
        return 0
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", file,
           *(["--num_processes", str(nproc)] if nproc else []),
           "train/iterate.py", "--config", args.config, *overrides]
    print(f"launch: {launch.describe()}", file=sys.stderr)
    if args.print_command:
        print(shlex.join(cmd))
        return 0
    import os

    sys.stdout.flush()
    os.execv(sys.executable, cmd)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
