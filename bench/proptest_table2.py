"""Miniatures of PropTest Tables 1, 2 and 4 on the shapes validation split with the
embedded model (the machine is shared: timings are not the point here).

Per seed, one program per question is sampled with the plain prompt
(`proptest_baseline`) and, per test generator, one with the test-conditioned prompt
(`proptest`, the same 8 examples plus each query's tests). Columns (Table 2):

- baseline, no fallback: the plain program's answer, errors count as wrong;
- PropTest, no fallback: the conditioned program, a failed test leaves it unanswered;
- tests not run: the conditioned program, fallback on compile/runtime errors only;
- PropTest: the conditioned program, fallback on any failure (tests included).

Context rows: the constant answer "yes", the end-to-end fallback alone (`simple_query`
on the whole image) and the baseline with the fallback on errors. Table 1: the error
breakdown (assertion / runtime / compile) before (baseline) and after (PropTest).
Test quality (Tables 4 and 6): the ground-truth answer in place of the program, and the
confusion of "tests pass" with "answer right" on the baseline programs' answers (the
same answers for every test writer).

    python bench/proptest_table2.py [--questions 64] [--seeds 0 1 2] \
        [--generators template basic advanced] [--conditioned template advanced] \
        [--cache DIR] [--out FILE.json]

Tests are written greedily, so they do not depend on the seed: each generator writes
them once (cached in --cache); programs are cached there too, per seed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.data.shapes import build_dataset  # noqa: E402
from envs.execution import Executor  # noqa: E402
from envs.prompts import get_family  # noqa: E402
from policies.programs import fallback_program  # noqa: E402
from rewards.property_tests.harness import tests_executor  # noqa: E402
from rewards.property_tests.quality import test_quality  # noqa: E402
from rewards.property_tests.suite import PropertyConfig, PropertySuiteBuilder  # noqa: E402
from rewards.property_tests.types import failure_kind  # noqa: E402
from train.eval_cli import ProgramSampler  # noqa: E402
from train.evaluate import evaluate_choices  # noqa: E402
from train.strategies import Choice  # noqa: E402
from train.strategies.proptest import answer_with_tests  # noqa: E402

from policies import DEFAULT_MODEL as MODEL  # noqa: E402


def cached_programs(path: Path, make):
    if path.exists():
        return json.loads(path.read_text())
    programs = make()
    path.write_text(json.dumps(programs))
    return programs


def choices_of(answers) -> list[Choice]:
    return [Choice(i, a.program, a.result, a.score, a.fallback) for i, a in enumerate(answers)]


def breakdown(failures) -> dict:
    c = Counter(failures)
    return {"assertion": c["assertion"], "runtime": c["runtime"], "compile": c["compile"],
            "errors": c["assertion"] + c["runtime"] + c["compile"]}


def ms(values) -> str:
    values = [v for v in values if v == v]
    if not values:
        return "n/a"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.mean(values):.1f} ± {100 * sd:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=64)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--generators", nargs="+", default=["template", "basic", "advanced"],
                    choices=["template", "basic", "advanced", "itm"], help="test writers whose quality is measured")
    ap.add_argument("--conditioned", nargs="+", default=["template", "advanced"],
                    help="test writers whose tests condition programs (the Table 2 columns)")
    ap.add_argument("--counterfactuals", type=int, default=4)
    ap.add_argument("--cache", default="runs/bench-proptest", help="tests and programs are cached here")
    ap.add_argument("--out", default=None, help="write all numbers here as JSON")
    args = ap.parse_args()

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    data = build_dataset(train=0, validation=args.questions, test=0, seed=0, progress=False)["validation"]
    rows = [data[i] for i in range(len(data))]
    questions = [r["question"] for r in rows]
    executor = Executor()

    suites, test_ex = {}, {}
    unknown = sorted(set(args.conditioned) - set(args.generators))
    if unknown:
        ap.error(f"--conditioned {' '.join(unknown)} must also be in --generators")
    for g in args.generators:
        t0 = time.time()
        cfg = PropertyConfig(generator=g)
        builder = PropertySuiteBuilder(cfg, cache_dir=cache / "tests" / g)
        suites[g] = builder.build(questions, progress=True)
        test_ex[g] = tests_executor(executor, cfg.uses_llm, cfg.llm_model)
        print(f"{g} tests: {builder.stats} in {time.time() - t0:.0f}s", flush=True)

    table: dict[str, list[dict]] = {}
    errors: dict[str, list[dict]] = {}
    quality: dict[str, list[dict]] = {}

    def record(name, choices, failures=None):
        m = evaluate_choices(choices, rows, executor, "gqa_accuracy", args.counterfactuals, seed)
        m["fallback_rate"] = sum(c.refused for c in choices) / len(choices)
        table.setdefault(name, []).append(m)
        if failures is not None:
            errors.setdefault(name, []).append(breakdown(failures))
        print(f"seed {seed}  {name:40s} acc {m['accuracy']:.3f}  logical {m.get('logical_accuracy', float('nan')):.3f}"
              f"  fallback {m['fallback_rate']:.3f}", flush=True)

    for seed in args.seeds:
        t0 = time.time()
        policy = ProgramSampler(MODEL, None, "proptest_baseline", 128, seed)
        plain = cached_programs(cache / f"programs_seed{seed}_baseline.json",
                                lambda: [ps[0] for ps in policy.programs(questions, 1)])
        const = ['def execute_command(image):\n    return "yes"\n'] * len(rows)
        fallback = [fallback_program(q) for q in questions]
        for name, progs in (('constant "yes"', const), ("fallback alone (simple_query)", fallback)):
            results = executor.run(progs, [r["image"] for r in rows])
            record(name, [Choice(i, p, r) for i, (p, r) in enumerate(zip(progs, results))])
        base = executor.run(plain, [r["image"] for r in rows])
        record("baseline, no fallback", [Choice(i, p, r) for i, (p, r) in enumerate(zip(plain, base))],
               [failure_kind(r, None) for r in base])
        record("baseline + fallback on errors", choices_of(answer_with_tests("tests_not_run", rows, plain, executor)))
        family = get_family("proptest")
        for g in args.generators:
            # One set of answers for every writer: the baseline programs' (Figure 6's confusion).
            quality.setdefault(g, []).append(test_quality(test_ex[g], suites[g], rows, base))
            print(f"seed {seed}: {g} test quality {quality[g][-1]}", flush=True)
        for g in args.conditioned:
            prompts = [family.render(policy.tokenizer, q, tests=s.shown()) for q, s in zip(questions, suites[g])]
            conditioned = cached_programs(cache / f"programs_seed{seed}_{g}.json",
                                          lambda: [ps[0] for ps in policy.sample(prompts, 1, f"programs ({g})")])
            for strategy in ("proptest_no_fallback", "tests_not_run", "proptest"):
                answers = answer_with_tests(strategy, rows, conditioned, executor, suites[g], test_ex[g])
                record(f"{strategy} ({g} tests)", choices_of(answers),
                       [a.failure for a in answers] if strategy == "proptest" else None)
        print(f"seed {seed}: {time.time() - t0:.0f}s", flush=True)

    print(f"\n## Table 2 miniature ({len(rows)} questions, seeds {args.seeds}; mean ± std over seeds)\n")
    print("| setup | accuracy | logical accuracy | fallback taken |\n|---|---|---|---|")
    for name, runs in table.items():
        print(f"| {name} | {ms([r['accuracy'] for r in runs])} | "
              f"{ms([r.get('logical_accuracy', float('nan')) for r in runs])} | {ms([r['fallback_rate'] for r in runs])} |")
    base_acc = [r["accuracy"] for r in table["baseline, no fallback"]]
    print("\nPaired differences against the baseline without fallback (same seed):")
    for name, runs in table.items():
        if name.startswith(("proptest", "tests_not_run")):
            print(f"  {name}: {ms([r['accuracy'] - b for r, b in zip(runs, base_acc)])} points")

    print("\n## Table 1 miniature: errors per seed (mean ± std)\n")
    print("| method | errors | assertion | runtime | compile |\n|---|---|---|---|---|")
    for name, runs in errors.items():
        cells = []
        for k in ("errors", "assertion", "runtime", "compile"):
            vals = [r[k] for r in runs]
            cells.append(f"{statistics.mean(vals):.1f} ± {statistics.stdev(vals) if len(vals) > 1 else 0:.1f}")
        if name.startswith("baseline"):
            cells[1] = "-"
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\n## Test quality (ground truth in place of the program; the baseline programs' answers for the confusion)\n")
    print("| generator | questions with tests | tests/question | test_invalid | dropped | suite pass (Acc.) "
          "| test toxic rate | test errors | wrong given fail | wrong answers caught |\n|---|---|---|---|---|---|---|---|---|---|")
    for g, runs in quality.items():
        q0 = runs[0]
        print(f"| {g} | {q0['questions_with_tests']}/{q0['questions']} | {q0['tests_per_question']:.2f} | "
              f"{q0['test_invalid']} | {q0['tests_dropped']} | {100 * q0['suite_pass_rate']:.1f}% | "
              f"{100 * q0['test_toxic_rate']:.1f}% | {100 * q0['test_error_rate']:.1f}% | "
              f"{ms([r['wrong_given_fail'] for r in runs])} | {ms([r['wrong_caught'] for r in runs])} |")
        print(f"|  (dropped by reason: {q0['dropped_by_reason']}) |||||||||| ")
    if args.out:
        Path(args.out).write_text(json.dumps({"table2": table, "table1": errors, "quality": quality}, indent=2))


if __name__ == "__main__":
    main()
