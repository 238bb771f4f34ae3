"""VLAgent Table 5 miniature on shapes, and the SS-parser figures.

For each seed (a fresh validation set of shapes questions) and each planner family
(visprog scripts, viper_compact Python programs), the embedded policy writes one
program per question (greedy), then every ablation stage answers with the same
programs: naive -> + parser -> + caption verifier -> + ensemble verifier.  Accuracy and
logical accuracy (counterfactual scenes) per stage, with a t-interval over seeds; a
constant "yes" answer for scale.  The parser figures (visprog): share of scripts
breaking each rule, share repaired, accuracy of the flagged scripts before and after
repair, and the SS-parser's time per script.

    nice -n 5 python bench/vlagent_table5.py --seeds 0 1 2 --questions 32 --out bench/vlagent_table5.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def interval(values):
    """Mean and half-width of a 95% t-interval over seeds."""
    from scipy import stats

    m = statistics.fmean(values)
    if len(values) < 2:
        return m, float("nan")
    return m, stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5


def parser_figures(rows, scripts, executor) -> dict:
    from envs.visprog.compile import script_of
    from rewards.labels import result_score
    from rewards.vlagent.repair import repair_script

    start = time.perf_counter()
    fixes = [repair_script(script_of(p), r["question"]) for p, r in zip(scripts, rows)]
    per_script = (time.perf_counter() - start) / max(1, len(rows))
    flagged = [i for i, f in enumerate(fixes) if f.before]
    repaired = [i for i in flagged if fixes[i].changed]
    from envs.visprog.compile import script_program

    before = executor.run([scripts[i] for i in repaired], [rows[i]["image"] for i in repaired])
    after = executor.run([script_program(fixes[i].text) for i in repaired], [rows[i]["image"] for i in repaired])
    acc = lambda rs: [result_score(r, {"answer": rows[i]["answer"]}, "gqa_accuracy")  # noqa: E731
                      for r, i in zip(rs, repaired)]
    rules: dict = {}
    for f in fixes:
        for rule in {v.rule for v in f.before}:
            rules[rule] = rules.get(rule, 0) + 1
    n = len(rows)
    return {"scripts": n, "flagged": len(flagged) / n, "repaired": len(repaired) / n,
            "valid_after_repair": sum(not f.after for f in fixes) / n,
            "rules": {k: v / n for k, v in sorted(rules.items())},
            "repaired_accuracy_before": statistics.fmean(acc(before)) if repaired else None,
            "repaired_accuracy_after": statistics.fmean(acc(after)) if repaired else None,
            "ms_per_script": 1000 * per_script}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--questions", type=int, default=32)
    ap.add_argument("--counterfactuals", type=int, default=2)
    ap.add_argument("--families", nargs="+", default=["visprog", "viper_compact"])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    from envs.data.shapes import build_dataset
    from envs.execution import Executor
    from envs.prompts import get_family
    from policies.text_lm import TextLM
    from policies.generation import GenerationConfig, HFGenerator
    from policies.model import load_model
    from policies.programs import program_from
    from train.strategies import vlagent
    from train.evaluate import evaluate_choices as metrics

    net, tok = load_model("embedded:smollm2-135m-instruct")
    judge = TextLM("embedded:smollm2-135m-instruct", short_tokens=8)
    judge.model, judge.tokenizer = net, tok
    tok.padding_side = "left"
    table: dict = {}
    figures = []
    with Executor(workers=2) as ex:
        for seed in args.seeds:
            dd = build_dataset(train=0, validation=args.questions, test=0, seed=1000 + seed, progress=False)
            rows = [dd["validation"][i] for i in range(len(dd["validation"]))]
            const = statistics.fmean(r["answer"] == "yes" for r in rows)
            table.setdefault("constant 'yes'", {}).setdefault("accuracy", []).append(const)
            for name in args.families:
                family = get_family(name)
                gen = HFGenerator(net, tok, GenerationConfig(temperature=0.0, max_new_tokens=160, batch_size=64),
                                  seed=seed, stop=family.stop)
                prompts = [family.render(tok, r["question"]) for r in rows]
                t0 = time.perf_counter()
                programs = [[program_from(prompts[s.prompt_index], s.text)] for s in gen.generate(prompts)]
                print(f"seed {seed} {name}: generated in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
                if name == "visprog":
                    figures.append(parser_figures(rows, [p[0] for p in programs], ex))
                for stage in vlagent.STAGES:
                    settings = vlagent.VLAgentSettings(stage=stage, seed=seed)
                    t0 = time.perf_counter()
                    try:
                        choices, runner = vlagent.answer(rows, programs, ex, settings, judge=judge)
                        m = metrics(choices, rows, runner, "gqa_accuracy", args.counterfactuals, seed)
                    finally:
                        vlagent.close(settings)
                    cell = table.setdefault(f"{name} {stage}", {})
                    for k in ("accuracy", "logical_accuracy"):
                        cell.setdefault(k, []).append(m.get(k))
                    cell.setdefault("seconds", []).append(time.perf_counter() - t0)
                    if "detectors" in settings.stats:
                        cell.setdefault("detectors", []).append(settings.stats["detectors"])
                    if "switched" in settings.stats:
                        cell.setdefault("switched", []).append(settings.stats["switched"] / len(rows))
                    print(f"  {stage}: {m.get('accuracy'):.3f} / {m.get('logical_accuracy')}", file=sys.stderr)
    summary = {row: {k: (interval(v) if k in ("accuracy", "logical_accuracy", "switched")
                         and None not in v else v) for k, v in cells.items()} for row, cells in table.items()}
    report = {"settings": vars(args), "table": summary, "raw": table, "parser": figures}
    print(json.dumps(report, indent=1, default=str))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
