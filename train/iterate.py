"""Reward-weighted policy iteration for visual-program policies (ViUniT §3.4, Eq. 8).

    accelerate launch train/iterate.py --config configs/shapes_rwr_cpu.yaml [key=value ...]

Reads top to bottom: setup, then per iteration rollout → execute → reward → weights →
update → evaluate → log/checkpoint/stop. Each rank samples its own shard of the
questions and executes its own programs; gradients meet in the update.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # `accelerate launch train/iterate.py` runs this as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import random

import numpy as np
import torch

from train.config import ConfigError, load_config, save_config, to_dict, to_yaml
from train.setup import build_parser, dry_run, load_data, make_accelerator, validate


def _stats(values: list[float]) -> tuple[float, float]:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    return (float(arr.mean()), float(arr.std())) if arr.size else (float("nan"), float("nan"))


def main(argv: list[str] | None = None) -> int:
    # ------------------------------------------------------------------ config
    args = build_parser().parse_args(argv)
    try:
        cfg = load_config(args.config, args.overrides)
        if args.print_config:
            print(to_yaml(cfg), end="")
            return 0
        validate(cfg)
        run_dir = cfg.run_dir
        from train.checkpoint import completed_iterations

        if completed_iterations(run_dir) and not cfg.resume:
            raise ConfigError(f"run folder {run_dir} already has iterations; pass resume=true to continue it "
                              "or choose another run_name")
        if args.dry_run:
            return dry_run(cfg)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    from accelerate.utils import gather_object

    import rewards
    from envs.execution import Executor
    from envs.prompts import get_family
    from envs.tools import open_backend
    from policies.generation import GenerationConfig, HFGenerator
    from policies.lora import attach_lora, load_lora_weights, reset_lora
    from policies.model import load_model
    from train import checkpoint as ckpt
    from train.early_stopping import EarlyStopper
    from train.evaluate import family_hits, logical_metrics, result_score, summarize
    from train.rollout import collect, status_rates
    from train.selfplay import SelfPlay, judge_reply
    from train.console_log import ConsoleLog
    from train.report import report_at_end
    from train.tracking import Tracker, rollout_table
    from train.update import Example, configure_accelerator, reward_to_weight, run_update

    accelerator = make_accelerator()
    rank, world, main_proc = accelerator.process_index, accelerator.num_processes, accelerator.is_main_process
    say = accelerator.print
    console = ConsoleLog(enabled=main_proc)  # the console, also in runs/<name>/train.log
    random.seed(cfg.seed + rank)
    np.random.seed(cfg.seed + rank)
    torch.manual_seed(cfg.seed)  # same LoRA init on every rank

    # ------------------------------------------------------------------ setup
    try:
        train_rows, eval_rows = load_data(cfg, progress=main_proc)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        console.close()
        return 2
    model, tokenizer = load_model(cfg.model, cfg.dtype)
    model = attach_lora(model, cfg.lora)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    configure_accelerator(accelerator, cfg.optim)  # gradient accumulation, DeepSpeed's "auto" values
    model, optimizer = accelerator.prepare(model, optimizer)
    policy = accelerator.unwrap_model(model)
    gen_cfg = GenerationConfig(**{k: v for k, v in vars(cfg.generation).items() if k != "eval_temperature"})
    gen_cfg.stop = get_family(cfg.env.prompt).stop  # a script ends at a blank line, a body at column 0
    if cfg.generation.backend == "vllm":
        from policies.vllm_backend import VLLMGenerator

        generator = VLLMGenerator(cfg.model, temperature=gen_cfg.temperature, top_p=gen_cfg.top_p,
                                  max_new_tokens=gen_cfg.max_new_tokens, seed=cfg.seed + rank, max_lora_rank=cfg.lora.r,
                                  distributed=world > 1)
    else:
        generator = HFGenerator(policy, tokenizer, gen_cfg, seed=cfg.seed)
    reward_set = rewards.RewardSet(cfg.rewards, failure_limit=cfg.reward_failure_limit,
                                   context={"run_dir": str(run_dir)})  # e.g. where unit-test suites are cached
    tools = open_backend(cfg.env.backend, cfg.env.backend_kwargs, tool_host=cfg.env.tool_host,
                         setting="env.backend_kwargs.{key}")  # model-backed tools live outside the sandbox
    executor = Executor(timeout_s=cfg.env.timeout_s, memory_mb=cfg.env.memory_mb, workers=cfg.env.workers,
                        backend=tools.spec)  # handed to every reward
    stopper = EarlyStopper(cfg.early_stopping.patience, cfg.early_stopping.min_delta, cfg.early_stopping.enabled)
    selfplay = SelfPlay(cfg.selfplay, cfg.env.prompt, cfg.data.metric)  # few-shot pools, one per prompt family

    start, wandb_id, stopped = 0, None, False
    done = ckpt.completed_iterations(run_dir) if cfg.resume else []
    if main_proc:
        if not done and run_dir.exists():  # a run that died before its first checkpoint
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        console.open(run_dir / "train.log")
        ckpt.clean_partial(run_dir)
        save_config(cfg, run_dir / "config.yaml")
        if not done:
            policy.save_pretrained(run_dir / ckpt.ITER_DIR / "initial" / "adapter")
            ckpt.make_portable(run_dir / ckpt.ITER_DIR / "initial" / "adapter")
    if done:
        last = ckpt.load_iteration(run_dir, done[-1])
        load_lora_weights(policy, last["adapter"])
        optimizer.load_state_dict(last["optimizer"])
        ckpt.set_rng_state(last["rng"])
        stopper.load_state_dict(last["state"]["early_stopping"])
        selfplay.load_json(last["pool"])
        wandb_id = last["state"].get("wandb_id")
        start = done[-1] + 1
        if main_proc:
            ckpt.rebuild_metrics(run_dir, done)
        say(f"resuming {run_dir} after iteration {done[-1]}")
        if not isinstance(generator, HFGenerator):  # vLLM serves the resumed adapter from disk
            generator.weights_changed(last["adapter"])
        if last["state"].get("stopped"):
            start, stopped = cfg.iterations, True
    accelerator.wait_for_everyone()
    tracker = Tracker(cfg.tracking, run_dir, to_dict(cfg), enabled=main_proc, resume_id=wandb_id)

    train_order = list(range(len(train_rows)))
    eval_index = list(range(min(cfg.eval_questions, len(eval_rows))))[rank::world]
    eval_batch = [eval_rows[i] for i in eval_index]

    try:
        for iteration in range(start, cfg.iterations):
            t_iter = time.time()
            say(f"\n=== iteration {iteration + 1}/{cfg.iterations} ===")
            if isinstance(generator, HFGenerator):
                generator.weights_changed()
                generator.generator.manual_seed(cfg.seed * 1000 + iteration * 97 + rank)

            # ---------------------------------------------------- 1-3. rollout, execute, reward
            picks = random.Random(f"{cfg.seed}:{iteration}").sample(train_order, min(cfg.questions_per_iteration, len(train_order)))
            batch = [train_rows[i] for i in picks[rank::world]]
            t0 = time.time()
            rollouts, selfplay_metrics = [], {}
            for name in selfplay.names:  # one prompt family (and few-shot pool) after another
                prompts, shots = selfplay.prompts(name, tokenizer, batch, iteration, cfg.seed)
                family_rollouts = collect(batch, prompts, generator, cfg.programs_per_question, executor, reward_set,
                                          metric=cfg.data.metric, progress=main_proc, desc=f"generate {name}")
                selfplay_metrics.update(selfplay.refine(name, tokenizer, batch, family_rollouts, shots, generator,
                                                        executor, reward_set))
                selfplay_metrics[f"pool/{name}/admitted_now"] = selfplay.admit(name, batch, family_rollouts, iteration)
                for ro in family_rollouts:
                    ro.prompt_family = name
                rollouts += family_rollouts
            # Label accuracy of every rollout, for the logs: a label-free reward (viunit) never
            # sees it, but it is how runs with different rewards are compared.
            for ro in rollouts:
                ro.accuracy = result_score(ro.result, batch[ro.row], cfg.data.metric)
            t_rollout = time.time() - t0

            # ---------------------------------------------------- 4. rewards -> weights
            eos = tokenizer.eos_token_id
            examples = []
            for ro in rollouts:
                ro.weight = reward_to_weight(ro.reward, cfg.weighting.transform, cfg.weighting.threshold,
                                             cfg.weighting.clip_negative)
                # A program that ended on its own is taught to end there (EOS); a truncated one is not.
                target = ro.completion_ids + ([eos] if ro.finished else [])
                if ro.refined:  # teach the first prompt the corrected program
                    corrected = selfplay.training_completion(ro, ro.prompt_family, tokenizer)
                    target = corrected + [eos] if corrected else target
                    ro.weight = ro.weight if corrected else 0.0
                examples.append(Example(ro.prompt_ids, target, ro.weight))

            # ---------------------------------------------------- 5. reward-weighted NLL update
            t0 = time.time()
            if cfg.lora.init == "base":  # after the rollouts: they came from the previous adapter
                torch.manual_seed(cfg.seed + iteration)  # the same fresh A on every rank
                reset_lora(policy)
                optimizer.state.clear()
            if not selfplay.updates:  # pool_only: the pool alone improves the policy (seed 002)
                examples = []
            loss_stats = run_update(accelerator, model, optimizer, examples, cfg.optim, tokenizer.pad_token_id,
                                    seed=cfg.seed + iteration, progress=main_proc)
            t_update = time.time() - t0
            serving = None
            if not isinstance(generator, HFGenerator):  # vLLM serves the adapter from disk
                serving = run_dir / ckpt.ITER_DIR / f"serving_{rank}"
                policy.save_pretrained(serving)
            generator.weights_changed(serving)

            # ---------------------------------------------------- 6. held-out evaluation
            t0 = time.time()
            generator.temperature = cfg.generation.eval_temperature
            evals_by_family = {}
            for name in selfplay.names:
                eval_prompts, _ = selfplay.prompts(name, tokenizer, eval_batch, iteration, cfg.seed + 1)
                evals_by_family[name] = collect(eval_batch, eval_prompts, generator, 1, executor,
                                                progress=main_proc, desc=f"evaluate {name}") if eval_batch else []
                for ro in evals_by_family[name]:  # the task metric of each row, against its labels
                    ro.accuracy = result_score(ro.result, eval_batch[ro.row], cfg.data.metric)
            evals = evals_by_family[selfplay.names[0]]
            eval_hits = family_hits(eval_batch, {n: [r.result.answer for r in rs] for n, rs in evals_by_family.items()},
                                    cfg.data.metric, selfplay.cfg.aggregate,
                                    judge_fn=lambda prompt: judge_reply(generator, prompt))
            generator.temperature = cfg.generation.temperature
            logical = logical_metrics(evals, eval_batch, executor, cfg.eval_counterfactuals, cfg.seed) \
                if cfg.eval_counterfactuals else []
            t_eval = time.time() - t0

            # ---------------------------------------------------- 7. log, checkpoint, stop
            all_rollouts = gather_object([(r.reward, r.weight, r.result.status, r.parts, len(r.completion_ids),
                                           r.prompt_family, r.accuracy) for r in rollouts])
            all_evals = gather_object([(r.accuracy, r.result.status) for r in evals])
            all_logical = gather_object(logical)
            all_hits = {k: gather_object(v) for k, v in eval_hits.items()}
            metrics = {"iteration": iteration}
            metrics["reward/mean"], metrics["reward/std"] = _stats([r[0] for r in all_rollouts])
            for name in reward_set.names:
                metrics[f"rewards/{name}/mean"], metrics[f"rewards/{name}/std"] = _stats([r[3][name] for r in all_rollouts])
            metrics.update(status_rates([r[2] for r in all_rollouts], "rollout"))
            metrics["rollout/samples"] = len(all_rollouts)
            metrics["rollout/weighted_samples"] = sum(r[1] > 0 for r in all_rollouts)
            metrics["rollout/completion_tokens"] = _stats([r[4] for r in all_rollouts])[0]
            metrics["rollout/accuracy"] = _stats([r[6] for r in all_rollouts])[0]
            metrics.update(loss_stats)
            metrics["eval/accuracy"] = _stats([r[0] for r in all_evals])[0]
            metrics["eval/questions"] = len(all_evals)
            metrics.update(status_rates([r[1] for r in all_evals], "eval"))
            metrics.update(summarize(all_logical, "eval"))
            metrics.update({f"eval/{k}/accuracy": _stats(v)[0] for k, v in all_hits.items()})
            for name in selfplay.names:
                fam = [r for r in all_rollouts if r[5] == name]
                metrics[f"rollout/{name}/accuracy"] = _stats([r[6] for r in fam])[0]
                metrics[f"rollout/{name}/pass_rate"] = _stats([float(r[2] == "ok") for r in fam])[0]
            metrics.update(selfplay_metrics)
            for name, fn in zip(reward_set.names, reward_set.fns):  # a reward's own counters (rank 0's)
                if callable(getattr(fn, "metrics", None)):
                    metrics.update({f"rewards/{name}/{k}": v for k, v in fn.metrics().items()})
            metrics.update(selfplay.metrics())
            metrics.update({"time/rollout": t_rollout, "time/update": t_update, "time/eval": t_eval,
                            "time/iteration": time.time() - t_iter})
            # The reward scores the adapter that sampled these rollouts: the previous iteration's.
            stopped = stopper.update(metrics["reward/mean"], iteration - 1)
            metrics["early_stopping/declines"] = stopper.declines
            metrics["early_stopping/best_iteration"] = stopper.best_policy

            if main_proc:
                state = {"early_stopping": stopper.state_dict(), "wandb_id": tracker.run_id, "stopped": stopped}
                ckpt.save_iteration(run_dir, iteration, policy, optimizer, metrics, state, pool=selfplay.to_json())
                table = rollout_table(rollouts[: cfg.tracking.table_rows], batch, iteration)
                tables = {"pool/contents": selfplay.table_rows(), "eval/answers": rollout_table(evals, eval_batch, iteration)}
                for name, fn in zip(reward_set.names, reward_set.fns):  # e.g. viunit's suites, with images
                    if callable(getattr(fn, "table_rows", None)):
                        tables[f"rewards/{name}/table"] = fn.table_rows()
                tracker.log(metrics, table, tables=tables)
            say(f"iteration {iteration + 1}: reward {metrics['reward/mean']:.3f}  "
                f"pass {metrics['rollout/pass_rate']:.2f}  loss {metrics['loss/mean']:.3f}  "
                f"eval acc {metrics['eval/accuracy']:.3f}  logical {metrics.get('eval/logical_accuracy', float('nan')):.3f}  "
                f"({metrics['time/iteration']:.0f}s)")
            accelerator.wait_for_everyone()
            if stopped:
                say(f"early stop: training reward declined {stopper.declines} time(s) in a row")
                break
    except BaseException:
        console.close(error=True)
        # No partial output: a run that fails before its first checkpoint leaves nothing behind.
        if main_proc and not ckpt.completed_iterations(run_dir):
            tracker.finish()
            shutil.rmtree(run_dir, ignore_errors=True)
        raise

    # ------------------------------------------------------------------ finish
    if main_proc:
        best = stopper.best_policy
        source = ckpt.iteration_dir(run_dir, best) / "adapter" if best >= 0 else run_dir / ckpt.ITER_DIR / "initial" / "adapter"
        if stopped:
            load_lora_weights(policy, source)  # restore the best adapter in memory too
        ckpt.publish_best(run_dir, source, {"iteration": best, "reward": stopper.best, "stopped_early": stopped})
        tracker.summary({"best_iteration": best, "best_reward": stopper.best, "stopped_early": stopped})
        tracker.finish()
        say(f"done: {run_dir} (best adapter: iteration {best})")
        if cfg.tracking.report:
            report_at_end(run_dir)  # prints "report: runs/<name>/report.html"
    console.close()
    accelerator.wait_for_everyone()
    executor.close()
    tools.close()
    accelerator.end_training()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
