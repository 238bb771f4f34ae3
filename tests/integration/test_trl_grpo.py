"""Rewards from our registry plug into trl.GRPOTrainer unchanged (DESIGN: contracts).

One GRPO step of the embedded SmolLM2-135M on four shapes questions, with
`rewards.get("correctness")` and `rewards.get("format")` passed as `reward_funcs`
exactly as registered. The dataset comes from the environment (`grpo_dataset`), so the
prompts are the env's and the rewards read the env's columns.
"""

import math

import gymnasium as gym
import pytest

import envs  # noqa: F401  (registers the ids)
import rewards

import trl


@pytest.fixture
def one_thread():
    # On a shared 2-core machine, two OpenMP threads spin against other processes: a
    # 450-token prefill of the 135M model took 10 s with 2 threads and 2.6 s with 1.
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_one_grpo_step_with_registry_rewards(tmp_path, one_thread):
    from transformers import AutoModelForCausalLM

    from envs.environments.grpo import grpo_dataset
    from policies.model import load_tokenizer, resolve

    path = resolve("embedded:smollm2-135m-instruct")  # cached de-quantised HF folder
    tokenizer = load_tokenizer(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    env = gym.make("vprl/Shapes-v0", size=4, seed=0)
    train = grpo_dataset(env)
    assert {"prompt", "image", "answer", "answers", "metric"} <= set(train.column_names)

    correctness, fmt = rewards.get("correctness"), rewards.get("format")
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none",
        per_device_train_batch_size=2, num_generations=2, max_completion_length=32,
        max_steps=1, logging_steps=1, save_strategy="no", seed=0,
        dataloader_num_workers=0, disable_tqdm=True,
        # Checkpointing only trades time for memory; a 135M model needs no saving on CPU.
        gradient_checkpointing=False,
    )
    trainer = trl.GRPOTrainer(model=model, processing_class=tokenizer,
                              reward_funcs=[correctness, fmt], args=args, train_dataset=train)
    trainer.train()

    assert trainer.state.global_step == 1
    logged = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    # TRL names each reward by its function name and logs its batch mean.
    mean = logged["rewards/correctness/mean"]
    assert "rewards/format_reward/mean" in logged
    # correctness returns None when `image` or `answer` is missing, which TRL logs as
    # None (or NaN), so a number here means the dataset columns reached the reward.
    assert isinstance(mean, float) and not math.isnan(mean) and 0.0 <= mean <= 1.0
