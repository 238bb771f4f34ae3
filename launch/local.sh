#!/usr/bin/env bash
# One machine, fitted to what it has: the CPU, one GPU (no DeepSpeed) or every GPU here.
#   CONFIG=configs/X.yaml launch/local.sh [--dry-run] [key=value ...]
# GPUS=N plans the launch for N GPUs (default: every GPU detected, by nvidia-smi, else
# torch; VPRL_GPUS=N overrides that detection); ZERO=2|3 runs DeepSpeed
# ZeRO on the GPUs (default: DDP when there are several); ACCEL_CONFIG=FILE names the
# accelerate config outright. A setting this machine cannot run (vLLM or DeepSpeed
# without a GPU, a package not installed) stops here in one line; --dry-run checks the
# config, the launch file and the machine, and names what it had to skip.
# `python -m train.launch --help` explains every option.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python}" -m train.launch --config "${CONFIG:-configs/shapes_rwr_cpu.yaml}" \
    ${GPUS:+--gpus "$GPUS"} ${ZERO:+--zero "$ZERO"} ${ACCEL_CONFIG:+--accelerate-config "$ACCEL_CONFIG"} "$@"
