"""GPU-only checks; skipped without CUDA (CI has none). Run them on a GPU machine."""

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def test_bf16_update_step_on_cuda():
    from tests.helpers.tiny import tiny_lora_model
    from train.update import Example, collate, completion_nll, weighted_loss

    model = tiny_lora_model(dtype=torch.bfloat16).cuda()
    batch = collate([Example([5, 6, 7, 8], [9, 10, 1], 1.0), Example([5, 6, 7, 11], [12, 1], 0.5)], 0)
    batch = {k: v.cuda() for k, v in batch.items()}
    loss = weighted_loss(completion_nll(model, batch), batch["weights"], 2.0)
    loss.backward()
    assert torch.isfinite(loss)


def test_vllm_backend_generates():
    pytest.importorskip("vllm")
    from policies.vllm_backend import VLLMGenerator

    gen = VLLMGenerator("embedded:smollm2-135m-instruct", max_new_tokens=16)
    samples = gen.generate(["def execute_command(image):\n    image_patch = ImagePatch(image)"], n=2)
    assert len(samples) == 2 and all(isinstance(s.text, str) for s in samples)
