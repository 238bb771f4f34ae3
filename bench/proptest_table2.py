"""Miniatures of PropTest Tables 1, 2 and 4 on the shapes validation split with the
embedded model (the machine is shared: timings are not the point here).

Per seed, one program per question is sampled with the plain prompt
(`proptest_baseline`) and, per test generator, one with the test-conditioned prompt
(`proptest`, the same 8 examples plus each query's tests). Columns (Table 2):

- baseline, no fallback: the plain program's answer, errors count as wrong;
- conditioned program alone: its answer, errors count as wrong, tests not run (what
  conditioning on tests does to the code itself);
- PropTest, no fallback: the conditioned program, a failed test leaves it unanswered;
- tests not run: the conditioned program, fallback on compile/runtime errors only;
- PropTest: the conditioned program, fallback on any failure (tests included).

Context rows: the best constant answer (picked with the labels), the end-to-end
fallback alone (`simple_query` on the whole image) and the baseline with the fallback on
errors. Logical accuracy re-runs each setup -- tests, withheld answers and fallback
included -- on each question's counterfactual scenes (drawn once per question, the same
for every seed and setup). Figures are means with a 95% t-interval over seeds.
Table 1: the error breakdown (assertion / runtime / compile) before any fallback, for
the baseline and the conditioned programs. Test quality (Tables 4 and 6): the
ground-truth answer in place of the program (tests that err on it are left out of the
denominators and counted apart), the paper's toxic rate (a wrong answer passes the
suite that rejects the ground truth), and the confusion of "tests pass" with "answer
right" on the baseline programs' answers (the same answers for every test writer).

    python bench/proptest_table2.py [--questions 64] [--seeds 0 1 2] \
        [--generators template basic advanced] [--conditioned template advanced] \
        [--cache DIR] [--out FILE.json]

Tests are written greedily, so they do not depend on the seed: each generator writes
them once (cached in --cache); programs are cached there too, per seed and
number of questions.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.vlagent_table5 import interval  # noqa: E402
from envs.data.counterfactual import logical_accuracy  # noqa: E402
from envs.data.shapes import build_dataset  # noqa: E402
from envs.data.spec import coerce  # noqa: E402
from envs.execution import Executor  # noqa: E402
from envs.prompts import get_family  # noqa: E402
from policies.programs import fallback_program  # noqa: E402
from rewards.property_tests.harness import tests_executor  # noqa: E402
from rewards.property_tests.quality import test_quality  # noqa: E402
from rewards.property_tests.suite import PropertyConfig, PropertySuiteBuilder  # noqa: E402
from rewards.property_tests.types import failure_kind  # noqa: E402
from train.eval_cli import ProgramSampler  # noqa: E402
from rewards.labels import result_score  # noqa: E402
from train.evaluate import mean  # noqa: E402
from train.strategies.proptest import answer_with_tests  # noqa: E402

from policies import DEFAULT_MODEL as MODEL  # noqa: E402


def cached_programs(path: Path, make):
    if path.exists():
        return json.loads(path.read_text())
    programs = make()
    path.write_text(json.dumps(programs))
    return programs


def ci(values, scale: float = 100.0, digits: int = 1) -> str:
    """Mean ± half-width of the 95% t-interval over seeds."""
    values = [v for v in values if v == v]
    if not values:
        return "n/a"
    m, h = interval(values)
    return f"{scale * m:.{digits}f} ± {scale * h:.{digits}f}" if h == h else f"{scale * m:.{digits}f}"


def counterfactual_rows(rows: list[dict], m: int) -> list[list[dict]]:
    """Each question's counterfactual scenes (the same question on an edited scene), drawn
    once from the question's id: every seed and every setup is scored on the same ones."""
    from envs.data.counterfactual import counterfactual_items

    out = []
    for r in rows:
        spec, scene = coerce(r["spec"], r["scene"])
        items = counterfactual_items(spec, scene, m, random.Random(f"vprl-bench-proptest-cf:{r['id']}")) if m else []
        out.append([{"question": r["question"], "image": it["image"], "scene": it["scene"]} for it in items])
    return out


