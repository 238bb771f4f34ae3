#!/usr/bin/env bash
# Every GPU check in one go, on a machine with CUDA (and vLLM, if installed, for its check):
#   launch/gpu_check.sh
# Prints one line per check (PASSED / FAILED / SKIPPED with the reason) and stops after
# 8 minutes. Exit status: 0 when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
export PYTHONPATH=${PYTHONPATH:-$PWD} TOKENIZERS_PARALLELISM=false WANDB_MODE=disabled
if ! $PY -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "error: no CUDA device visible to $PY; run this on a GPU machine" >&2
    exit 2
fi
$PY -c "import torch; print('device:', torch.cuda.get_device_name(0), 'x', torch.cuda.device_count())"
out=$(timeout 480 $PY -m pytest -q -m gpu tests/gpu -rA -p no:warnings --no-header -o console_output_style=classic 2>&1)
status=$?
echo "$out" | grep -E '^(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) ' | sed -E 's/^(SKIPPED) \[[0-9]+\] /\1 /'
[ $status -eq 124 ] && echo "TIMEOUT after 8 minutes (the checks above finished; the rest did not)"
if [ $status -ne 0 ] && [ $status -ne 124 ]; then
    echo "$out" | tail -n 40 >&2
fi
exit $status
