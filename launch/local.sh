#!/usr/bin/env bash
# One machine, one process (CPU or a single GPU). Extra args are config overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${CONFIG:-configs/shapes_rwr_cpu.yaml}
exec accelerate launch --config_file configs/accelerate/cpu.yaml train/iterate.py --config "$CONFIG" "$@"