class Setups:
    """Runs one setup (programs alone, or a property-test strategy on them) on the questions
    and on their counterfactual scenes. Logical accuracy re-runs the whole setup on each
    counterfactual scene -- the tests, the withheld answers and the fallback included --
    because a PropTest answer is the procedure's, not the program's alone."""

    def __init__(self, rows, executor, counterfactuals: int):
        self.rows, self.executor = rows, executor
        self.cf = counterfactual_rows(rows, counterfactuals)
        self.cf_flat = [c for cs in self.cf for c in cs]
        self.owner = [i for i, cs in enumerate(self.cf) for _ in cs]

    def answers(self, rows, programs, strategy=None, suites=None, checker=None):
        """(results, failure kinds, fallback taken) per row."""
        if strategy is None:
            results = self.executor.run(programs, [r["image"] for r in rows])
            return results, [failure_kind(r) for r in results], [False] * len(rows)
        answers = answer_with_tests(strategy, rows, programs, self.executor, suites, checker)
        return [a.result for a in answers], [a.failure for a in answers], [a.fallback for a in answers]

    def measure(self, programs, strategy=None, suites=None, checker=None):
        results, failures, fallbacks = self.answers(self.rows, programs, strategy, suites, checker)
        n = len(self.rows)
        out = {"accuracy": mean([result_score(r, row, "gqa_accuracy") for r, row in zip(results, self.rows)]),
               "fallback_rate": sum(fallbacks) / n, "errors": breakdown(failures)}
        if self.cf_flat:
            cf_suites = [suites[i] for i in self.owner] if suites is not None else None
            cf_results, _, _ = self.answers(self.cf_flat, [programs[i] for i in self.owner], strategy, cf_suites,
                                            checker)
            per_question = [[] for _ in self.rows]
            for i, r in zip(self.owner, cf_results):
                per_question[i].append(r.answer if r.status == "ok" else None)
            scores = [logical_accuracy(a, coerce(row["spec"], row["scene"])[0], [c["scene"] for c in cs])
                      for a, row, cs in zip(per_question, self.rows, self.cf) if cs]
            out["logical_accuracy"] = mean(scores)
        return out, results


