#!/usr/bin/env bash
# Every GPU of this machine under DeepSpeed ZeRO (ZERO=2 by default, or 3): launch/local.sh
# with ZERO set. Extra args are config overrides (or --dry-run).
#   CONFIG=configs/gqa_rwr_8gpu.yaml launch/multi_gpu.sh
set -euo pipefail
CONFIG=${CONFIG:?set CONFIG to an experiment YAML} ZERO=${ZERO:-2} exec "$(dirname "$0")/local.sh" "$@"
