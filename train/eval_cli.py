"""`vprl eval`: accuracy of a policy under an answering strategy, printed as JSON.

    vprl eval --data DIR --split validation [--adapter PATH] --strategy viunit \
              --programs 5 --unit-tests 5
    vprl eval --data DIR --strategy proptest --tests template   # PropTest (prompt: proptest)

The metrics are those of training's held-out eval: accuracy (the dataset metric),
error rate, and for shapes questions logical accuracy and right-for-wrong-reasons on
counterfactual scenes, measured on the program each strategy selects.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from envs.cliargs import OneLineParser, UsageError, number
from policies import DEFAULT_MODEL

from train.strategies import Scoring, answer_strategies, choose, get_strategy
from train.strategies.proptest import STRATEGIES as PROPERTY_TEST_STRATEGIES


def build_parser() -> argparse.ArgumentParser:
    from rewards.unit_tests.scoring import THETA

    strategies = answer_strategies()
    p = OneLineParser(prog="vprl eval", description="Evaluate a policy (optionally with a LoRA adapter) under "
                "an answering strategy: " + "; ".join(f"{n}: {get_strategy(n).help}" for n in strategies) +
                ". Prints metrics as JSON.")
    p.add_argument("--data", required=True, help="a dataset folder or file: `vprl data shapes/import` output, "
                   "an image folder with metadata.jsonl/.csv, a parquet/json/csv file, a saved Dataset")
    p.add_argument("--split", default="validation", help="split to evaluate (validation)")
    p.add_argument("--columns", action="append", metavar="FIELD=COLUMN",
                   help="map our fields to your column names, e.g. question=prompt,answer=label")
    p.add_argument("--image-root", dest="image_root", default=None, metavar="DIR",
                   help="folder that image file names are relative to (default: the data's)")
    p.add_argument("--strategy", default="base", choices=strategies, help="answering strategy (base)")
    p.add_argument("--programs", type=number(int, at_least=1), default=1, help="programs sampled per question, N (1)")
    p.add_argument("--ablation", default="ensemble", choices=("naive", "parser", "caption", "ensemble"),
                   help="vlagent: naive planner, + parser/repair, + caption verifier, + ensemble verifier "
                        "(cumulative; ensemble)")
    p.add_argument("--judge", default="policy",
                   help="vlagent: the caption verifier's LLM judge, 'policy' or a model name (policy)")
    p.add_argument("--detectors", default=None,
                   help="vlagent: comma-separated detector backends for the ensemble verifier "
                        "(shapes-cv and its variants)")
    p.add_argument("--min-models", dest="min_models", type=number(int, at_least=1), default=2,
                   help="vlagent: M, the fewest detectors Algorithm 1 keeps (2)")
    p.add_argument("--unit-tests", dest="unit_tests", type=number(int, at_least=1),
                   default=5, help="unit tests per question, K (5)")
    p.add_argument("--candidates", type=number(int, at_least=1),
                   default=20, help="candidate tests before coverage sampling, M (20)")
    p.add_argument("--test-source", dest="test_source", default=None, choices=("llm", "scene"),
                   help="where unit tests come from (llm)")
    p.add_argument("--generator", dest="old_test_source", default=None, choices=("llm", "scene"),
                   help=argparse.SUPPRESS)  # the old name of --test-source
    p.add_argument("--sampling", default="answer_then_input",
                   choices=("random", "answer", "input", "answer_then_input"), help="coverage strategy")
    p.add_argument("--tests", default="template", choices=("template", "basic", "advanced", "itm"),
                   help="property-test writer for the proptest strategies: rules on the question's form "
                        "(template), or the LLM with the basic, advanced (llm_query) or ITM prompt (template)")
    p.add_argument("--theta", type=number(float, at_least=0, at_most=1),
                   default=THETA, help=f"passing threshold θ ({THETA})")
    p.add_argument("--tie-break", dest="tie_break", default="random", choices=("random", "vote"))
    p.add_argument("--iterations", type=number(int, at_least=0), default=1, help="re-prompting rounds (1)")
    p.add_argument("--questions", type=number(int, at_least=1),
                   default=None, help="evaluate the first Q questions (all)")
    p.add_argument("--adapter", default=None, help="LoRA adapter folder (e.g. runs/NAME/best/adapter)")
    p.add_argument("--model", default=None, help=f"policy model: {DEFAULT_MODEL} (default), "
                   "a model folder or a Hub id in the local cache; with --adapter, the base it records")
    p.add_argument("--prompt", default=None,
                   help="prompt family (viper_compact; proptest for the property-test strategies)")
    p.add_argument("--backend", default="shapes-cv", help="tool backend (shapes-cv); hf runs transformers "
                   "models in a tool host")
    p.add_argument("--backend-arg", dest="backend_args", action="append", metavar="KEY=VALUE",
                   help="a backend setting, e.g. detector=/models/owlv2 for hf (repeatable)")
    p.add_argument("--max-new-tokens", dest="max_new_tokens", type=number(int, at_least=1), default=128)
    p.add_argument("--temperature", type=number(float, at_least=0),
                   default=1.0, help="sampling temperature of the programs "
                   "(1.0); 0 is greedy, as training's held-out evaluation decodes")
    p.add_argument("--counterfactuals", type=number(int, at_least=0),
                   default=4, help="counterfactual scenes per question (4)")
    p.add_argument("--metric", default=None,
                   help="answer metric (default: the data's metric column, else gqa_accuracy)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", default=None, help="folder to cache unit-test and property-test suites in")
    p.add_argument("--out", default=None, help="also write the metrics and per-question choices here (JSON), each "
                   "with its accuracy and logical accuracy")
    return p


def load_rows(data: str, split: str, questions: int | None, columns: dict | None = None,
              image_root: str | None = None, metric: str | None = None) -> list[dict]:
    """The questions of one split, read as training reads `data.name=files` (a one-split
    source is divided as training divides it, with data.seed=0 and validation_size=64)."""
    from envs.data.files import CLI_HINTS, load_splits
    from envs.data.hf import DataError

    if not Path(data).expanduser().exists():
        raise UsageError(f"--data {data!r} does not exist; point it at a dataset folder or file, "
                         f"or write the synthetic set with `vprl data shapes --out {data}`")
    try:
        ds = load_splits(data, (split,), columns=columns, image_root=image_root, metric=metric,
                         hints=CLI_HINTS).rows[split]
    except (DataError, ValueError) as e:
        raise UsageError(f"--data {data}: {str(e).strip().splitlines()[0]}") from None
    if questions is not None:
        ds = ds.select(range(min(questions, len(ds))))
    return [ds[i] for i in range(len(ds))]


class ProgramSampler:
    """Samples programs and corrections with the policy model (plus adapter); what a
    strategy that needs "policy" gets as `inputs.policy`."""

    def __init__(self, model: str, adapter: str | None, prompt_family: str, max_new_tokens: int, seed: int,
                 temperature: float = 1.0):
        from envs.prompts import get_family
        from policies.generation import GenerationConfig, HFGenerator
        from policies.model import load_model

        net, self.tokenizer = load_model(model)
        if adapter:
            from policies.adapters import attach

            net = attach(net, adapter)  # a LoRA from another base fails in one line
        net.eval()
        self.prompt_family = get_family(prompt_family)
        # A script ends at a blank line, a Python body at its first unindented line.
        config = GenerationConfig(max_new_tokens=max_new_tokens, batch_size=128, temperature=temperature)
        self.generator = HFGenerator(net, self.tokenizer, config, seed=seed, stop=self.prompt_family.stop)

    def sample(self, prompts: list[str], n: int, desc: str = "programs") -> list[list[str]]:
        """n programs per prompt (each prompt ends inside `execute_command`, as the family's do)."""
        from policies.programs import program_from

        out: list[list[str]] = [[] for _ in prompts]
        for s in self.generator.generate(prompts, n=n, progress=True, desc=desc):
            out[s.prompt_index].append(program_from(prompts[s.prompt_index], s.text))
        return out

    def programs(self, questions: list[str], n: int) -> list[list[str]]:
        return self.sample([self.prompt_family.render(self.tokenizer, q) for q in questions], n, "programs")

    def reprompter(self, rows: list[dict], n: int):
        from envs.prompts import render_refinement

        def reprompt(idx, programs, feedbacks):
            prompts = [render_refinement(self.prompt_family, self.tokenizer, rows[i]["question"], p, f)
                       for i, p, f in zip(idx, programs, feedbacks)]
            return self.sample(prompts, n, "re-prompt")

        return reprompt


def _finite(x: float) -> float | None:
    return None if x != x else x  # JSON has no NaN: a question without counterfactual scenes has none


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.old_test_source:
            print("vprl eval: --generator is deprecated; use --test-source", file=sys.stderr)
        args.test_source = args.test_source or args.old_test_source or "llm"
        from rewards.metrics import METRICS

        if args.metric is not None and args.metric not in METRICS:
            raise UsageError(f"--metric {args.metric!r} is unknown; known: {', '.join(sorted(METRICS))}")
        from policies.adapters import AdapterError, base_for
        from policies.model import ModelError, resolve

        try:  # the base the adapter records (or its run's config.yaml); another --model is refused
            args.model = base_for(args.adapter, args.model) if args.adapter else \
                args.model or DEFAULT_MODEL
            resolve(args.model)
        except (AdapterError, ModelError) as e:
            raise UsageError(str(e)) from None
        from envs.prompts import FAMILIES
        from envs.prompts.proptest import TestConditionedFamily

        writes = get_strategy(args.strategy).writes_programs
        args.prompt = args.prompt or ("proptest" if writes else "viper_compact")
        if args.prompt not in FAMILIES:
            raise UsageError(f"--prompt {args.prompt!r} is unknown; known: {', '.join(sorted(FAMILIES))}")
        if args.strategy in PROPERTY_TEST_STRATEGIES and not isinstance(FAMILIES[args.prompt], TestConditionedFamily):
            raise UsageError(f"--strategy {args.strategy} writes programs conditioned on tests: use a "
                             f"test-conditioned prompt family (--prompt proptest), not {args.prompt!r}")
        from envs.data.files_cli import parse_columns

        rows = load_rows(args.data, args.split, args.questions, parse_columns(args.columns),
                         args.image_root, args.metric)
        if not rows:
            raise UsageError(f"--data {args.data} split {args.split!r} is empty")
        if args.test_source == "scene" and not rows[0].get("spec"):
            raise UsageError("--test-source scene needs shapes data (a 'spec' column); use --test-source llm")
    except UsageError as e:
        print(f"vprl eval: error: {e}", file=sys.stderr)
        return 2

    from envs.cliargs import key_values
    from envs.execution import Executor
    from envs.tools import BackendError, open_backend
    from rewards.unit_tests.suite import SuiteBuilder, SuiteConfig
    from train.evaluate import evaluate_choices

    random.seed(args.seed)
    try:  # a backend whose models cannot be loaded fails now, naming the setting
        tools = open_backend(args.backend, key_values(args.backend_args, "--backend-arg"),
                             setting="--backend-arg {key}=...")
    except (BackendError, UsageError) as e:
        print(f"vprl eval: error: {e}", file=sys.stderr)
        return 2
    executor = Executor(backend=tools.spec)
    try:
        sampler = ProgramSampler(args.model, args.adapter, args.prompt, args.max_new_tokens, args.seed,
                                 args.temperature)
    except AdapterError as e:  # a LoRA made for another base model
        executor.close()
        tools.close()
        print(f"vprl eval: error: {e}", file=sys.stderr)
        return 2
    # A strategy that writes its own programs (PropTest's, with the tests in the prompt) gets none.
    programs = [[] for _ in rows] if writes else sampler.programs([r["question"] for r in rows], args.programs)
    suites = None
    if "suites" in get_strategy(args.strategy).needs:
        builder = SuiteBuilder(SuiteConfig(test_source=args.test_source, k=args.unit_tests, candidates=args.candidates,
                                           strategy=args.sampling, seed=args.seed), cache_dir=args.cache)
        suites = builder.build([{"question": r["question"], "spec": r.get("spec")} for r in rows], progress=True)
    choices = choose(args.strategy, rows, programs, executor, suites,
                     Scoring(theta=args.theta, tie_break=args.tie_break),
                     reprompt=sampler.reprompter(rows, args.programs), iterations=args.iterations,
                     prompt_family=args.prompt, seed=args.seed, policy=sampler,
                     **({"ablation": args.ablation, "judge": args.judge, "detectors": args.detectors,
                         "min_models": args.min_models} if args.strategy == "vlagent" else {}),
                     **({"tests": args.tests, "cache": args.cache} if args.strategy in PROPERTY_TEST_STRATEGIES else {}))
    # A strategy that answers through another executor (VLAgent's ensemble tool host and
    # caption verifier) hands it back, so counterfactual answers take the same path.
    answering = getattr(choices, "executor", None) or executor
    result = {"strategy": args.strategy, "prompt": args.prompt, "programs": 1 if writes else args.programs,
              "unit_tests": args.unit_tests if suites is not None else 0,
              **({"property_tests": args.tests} if args.strategy in PROPERTY_TEST_STRATEGIES else {}),
              **evaluate_choices(choices, rows, answering, args.metric or "gqa_accuracy", args.counterfactuals,
                                 args.seed, per_question=bool(args.out))}
    per_question = result.pop("per_question", None)
    if getattr(choices, "settings", None) is not None:
        result["vlagent"] = {k: v for k, v in choices.settings.stats.items() if not k.startswith("_")}
    if hasattr(choices, "close"):
        choices.close()
    if args.strategy in PROPERTY_TEST_STRATEGIES and "mean_unit_test_score" in result:
        result["mean_property_test_score"] = result.pop("mean_unit_test_score")  # the share of tests passed
    executor.close()
    tools.close()
    print(json.dumps(result, indent=2))
    if args.out:
        detail = [{"id": rows[c.row].get("id"), "family": rows[c.row].get("family"),
                   "question": rows[c.row]["question"], "answer": rows[c.row]["answer"], "program": c.program,
                   "output": c.result.answer, "status": c.result.status, "score": c.score, "refused": c.refused,
                   "rounds": c.rounds, "failure": c.failure, "accuracy": per_question["accuracy"][c.row],
                   "logical_accuracy": _finite(per_question["logical_accuracy"][c.row])} for c in choices]
        tmp = Path(args.out).with_suffix(".tmp")
        tmp.write_text(json.dumps({"metrics": result, "choices": detail}, indent=2))
        tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