def breakdown(failures) -> dict:
    c = Counter(failures)
    return {"assertion": c["assertion"], "runtime": c["runtime"], "compile": c["compile"],
            "errors": c["assertion"] + c["runtime"] + c["compile"]}


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

    unknown = sorted(set(args.conditioned) - set(args.generators))
    if unknown:
        ap.error(f"--conditioned {' '.join(unknown)} must also be in --generators")
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    data = build_dataset(train=0, validation=args.questions, test=0, seed=0, progress=False)["validation"]
    rows = [data[i] for i in range(len(data))]
    questions = [r["question"] for r in rows]
    executor = Executor()
    setups = Setups(rows, executor, args.counterfactuals)

    suites, test_ex = {}, {}
    for g in args.generators:
        t0 = time.time()
        cfg = PropertyConfig(test_source=g)
        builder = PropertySuiteBuilder(cfg, cache_dir=cache / "tests" / g)
        suites[g] = builder.build(questions, progress=True)
        test_ex[g] = tests_executor(executor, cfg.uses_llm, cfg.llm_model)
        print(f"{g} tests: {builder.stats} in {time.time() - t0:.0f}s", flush=True)

    # The best constant answer, picked with the labels: the floor any method must beat.
    constant, _ = max(Counter(str(r["answer"]) for r in rows).items(), key=lambda kv: (kv[1], kv[0]))
    table: dict[str, list[dict]] = {}
    quality: dict[str, list[dict]] = {}
    n = len(rows)

    def record(name, programs, strategy=None, g=None):
        m, results = setups.measure(programs, strategy, suites.get(g), test_ex.get(g))
        table.setdefault(name, []).append(m)
        print(f"seed {seed}  {name:40s} acc {m['accuracy']:.3f}  logical {m.get('logical_accuracy', float('nan')):.3f}"
              f"  fallback {m['fallback_rate']:.3f}  errors {m['errors']}", flush=True)
        return results

    for seed in args.seeds:
        t0 = time.time()
        policy = ProgramSampler(MODEL, None, "proptest_baseline", 128, seed)
        plain = cached_programs(cache / f"programs_seed{seed}_baseline_{n}q.json",
                                lambda: [ps[0] for ps in policy.programs(questions, 1)])
        record(f'constant "{constant}" (best constant, picked with labels)',
               [f"def execute_command(image):\n    return {constant!r}\n"] * n)
        record("fallback alone (simple_query)", [fallback_program(q) for q in questions])
        base = record("baseline, no fallback", plain)
        record("baseline + fallback on errors", plain, "tests_not_run")
        family = get_family("proptest")
        for g in args.generators:
            # One set of answers for every writer: the baseline programs' (Figure 6's confusion).
            quality.setdefault(g, []).append(test_quality(test_ex[g], suites[g], rows, base))
            print(f"seed {seed}: {g} test quality {quality[g][-1]}", flush=True)
        for g in args.conditioned:
            prompts = [family.render(policy.tokenizer, q, tests=s.shown()) for q, s in zip(questions, suites[g])]
            conditioned = cached_programs(cache / f"programs_seed{seed}_{g}_{n}q.json",
                                          lambda: [ps[0] for ps in policy.sample(prompts, 1, f"programs ({g})")])
            # Code quality alone: what conditioning on tests does to the programs themselves.
            record(f"conditioned program alone ({g} tests)", conditioned)
            for strategy in ("proptest_no_fallback", "tests_not_run", "proptest"):
                record(f"{strategy} ({g} tests)", conditioned, strategy, g)
        print(f"seed {seed}: {time.time() - t0:.0f}s", flush=True)

    print(f"\n## Table 2 miniature ({n} questions, seeds {args.seeds}; mean ± 95% t-interval over seeds, in %)\n")
    print("| setup | accuracy | logical accuracy | fallback taken |\n|---|---|---|---|")
    for name, runs in table.items():
        print(f"| {name} | {ci([r['accuracy'] for r in runs])} | "
              f"{ci([r.get('logical_accuracy', float('nan')) for r in runs])} | {ci([r['fallback_rate'] for r in runs])} |")
    print("\nPaired differences against the baseline without fallback (same seed, points):")
    for key in ("accuracy", "logical_accuracy"):
        base_runs = table["baseline, no fallback"]
        for name, runs in table.items():
            if name.startswith(("conditioned", "proptest", "tests_not_run")):
                diffs = [r.get(key, float("nan")) - b.get(key, float("nan")) for r, b in zip(runs, base_runs)]
                print(f"  {key:17s} {name}: {ci(diffs)}")

    print("\n## Table 1 miniature: errors per seed, before any fallback answers (mean ± 95% t-interval)\n")
    print("| method | errors | assertion | runtime | compile |\n|---|---|---|---|---|")
    for name, runs in table.items():
        if name.startswith(("baseline, no", "tests_not_run", "proptest (")):
            cells = [ci([r["errors"][k] for r in runs], scale=1.0) for k in ("errors", "assertion", "runtime", "compile")]
            print(f"| {name} | " + " | ".join(cells) + " |")

    print("\n## Test quality, in % (the ground-truth answer in place of the program; the confusion on the "
          "baseline programs' answers, mean ± 95% t-interval over seeds)\n")
    print("| generator | questions with tests | tests/question | test_invalid | dropped | GT passes suite (Acc.) "
          "| tests rejecting GT | test errors on GT (left out) | toxic (paper: wrong answer passes, GT fails) "
          "| wrong given fail | wrong answers caught |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for g, runs in quality.items():
        q0 = runs[0]
        print(f"| {g} | {q0['questions_with_tests']}/{q0['questions']} | {q0['tests_per_question']:.2f} | "
              f"{q0['test_invalid']} | {q0['tests_dropped']} | {100 * q0['suite_pass_rate']:.1f} | "
              f"{100 * q0['test_toxic_rate']:.1f} | {100 * q0['test_error_rate']:.1f} | "
              f"{ci([r['toxic_strict'] for r in runs])} | "
              f"{ci([r['wrong_given_fail'] for r in runs])} | {ci([r['wrong_caught'] for r in runs])} |")
    for g, runs in quality.items():
        print(f"- {g}: dropped by reason {runs[0]['dropped_by_reason']}; confusion per seed "
              f"{[r.get('confusion') for r in runs]}")
    if args.out:
        Path(args.out).write_text(json.dumps({"table2": table, "quality": quality, "constant": constant}, indent=2))


if __name__ == "__main__":
    main()
