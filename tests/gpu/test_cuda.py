"""GPU-only checks; skipped without CUDA (CI has none). The checks themselves live in
tests/gpu/checks.py, so launch/gpu_check.sh runs the same ones on a machine without
pytest; what a machine lacks (DeepSpeed, vLLM, a second GPU, the project's packages)
skips a check with the reason. Meant to fit in 8 minutes on one H100/H200-class GPU: a
budget, since no GPU has run them yet."""

import pytest
import torch

from tests.gpu import checks

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@pytest.mark.parametrize("check", checks.CHECKS, ids=[c.__name__ for c in checks.CHECKS])
def test_gpu(check, tmp_path):
    try:
        line = check(tmp_path)
    except checks.Skip as e:
        pytest.skip(str(e))
    if line:
        print(f"{check.__name__}: {line}")
