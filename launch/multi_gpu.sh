#!/usr/bin/env bash
# All GPUs of this machine under DeepSpeed ZeRO (ZERO=2 or 3). Extra args are config overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${CONFIG:?set CONFIG to an experiment YAML}
ZERO=${ZERO:-2}
NGPU=${NGPU:-$(nvidia-smi -L | wc -l)}
exec accelerate launch --config_file "configs/accelerate/zero${ZERO}.yaml" --num_processes "$NGPU" \
    train/iterate.py --config "$CONFIG" "$@"
