"""Reward-weighted policy iteration for visual-program policies (ViUniT §3.4, Eq. 8).

    accelerate launch train/iterate.py --config configs/shapes_rwr_cpu.yaml [key=value ...]

Reads top to bottom: setup, the starting policy's held-out evaluation (the curve's base
point), then per iteration rollout → reward (→ program search where sampling found
nothing) → weights → update → evaluate (→ probe) → log/checkpoint/stop, then the final
scoring of the last adapter and `best/`.
Each rank samples its own shard of the questions and executes its own programs; the
update, the few-shot pools and the metrics are global.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # `accelerate launch train/iterate.py` runs this as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import random

import numpy as np
import torch

from train.config import ConfigError, load_config, save_config, to_dict, to_yaml
from train.sampling import (Loop, mean_reward, prompter, questions, replay_candidates, sample_rollouts,
                            training_examples)
from train.setup import build_parser, dry_run, load_data, make_accelerator, validate


def labels_read(reward_set, selfplay, monitor: str) -> dict:
    """Which label columns each part of the run reads (rewards, pool admission, and the
    choice of best/ when it is made on held-out labels); none at all means label-free."""
    use = {**reward_set.label_columns(), **({"pool": selfplay.label_columns()} if selfplay.uses_pool else {})}
    if monitor.startswith("eval/"):  # best/ is picked by held-out accuracy against the labels
        use["early_stopping"] = ("answer", "answers")
    return use


def main(argv: list[str] | None = None) -> int:
    # ------------------------------------------------------------------ config
    args = build_parser().parse_args(argv)
    # launch/slurm.sh starts the launcher with SIGTERM ignored (so it outlives its ranks),
    # and the ignore is inherited: until the checkpoint handler is installed, a SIGTERM
    # should end this process as usual.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        cfg = load_config(args.config, args.overrides)
        if args.print_config:
            print(to_yaml(cfg), end="")
            return 0
        skipped: list[str] = []  # a dry run names what needs a download instead of refusing it
        validate(cfg, skipped if args.dry_run else None)
        run_dir = cfg.run_dir
        from train.checkpoint import completed_iterations

        if completed_iterations(run_dir) and not cfg.resume:
            raise ConfigError(f"run folder {run_dir} already has iterations; pass resume=true to continue it "
                              "or choose another run_name")
        if args.dry_run:
            return dry_run(cfg, skipped, args.accelerate_config, args.num_processes)
        from train.machine import check_start

        check_start(cfg)  # a GPU-only setting without a GPU, a missing vLLM/DeepSpeed: one line, now
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    from accelerate.utils import gather_object

    import rewards
    from envs.execution import Executor
    from envs.prompts import get_family
    from envs.tools import open_backend
    from policies.generation import any_rank, make_generator
    from policies.lora import adapter_weights, attach_lora, load_lora_weights, reset_lora
    from policies.model import load_model
    from train import checkpoint as ckpt
    from train.console_log import ConsoleLog
    from train.early_stopping import EarlyStopper
    from train.ending import Ending
    from train.heldout import HeldOut, evaluated, point_name
    from train.records import RolloutRecord, reward_counters, rollout_metrics
    from train.report import report_at_end
    from train.selfplay import SelfPlay
    from train.tracking import Tracker, rollout_table
    from train.replay import ReplayBuffer
    from train.search import search
    from train.template_tests import template_scored
    from train.update import NonFiniteLoss, configure_accelerator, reward_to_weight, run_update

    # ------------------------------------------------------------------ setup
    accelerator = make_accelerator()
    rank, world, main_proc = accelerator.process_index, accelerator.num_processes, accelerator.is_main_process
    say = accelerator.print
    console = ConsoleLog(enabled=main_proc)  # the console, also in runs/<name>/train.log
    ending = Ending(console, run_dir, main_proc)  # every way out closes what was opened, newest first
    random.seed(cfg.seed + rank)
    np.random.seed(cfg.seed + rank)
    torch.manual_seed(cfg.seed)  # same LoRA init on every rank
    try:
        train_rows, eval_rows = load_data(cfg, progress=main_proc)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        ending.close()
        return 2
    model, tokenizer = load_model(cfg.model, cfg.dtype)
    model = attach_lora(model, cfg.lora)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    configure_accelerator(accelerator, cfg.optim, bf16=cfg.dtype == "bfloat16")  # accumulation, DeepSpeed "auto"s
    model, optimizer = accelerator.prepare(model, optimizer)
    ckpt.exclude_base_weights(accelerator)
    policy = accelerator.unwrap_model(model)
    zero3 = accelerator.state.deepspeed_plugin is not None and accelerator.state.deepspeed_plugin.zero_stage == 3
    generator = make_generator(cfg.generation, policy, tokenizer, model=cfg.model, seed=cfg.seed,
                               stop=get_family(cfg.env.prompt).stop,  # a script ends at a blank line
                               max_lora_rank=cfg.lora.r, world=world, dtype=cfg.dtype,
                               sync=any_rank(accelerator.device) if zero3 and world > 1 else None)
    reward_set = rewards.RewardSet(cfg.rewards, failure_limit=cfg.reward_failure_limit,
                                   context={"run_dir": str(run_dir)})  # e.g. where unit-test suites are cached
    tools = ending.opened(open_backend(cfg.env.backend, cfg.env.backend_kwargs, tool_host=cfg.env.tool_host,
                                       setting="env.backend_kwargs.{key}"))  # model-backed tools: outside the sandbox
    executor = ending.opened(Executor(timeout_s=cfg.env.timeout_s, memory_mb=cfg.env.memory_mb,
                                      workers=cfg.env.workers, backend=tools.spec))  # handed to every reward
    stopper = EarlyStopper(cfg.early_stopping.patience, cfg.early_stopping.min_delta, cfg.early_stopping.enabled)
    selfplay = SelfPlay(cfg.selfplay, cfg.env.prompt, cfg.data.metric, run_dir=run_dir,
                        seed=cfg.data.seed)  # few-shot pools, one per prompt family
    # Which label columns train the policy (rewards, pool admission): none means label-free.
    label_use = labels_read(reward_set, selfplay, cfg.early_stopping.monitor)
    label_free = not any(label_use.values())
    say("labels: " + ("none read (label-free run)" if label_free else
                      "; ".join(f"{k} reads {', '.join(v)}" for k, v in label_use.items() if v)))
    loop = Loop(cfg, accelerator, tokenizer, generator, executor, reward_set, selfplay, train_rows, list(eval_rows))
    # The held-out questions, the same for every seed (data.seed); each rank evaluates its shard.
    eval_all = list(eval_rows)[: cfg.eval_questions]
    held_out = HeldOut(cfg, eval_all[rank::world], eval_all, executor, selfplay, tokenizer,
                       gather=gather_object, main_proc=main_proc)
    preemption = ckpt.Preemption().install()  # SIGTERM: stop, keeping the newest checkpoint whole
    try:
        with preemption.saving():
            resumed = ckpt.start_or_resume(run_dir, cfg, accelerator, policy, stopper, selfplay, save_config)
            if main_proc:
                console.open(run_dir / "train.log")  # with the lines printed so far
            generator.load_adapter(ckpt.save_adapter(run_dir, "serving", policy, adapter_weights(policy), accelerator))
    except (ckpt.CheckpointError, ckpt.Preempted) as e:
        return ending.stop(e, None)
    stopped, skipped_steps = resumed.stopped, resumed.skipped_steps
    replay = ReplayBuffer(cfg.objective.replay_capacity, cfg.objective.replay_decay, resumed.replay)
    library = resumed.search_library  # search's remembered forms (search.library), per prompt family
    shaped = functools.partial(reward_to_weight, transform=cfg.weighting.transform,  # what a replayed program weighs
                               threshold=cfg.weighting.threshold)
    final_pass = None  # the last adapter's scoring pass, when the monitor is the rollout reward
    tracker = ending.opened(Tracker(cfg.tracking, run_dir, to_dict(cfg), enabled=main_proc,
                                    resume_id=resumed.wandb_id), tracker=True)
    monitor_reward, monitor_probe = (cfg.early_stopping.monitor == m for m in ("reward/mean", "probe/reward"))
    probe_batch = questions(loop, "probe", cfg.early_stopping.probe_questions) if monitor_probe else []
    iteration = resumed.start

    try:
        # ---------------------------------------------------- the starting policy: the curve's base point
        base = held_out.base(generator, seed=loop.seed("eval", -1), fresh=resumed.start == 0) if eval_all else {}
        if base:
            say(f"starting policy: eval acc {base['eval/accuracy']:.3f}  logical "
                f"{base.get('eval/logical_accuracy', float('nan')):.3f}  (best constant answer "
                f"{base['eval/constant_answer_accuracy']:.3f}; {base['time/eval']:.0f}s)")
        if monitor_probe and resumed.start == 0:  # the initial adapter's probe score
            value = mean_reward(loop, probe_batch, 0, "probe")
            stopper.update(value, -1)
            say(f"starting policy: probe reward {value:.3f}")

        for iteration in range(resumed.start, cfg.iterations):
            t_iter = time.time()
            say(f"\n=== iteration {iteration + 1}/{cfg.iterations} ===")

            # ---------------------------------------------------- rollout: sample, execute, reward
            t0 = time.time()
            batch, rollouts, selfplay_metrics = sample_rollouts(loop, iteration)  # + rounds (dynamic sampling)
            t_rollout = time.time() - t0

            # ---------------------------------------------------- search: mutants where sampling found nothing
            t0, found = time.time(), []
            if cfg.search.enabled:  # expert iteration: what search finds is taught beside the samples
                found, search_stats = search(cfg.search, batch, rollouts, selfplay.families, executor, reward_set,
                                             cfg.data.metric, cfg.seed + iteration, gather=gather_object,
                                             library=library, probe_rows=train_rows,
                                             render=prompter(loop, iteration), shard=(rank, world))
                selfplay_metrics.update({**search_stats, "time/search": time.time() - t0})
            if cfg.objective.template_tests:  # after search, which reads each question's own reward
                rollouts, tested = template_scored(rollouts, batch, train_rows, cfg.objective.template_tests,
                                                   selfplay.families, executor, reward_set, cfg.data.metric)
                selfplay_metrics.update(tested)
            sampled, rollouts = rollouts, rollouts + found

            # ---------------------------------------------------- rewards -> weights (Eq. 8 / advantages) -> update
            t0 = time.time()
            taught = training_examples(loop, rollouts)  # one per rollout, with its weight
            fresh = replay_candidates(rollouts, taught, iteration, shaped) if replay.capacity else []
            # pool_only: the pool alone improves the policy; replayed successes train beside the rollouts.
            examples = taught + replay.examples(iteration, rank, world) if selfplay.updates else []
            if cfg.lora.init == "base":  # after the rollouts: they came from the previous adapter
                torch.manual_seed(cfg.seed + iteration)  # the same fresh A on every rank
                reset_lora(policy)
                optimizer.state.clear()
            loss_stats = run_update(accelerator, model, optimizer, examples, cfg.optim, tokenizer.pad_token_id,
                                    seed=cfg.seed + iteration, progress=main_proc, objective=cfg.objective)
            loss_stats.update({"replay/added": replay.add(fresh), "replay/size": len(replay.items)})
            skipped_steps += loss_stats["loss/skipped_steps"]
            weights = adapter_weights(policy)  # gathered once: served, then checkpointed
            with preemption.saving():
                generator.load_adapter(ckpt.save_adapter(run_dir, "serving", policy, weights, accelerator))
            t_update = time.time() - t0

            # ---------------------------------------------------- evaluate (held-out, greedy)
            # A run that never updates (pool_only) still has its starting weights: cached programs.
            eval_stats = held_out.evaluate(generator, iteration, point_name(iteration), loop.seed("eval", iteration),
                                           starting_weights=not selfplay.updates) if evaluated(cfg, iteration) else {}

            t0 = time.time()  # the adapter's probe score, with the shots its rollouts will see next
            probed = {"probe/reward": mean_reward(loop, probe_batch, iteration + 1, "probe"),
                      "time/probe": time.time() - t0} if monitor_probe else {}

            # ---------------------------------------------------- log
            metrics = {"iteration": iteration, **probed}
            metrics.update(rollout_metrics(gather_object([RolloutRecord.of(r, batch[r.row], e.weight)  # the policy's own
                                                          for r, e in zip(sampled, taught)]),
                                           reward_set.names, selfplay.names))
            metrics.update(loss_stats)
            metrics["loss/skipped_steps_total"] = skipped_steps
            metrics.update(eval_stats)
            for key in ("accuracy", "logical_accuracy"):  # the curve's base point on every line
                if f"eval/{key}" in base:
                    metrics[f"eval/base_{key}"] = base[f"eval/{key}"]
            metrics["reward/label_free"] = float(label_free)
            metrics.update(selfplay_metrics)
            metrics.update(reward_counters(reward_set))
            metrics.update(selfplay.metrics())
            # The reward scores the adapter that sampled these rollouts (the previous one);
            # an eval metric scores this iteration's.
            scored = iteration - 1 if monitor_reward else iteration
            stopped = stopper.update(metrics.get(cfg.early_stopping.monitor), scored)
            metrics["early_stopping/declines"] = stopper.declines
            metrics["early_stopping/best_iteration"] = stopper.best_policy
            metrics.update({"time/rollout": t_rollout, "time/update": t_update, "time/iteration": time.time() - t_iter})
            metrics["time/eval_share"] = metrics.get("time/eval", 0.0) / metrics["time/iteration"]

            # ---------------------------------------------------- checkpoint, stop
            state = {"early_stopping": stopper.state_dict(), "wandb_id": tracker.run_id, "stopped": stopped,
                     "skipped_steps": skipped_steps, "replay": replay.to_json(),
                     "search_library": library}
            with preemption.saving():
                ckpt.save_iteration(run_dir, iteration, policy, metrics, state, selfplay.to_json(),
                                    accelerator=accelerator, weights=weights)
            if main_proc:
                table = rollout_table(rollouts[: cfg.tracking.table_rows], batch, iteration, [e.weight for e in taught])
                tables = {"pool/contents": selfplay.table_rows()}  # held-out answers: eval/<point>.jsonl
                for name, fn in zip(reward_set.names, reward_set.fns):  # e.g. viunit's suites, with images
                    if callable(getattr(fn, "table_rows", None)):
                        tables[f"rewards/{name}/table"] = fn.table_rows()
                tracker.log(metrics, table, tables=tables)
            say(f"iteration {iteration + 1}: reward {metrics['reward/mean']:.3f}  "
                f"pass {metrics['rollout/pass_rate']:.2f}  sampled acc {metrics['rollout/accuracy']:.3f}  "
                f"loss {metrics['loss/mean']:.3f}  eval acc {metrics.get('eval/accuracy', float('nan')):.3f}  "
                f"logical {metrics.get('eval/logical_accuracy', float('nan')):.3f}  "
                f"({metrics['time/iteration']:.0f}s)")
            if skipped_steps > cfg.optim.max_skipped_steps:
                raise NonFiniteLoss(f"{skipped_steps} optimizer steps had a non-finite loss (more than "
                                    f"optim.max_skipped_steps={cfg.optim.max_skipped_steps}); iteration {iteration + 1} "
                                    "is checkpointed; lower optim.lr or check the rewards, then resume=true")
            if stopped:
                say(f"early stop: {cfg.early_stopping.monitor} declined {stopper.declines} time(s) in a row")
                break

        # ---------------------------------------------------- score the last adapter
        last = ckpt.completed_iterations(run_dir)[-1] if ckpt.completed_iterations(run_dir) else -1
        if monitor_reward and not stopped and last >= 0 and last not in stopper.scores:
            # No update follows the last one, so its adapter has no rollout reward yet:
            # one more rollout pass (no update, no pool admission) makes it eligible.
            value = mean_reward(loop, questions(loop, last + 1), last + 1)
            stopper.update(value, last)
            # Its rewards may build suites too (viunit, proptest): their counters go with its score.
            final_pass = {"questions_of_iteration": last + 1, "reward/mean": value, **reward_counters(reward_set)}
            say(f"final adapter ({ckpt.adapter_name(last)}): reward {value:.3f}")

        # ---------------------------------------------------- measure the adapter to publish
        # With eval_every > 1 the iteration early stopping keeps may have no held-out point;
        # best/ is what a user takes away, so it is measured before it is published.
        best = stopper.best_policy
        if eval_all and best >= 0 and not evaluated(cfg, best):
            if accelerator.state.deepspeed_plugin is not None:  # its adapter is sharded: not reloaded here
                say(f"note: the adapter to publish ({ckpt.adapter_name(best)}) has no held-out point (eval_every="
                    f"{cfg.eval_every}); measure it with `vprl eval --adapter {run_dir}/best/adapter --temperature 0`")
            else:
                load_lora_weights(policy, ckpt.adapter_dir(run_dir, best))
                saved_pool = ckpt.load_iteration(run_dir, best)["pool"] if selfplay.uses_pool else None
                if saved_pool is not None:  # its shots as they stood then, as the loop would have evaluated it
                    selfplay.load_json(saved_pool)
                generator.load_adapter(ckpt.save_adapter(run_dir, "serving", policy, adapter_weights(policy),
                                                         accelerator))
                stats = held_out.evaluate(generator, best, point_name(best), loop.seed("eval", best),
                                          starting_weights=not selfplay.updates)
                pool = f", its pool of {len(saved_pool)} programs" if saved_pool is not None else ""
                say(f"adapter to publish ({ckpt.adapter_name(best)}{pool}): eval acc {stats['eval/accuracy']:.3f}  logical "
                    f"{stats.get('eval/logical_accuracy', float('nan')):.3f}")
    except (ckpt.CheckpointError, ckpt.Preempted, NonFiniteLoss) as e:
        return ending.stop(e, iteration)
    except BaseException:
        ending.crash()  # no partial output: a run that fails before its first checkpoint leaves nothing
        raise

    # ------------------------------------------------------------------ finish: publish best/
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # from here a SIGTERM just ends the process: all is saved
    if main_proc:
        best, probe_size = stopper.best_policy, min(cfg.early_stopping.probe_questions, len(train_rows))
        why = (f"highest {cfg.early_stopping.monitor} among the adapters scored, the later one on a tie "
               + ("(the reward of iteration t's rollouts scores the adapter of t-1; the last adapter by a final "
                  "rollout pass)" if monitor_reward else f"(the same {probe_size} training questions and sampling "
                  "seed after each update, and before the first)" if monitor_probe
                  else "(evaluated after each update)"))
        ckpt.publish_best(run_dir, ckpt.adapter_dir(run_dir, best), {
            "iteration": best, "adapter": ckpt.adapter_name(best),
            "monitor": cfg.early_stopping.monitor, "value": stopper.best, "why": why,
            "scores": {ckpt.adapter_name(k): v for k, v in sorted(stopper.scores.items())},
            "stopped_early": stopped, **({"final_pass": final_pass} if final_pass else {})})
        tracker.summary({"best_iteration": best, "best_score": stopper.best, "stopped_early": stopped,
                         "label_free": label_free, "label_columns": {k: list(v) for k, v in label_use.items()},
                         **{f"base/{k}": v for k, v in base.items()},
                         **{f"final_pass/{k}": v for k, v in (final_pass or {}).items()}})
        say(f"done: {run_dir} (best adapter: {ckpt.adapter_name(best)})")
        if cfg.tracking.report:
            report_at_end(run_dir)  # prints "report: runs/<name>/report.html"
    accelerator.wait_for_everyone()
    ending.close()  # the tracker, executor and tools, then the console
    accelerator.end_training()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
