"""What a policy writes: the forms of its sampled programs, and whether the right ones are in reach.

RL can only reinforce programs the policy samples. This samples k programs per training
question (at the training temperature) from the starting policy or an adapter, runs them
in the sandbox, and prints:

- pass@1 and pass@k, and how many questions are informative (their programs disagree,
  so a group-relative advantage is nonzero);
- the programs grouped by form (the tool calls they make, with or without a loop or a
  branch), with each form's share and accuracy, most common first;
- per question family: accuracy, the commonest form, and the share of programs that
  call `simple_query`;
- beside them, the one-line program `return ImagePatch(image).simple_query(question)`
  run on the same questions, and the share of sampled programs that are that one line.

    python bench/program_support.py --config configs/shapes_rloo_cpu.yaml --questions 64 --programs 4
    python bench/program_support.py --config configs/shapes_rloo_cpu.yaml --adapter runs/shapes-rloo-cpu/best

It reads labels (to score), as any evaluation does; nothing here trains.
"""

from __future__ import annotations

import argparse
import ast
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ONE_LINE = "def execute_command(image):\n    return ImagePatch(image).simple_query({question!r})\n"


def form(program: str) -> str:
    """The tool calls a program makes (sorted, deduplicated) and whether it loops or branches."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "does not parse"
    calls, shape = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name and name not in ("ImagePatch", "str"):
                calls.add(name)
        elif isinstance(node, (ast.For, ast.While, ast.comprehension)):
            shape.add("loop")
        elif isinstance(node, (ast.If, ast.IfExp)):
            shape.add("if")
    return "+".join(sorted(calls)) + (f" [{','.join(sorted(shape))}]" if shape else "") or "no call"


def is_one_line(program: str, question: str) -> bool:
    """`simple_query` asked the whole question and returned, with nothing else computed."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    names = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "") for n in calls}
    if names - {"ImagePatch", "simple_query", "str"}:
        return False
    return any(getattr(c.func, "attr", "") == "simple_query" and c.args and isinstance(c.args[0], ast.Constant)
               and str(c.args[0].value).strip().lower() == question.strip().lower() for c in calls)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="the run's config (data, prompt, tools, temperature)")
    ap.add_argument("--adapter", default=None, help="a LoRA adapter folder (default: the starting policy)")
    ap.add_argument("--questions", type=int, default=64, help="training questions, drawn with --seed (64)")
    ap.add_argument("--programs", type=int, default=4, help="programs per question, k (4)")
    ap.add_argument("--temperature", type=float, default=None, help="default: the config's generation.temperature")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=12, help="forms listed (12)")
    args = ap.parse_args(argv)

    from envs.execution import Executor
    from envs.prompts import get_family
    from envs.tools import open_backend
    from policies.programs import program_from
    from train.config import load_config
    from train.eval_cli import ProgramSampler
    from train.evaluate import result_score
    from train.setup import load_data

    cfg = load_config(args.config, [])
    train_rows, _ = load_data(cfg, progress=False)
    rows = [train_rows[i] for i in random.Random(args.seed).sample(range(len(train_rows)),
                                                                  min(args.questions, len(train_rows)))]
    family = get_family(cfg.env.prompt)
    sampler = ProgramSampler(cfg.model, args.adapter, cfg.env.prompt, cfg.generation.max_new_tokens, args.seed)
    sampler.generator.config.top_p = cfg.generation.top_p  # sample as training does
    prompts = [family.render(sampler.tokenizer, r["question"]) for r in rows]
    temperature = cfg.generation.temperature if args.temperature is None else args.temperature
    samples = sampler.generator.generate(prompts, n=args.programs, temperature=temperature, progress=True)
    programs = [(s.prompt_index, program_from(prompts[s.prompt_index], s.text)) for s in samples]

    tools = open_backend(cfg.env.backend, cfg.env.backend_kwargs)
    with Executor(timeout_s=cfg.env.timeout_s, memory_mb=cfg.env.memory_mb, workers=cfg.env.workers,
                  backend=tools.spec) as ex:
        results = ex.run([p for _, p in programs], [rows[i]["image"] for i, _ in programs])
        one = ex.run([ONE_LINE.format(question=r["question"]) for r in rows], [r["image"] for r in rows])
    tools.close()
    scores = [result_score(res, rows[i], cfg.data.metric) or 0.0 for (i, _), res in zip(programs, results)]
    one_scores = [result_score(res, r, cfg.data.metric) or 0.0 for res, r in zip(one, rows)]

    by_q, by_form, by_family = defaultdict(list), defaultdict(list), defaultdict(list)
    for (i, prog), s in zip(programs, scores):
        shape = form(prog)
        by_q[i].append(s)
        by_form[shape].append(s)
        by_family[rows[i].get("family") or "-"].append((shape, s, "simple_query" in prog))
    n_q = len(by_q)
    solved = sum(max(v) > 0 for v in by_q.values())
    informative = sum(max(v) > min(v) for v in by_q.values())
    ones = sum(is_one_line(p, rows[i]["question"]) for i, p in programs)
    who = f"adapter {args.adapter}" if args.adapter else "starting policy"
    print(f"\n{who}, {cfg.env.prompt} prompt, T {temperature}, {n_q} training questions x {args.programs} programs")
    print(f"pass@1 {100 * sum(scores) / len(scores):.1f}%   pass@{args.programs} {100 * solved / n_q:.1f}%   "
          f"informative questions {informative}/{n_q}   "
          f"one-line program: {100 * sum(one_scores) / len(one_scores):.1f}% on these questions, "
          f"written {ones} time(s) in {len(programs)} samples")
    print(f"\n| form (tool calls [control flow]) | programs | share | accuracy |\n|---|---|---|---|")
    for f, v in sorted(by_form.items(), key=lambda kv: -len(kv[1]))[: args.top]:
        print(f"| {f} | {len(v)} | {100 * len(v) / len(scores):.0f}% | {100 * sum(v) / len(v):.0f}% |")
    print(f"\n| question family | programs | accuracy | one-line program | commonest form | calls simple_query |"
          f"\n|---|---|---|---|---|---|")
    one_by_family = defaultdict(list)
    for r, s in zip(rows, one_scores):
        one_by_family[r.get("family") or "-"].append(s)
    for fam, v in sorted(by_family.items()):
        common = Counter(f for f, _, _ in v).most_common(1)[0][0]
        print(f"| {fam} | {len(v)} | {100 * sum(s for _, s, _ in v) / len(v):.0f}% | "
              f"{100 * sum(one_by_family[fam]) / len(one_by_family[fam]):.0f}% | {common} | "
              f"{100 * sum(q for _, _, q in v) / len(v):.0f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
