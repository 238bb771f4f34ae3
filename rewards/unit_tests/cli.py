"""`vprl unit-tests`: build one question's visual unit-test suite and write it out.

    vprl unit-tests --question "Is there a red circle?" --k 5 --candidates 20 --out tests/

writes test_00.png ... and tests.jsonl (a header line, then one line per test with its
caption, expected answer and image file).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from envs.cliargs import OneLineParser, UsageError, number
from policies import DEFAULT_MODEL




def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="vprl unit-tests", description="Generate candidate visual unit tests for a question "
                "(an LLM, or the shapes scene oracle), pick K by coverage sampling, synthesise their "
                "images, and write them with the expected answers.")
    p.add_argument("--question", required=True, help="the question the tests are for")
    p.add_argument("--k", type=number(int, at_least=1), default=5, help="tests in the suite, K (5)")
    p.add_argument("--candidates", type=number(int, at_least=1),
                   default=20, help="candidate tests before sampling, M (20)")
    p.add_argument("--test-source", dest="test_source", default=None, choices=("llm", "scene"),
                   help="llm: the unit-test LLM; scene: verified shapes tests, needs --spec or --data (llm)")
    p.add_argument("--generator", dest="old_test_source", default=None, choices=("llm", "scene"),
                   help=argparse.SUPPRESS)  # the old name of --test-source
    p.add_argument("--spec", default=None, help="the question's shapes spec as JSON (scene test source)")
    p.add_argument("--data", default=None, help="a shapes DatasetDict to look the question's spec up in")
    p.add_argument("--sampling", default="answer_then_input",
                   choices=("random", "answer", "input", "answer_then_input"), help="coverage strategy")
    p.add_argument("--criterion", default="farthest_point", choices=("farthest_point", "paper"))
    p.add_argument("--synthesis", default="layout", choices=("layout", "diffusers"),
                   help="layout: shapes renderer; diffusers: a local text-to-image pipeline (layout)")
    p.add_argument("--diffusion-model", dest="diffusion_model", default="", help="local diffusers pipeline folder")
    p.add_argument("--no-layout-llm", dest="layout_llm", action="store_false",
                   help="drop captions the rule parser cannot lay out instead of asking the LLM")
    p.add_argument("--model", default=DEFAULT_MODEL, help="unit-test LLM")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, type=Path, help="output folder (must be new or empty)")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    return p


def _find_spec(data: str, question: str) -> str:
    import datasets

    try:
        dd = datasets.load_from_disk(data)
    except FileNotFoundError:
        raise UsageError(f"--data {data!r} is not a saved DatasetDict; write one with `vprl data shapes --out {data}`")
    for split in dd.values() if isinstance(dd, datasets.DatasetDict) else [dd]:
        if "spec" not in split.column_names:
            raise UsageError(f"--data {data} has no 'spec' column; it is not shapes data")
        for q, spec in zip(split["question"], split["spec"]):
            if q.strip().lower() == question.strip().lower():
                return spec
    raise UsageError(f"question {question!r} is not in --data {data}; pass its --spec instead")


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.old_test_source:
            print("vprl unit-tests: --generator is deprecated; use --test-source", file=sys.stderr)
            args.test_source = args.test_source or args.old_test_source
        args.test_source = args.test_source or "llm"
        spec = None
        if args.test_source == "scene":
            if args.spec:
                try:
                    spec = json.loads(args.spec)
                except json.JSONDecodeError as e:
                    raise UsageError(f"--spec is not valid JSON ({e})")
            elif args.data:
                spec = _find_spec(args.data, args.question)
            else:
                raise UsageError("--test-source scene needs the question's --spec or a --data folder holding it")
        if args.out.exists() and any(args.out.iterdir()) and not args.overwrite:
            raise UsageError(f"--out {args.out} is not empty; pass --overwrite to replace it")
        from rewards.unit_tests.suite import SuiteBuilder, SuiteConfig

        cfg = SuiteConfig(test_source=args.test_source, k=args.k, candidates=args.candidates, strategy=args.sampling,
                          criterion=args.criterion, synthesis=args.synthesis, diffusion_model=args.diffusion_model,
                          layout_llm=args.layout_llm, llm_model=args.model, seed=args.seed)
    except (UsageError, ValueError) as e:
        print(f"vprl unit-tests: error: {e}", file=sys.stderr)
        return 2

    from rewards.unit_tests.suite import save_suite

    builder = SuiteBuilder(cfg)
    suite = builder.build([{"question": args.question, "spec": spec}], progress=True)[0]
    staging = args.out.with_name(args.out.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    save_suite(suite, staging)
    if args.out.exists():
        shutil.rmtree(args.out)
    staging.rename(args.out)
    for t in suite.tests:
        print(f"{t.answer!r:>12}  {t.caption}")
    print(f"{len(suite)} tests from {suite.stats.get('candidates', 0)} candidates "
          f"({suite.stats.get('dropped', 0)} captions without a layout) -> {args.out}", file=sys.stderr)
    return 0 if len(suite) else 1


if __name__ == "__main__":
    sys.exit(main())
