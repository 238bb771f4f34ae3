#!/usr/bin/env bash
# Every GPU check in one go, on a machine with CUDA: launch/gpu_check.sh [NAME ...]
# Prints one line per check (PASSED / FAILED / SKIPPED with the reason / TIMEOUT, with
# measurements where a check makes them) within 8 minutes; exit status 0 when nothing
# failed. It needs torch, transformers, accelerate and peft; the checks that need more
# (the project's packages and the embedded model, DeepSpeed, vLLM, a second GPU) say so
# and are skipped. Wheels in .whl/ (carried to a bare machine) are installed first,
# into /tmp/vprl-site. The checks: tests/gpu/checks.py.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
if compgen -G ".whl/*.whl" >/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/vprl-site \
        .whl/*.whl || { echo "error: the wheels in .whl/ did not install" >&2; exit 2; }
    export PYTHONPATH=/tmp/vprl-site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} TOKENIZERS_PARALLELISM=false WANDB_MODE=disabled
if ! $PY -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "error: no CUDA device visible to $PY; run this on a GPU machine" >&2
    exit 2
fi
$PY -c "import torch, transformers, accelerate, peft; print('device:', torch.cuda.get_device_name(0), 'x', \
torch.cuda.device_count(), '| torch', torch.__version__, 'CUDA', torch.version.cuda, '| transformers', \
transformers.__version__, '| accelerate', accelerate.__version__, '| peft', peft.__version__)" || exit 2
exec $PY launch/gpu_check.py --budget 470 "$@"
