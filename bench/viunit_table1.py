"""A miniature of ViUniT Table 1 on the shapes validation split with the embedded model,
and the correctness of the LLM's unit tests measured against the scene oracle.

For each seed: sample N programs per question once; then answer with a single program
(the first), the majority over N, and ViUniT selection over N with K tests from the
`scene` generator and from the `llm` generator. All strategies see the same programs.

    python bench/viunit_table1.py [--questions 256] [--programs 5] [--tests 5] [--seeds 0 1 2]

The questions are the balanced held-out split the training configs evaluate on (the first
`--questions` of it; families and answers balanced, see `envs.data.heldout`). Every
accuracy is the mean over seeds and questions with a 95% bootstrap interval resampling
both (`train.curves.bootstrap_mean`), printed beside the best constant answer; each
selector's difference from the majority vote is paired per seed and question, so the
comparison is decided by its interval, not by one or two questions. The `scene` generator
computes its tests' answers from the question's `spec`: an oracle, named so in the table.

LLM-test correctness: each LLM candidate's caption is laid out by the rule parser (the
same layout the suite renders) and the question's spec answers it there; a test is
correct when the LLM's expected answer matches. The paper's raters found 75%.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.data.shapes import build_dataset  # noqa: E402
from envs.data.spec import answer_spec, well_defined  # noqa: E402
from envs.execution import shared_executor  # noqa: E402
from rewards.metrics import gqa_accuracy  # noqa: E402
from rewards.unit_tests.scoring import same_answer  # noqa: E402
from envs.data.layout import parse_caption  # noqa: E402
from policies import DEFAULT_MODEL  # noqa: E402
from rewards.unit_tests.suite import SuiteBuilder, SuiteConfig  # noqa: E402
from train.eval_cli import ProgramSampler  # noqa: E402
from train.curves import bootstrap_mean  # noqa: E402
from train.evaluate import evaluate_choices  # noqa: E402
from train.heldout import constant_baseline  # noqa: E402
from train.strategies import Scoring, choose  # noqa: E402


def suite_check(rows, suites) -> dict:
    """Of the tests that made it into the suites: is the expected answer right for the
    image actually rendered? (What the paper's raters judged, by the scene oracle.)"""
    from envs.data.scene import Scene

    out = {"suite_tests": 0, "answerable": 0, "correct": 0, "by_layout": {}}
    for row, suite in zip(rows, suites):
        spec = json.loads(row["spec"])
        for t in suite.tests:
            out["suite_tests"] += 1
            scene = Scene.from_json(t.scene)
            kind = out["by_layout"].setdefault(t.extra.get("layout", "scene"), [0, 0])
            if not well_defined(spec, scene):
                continue
            ok = same_answer(t.answer, answer_spec(spec, scene))
            out["answerable"] += 1
            out["correct"] += ok
            kind[0] += 1
            kind[1] += ok
    out["correct_of_answerable"] = out["correct"] / out["answerable"] if out["answerable"] else float("nan")
    return out


def oracle_check(rows, candidates) -> dict:
    """How many LLM tests parse into a layout, are answerable, and are right."""
    total = parsed = defined = right = 0
    for row, cands in zip(rows, candidates):
        spec = json.loads(row["spec"])
        for t in cands:
            total += 1
            scene = parse_caption(t.caption)
            if scene is None:
                continue
            parsed += 1
            if not well_defined(spec, scene):
                continue
            defined += 1
            right += same_answer(t.answer, answer_spec(spec, scene))
    return {"llm_tests": total, "parsed": parsed, "answerable": defined, "correct": right,
            "correct_of_answerable": right / defined if defined else float("nan"),
            "correct_of_all": right / total if total else float("nan")}


def report(args, rows, seeds, results, per_question, oracle) -> None:
    """The tables over the seeds done so far, and the JSON (written whole, so an
    interrupted run keeps every finished seed and never a half-written file)."""
    constant, constant_accuracy = constant_baseline(rows, "gqa_accuracy")
    names = ", ".join(map(str, seeds))
    print(f"\n{len(rows)} balanced held-out questions x {len(seeds)} seed(s) ({names}); mean [95% bootstrap "
          f"interval over seeds and questions], in %; best constant answer ({constant!r}): "
          f"{100 * constant_accuracy:.1f}%")
    print("\n| setup | accuracy | logical accuracy | accuracy - majority (paired) | logical - majority |"
          "\n|---|---|---|---|---|")
    majority = per_question.get(f"majority of {args.programs}")
    intervals = {}
    for name, table in per_question.items():
        cells, row = [], {}
        measured = [k for k in ("accuracy", "logical_accuracy") if not all(math.isnan(v) for q in table[k] for v in q)]
        for key in ("accuracy", "logical_accuracy"):
            if key not in measured:
                cells.append("-")
                continue
            row[key] = bootstrap_mean(table[key])
            cells.append("{:.1f} [{:.1f}, {:.1f}]".format(*(100 * v for v in row[key])))
        for key in ("accuracy", "logical_accuracy"):
            if majority is None or table is majority or key not in measured:
                cells.append("-")
                continue
            diff = [[a - b for a, b in zip(x, y)] for x, y in zip(table[key], majority[key])]
            row[f"{key}_minus_majority"] = bootstrap_mean(diff)
            cells.append("{:+.1f} [{:+.1f}, {:+.1f}]".format(*(100 * v for v in row[f"{key}_minus_majority"])))
        intervals[name] = row
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"| best constant answer | {100 * constant_accuracy:.1f} | | | |")

    def ms(values):
        if any(math.isnan(v) for v in values):  # a metric this setup does not have
            return float("nan"), float("nan")
        return (statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0)

    print("\n| setup | accuracy | error rate | logical accuracy | right for wrong reasons |\n|---|---|---|---|---|")
    for name, runs in results.items():
        cells = []
        for key in ("accuracy", "error_rate", "logical_accuracy", "right_for_wrong_reasons"):
            m, s = ms([r.get(key, float("nan")) for r in runs])
            cells.append(f"{100 * m:.1f} ± {100 * s:.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if oracle:
        c = ms([o["correct_of_answerable"] for o in oracle])
        p = ms([o["parsed"] / o["llm_tests"] for o in oracle])
        print(f"\nLLM unit tests correct (of those laid out and answerable): {100 * c[0]:.1f} ± {100 * c[1]:.1f}%  "
              f"(laid out by the rules: {100 * p[0]:.1f}%; paper's human raters: 75%)")
    if args.out:
        tmp = Path(f"{args.out}.tmp")
        tmp.write_text(json.dumps({"seeds": seeds, "results": results, "oracle": oracle, "intervals": intervals,
                                   "per_question": per_question, "constant_answer": constant,
                                   "constant_accuracy": constant_accuracy}, indent=2))
        tmp.replace(args.out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=256)
    ap.add_argument("--programs", type=int, default=5)
    ap.add_argument("--tests", type=int, default=5)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--no-llm", action="store_true", help="skip the LLM unit-test generator")
    ap.add_argument("--llm-seeds", type=int, nargs="+", default=None,
                    help="seeds that also run the (slow) LLM generator (default: all)")
    ap.add_argument("--counterfactuals", type=int, default=4)
    ap.add_argument("--out", default=None, help="write all numbers here as JSON")
    args = ap.parse_args()

    rows = build_dataset(train=0, validation=args.questions, test=0, seed=0, progress=False)["validation"]
    rows = [rows[i] for i in range(len(rows))]
    executor = shared_executor()
    results: dict[str, list[dict]] = {}
    per_question: dict[str, dict[str, list[list[float]]]] = {}  # setup -> metric -> seeds x questions
    scenes: dict = {}  # counterfactual scenes, drawn once per question and seed for every setup
    oracle, done = [], []
    for seed in args.seeds:
        t0 = time.time()
        policy = ProgramSampler(DEFAULT_MODEL, None, "viper_compact", 128, seed)
        programs = policy.programs([r["question"] for r in rows], args.programs)
        t_gen = time.time() - t0
        setups = [("single program", "base", None), (f"majority of {args.programs}", "majority", None)]
        with_llm = not args.no_llm and (args.llm_seeds is None or seed in args.llm_seeds)
        for gen in ("scene",) + (("llm",) if with_llm else ()):
            t1 = time.time()
            builder = SuiteBuilder(SuiteConfig(test_source=gen, k=args.tests, seed=seed))
            cands = builder.candidates(rows, progress=True)
            t2 = time.time()
            suites = builder.assemble_many([r["question"] for r in rows], cands)
            print(f"seed {seed}: {gen} candidates in {t2 - t1:.0f}s, images in {time.time() - t2:.0f}s, "
                  f"{builder.stats['no_layout']} captions without a layout", flush=True)
            if gen == "llm":
                oracle.append({**oracle_check(rows, cands), "suites": suite_check(rows, suites)})
                print(f"seed {seed}: llm tests vs scene oracle {oracle[-1]}", flush=True)
            print(f"seed {seed}: {gen} suites in {time.time() - t1:.0f}s, "
                  f"{sum(len(s) for s in suites) / len(suites):.2f} tests/question", flush=True)
            label = "scene tests: oracle, reads spec" if gen == "scene" else "LLM tests, label-free"
            setups.append((f"ViUniT {args.programs} x {args.tests} ({label})", "viunit", suites))
        for name, strategy, suites in setups:
            choices = choose(strategy, rows, programs, executor, suites, Scoring(), seed=seed)
            m = evaluate_choices(choices, rows, executor, "gqa_accuracy", args.counterfactuals, seed, cache=scenes,
                                 per_question=True)
            table = per_question.setdefault(name, {"accuracy": [], "logical_accuracy": []})
            for key, values in m.pop("per_question").items():
                table[key].append(values)
            results.setdefault(name, []).append(m)
            print(f"seed {seed}  {name:34s} acc {m['accuracy']:.3f}  err {m['error_rate']:.3f}  "
                  f"logical {m.get('logical_accuracy', float('nan')):.3f}  "
                  f"rfwr {m.get('right_for_wrong_reasons', float('nan')):.3f}", flush=True)
        # Context for the comparison: how often ANY of the N programs is right (an upper
        # bound for every selector), and how often the scene suite ranks a right program first.
        own = executor.run([p for ps in programs for p in ps], [r["image"] for r in rows for _ in range(args.programs)])
        right = [[gqa_accuracy(own[i * args.programs + j].answer, r["answer"]) == 1.0
                  if own[i * args.programs + j].status == "ok" else False for j in range(args.programs)]
                 for i, r in enumerate(rows)]
        bound = f"any of {args.programs} right (oracle bound)"
        results.setdefault(bound, []).append({"accuracy": sum(any(x) for x in right) / len(rows)})
        table = per_question.setdefault(bound, {"accuracy": [], "logical_accuracy": []})
        table["accuracy"].append([float(any(x)) for x in right])
        table["logical_accuracy"].append([float("nan")] * len(rows))
        print(f"seed {seed}: some program right on {sum(any(x) for x in right)}/{len(rows)} questions; "
              f"all {args.programs} right on {sum(all(x) for x in right)}", flush=True)
        print(f"seed {seed}: programs in {t_gen:.0f}s, total {time.time() - t0:.0f}s", flush=True)
        done.append(seed)
        report(args, rows, done, results, per_question, oracle)  # after every seed: a long run keeps what it has


if __name__ == "__main__":
    main()
