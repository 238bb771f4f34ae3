"""VLAgent as an answering strategy, with its ablations (Table 5).

Stages are cumulative, as in the paper's ablation rows:

- ``naive``: the planner's first script (or program) runs as written;
- ``parser``: the SS-parser checks every candidate and repairs it; the first candidate
  that is valid after repair is run (else the first repaired one);
- ``caption``: + the caption verifier (backend caption, LLM judge, VLAgent's rule);
- ``ensemble``: + the ensemble verifier: Algorithm 1 picks at least M detectors on the
  LOC lines of m sampled questions (label-free), and the programs run again with a tool
  host whose LOC/find answers with the fused boxes of the chosen detectors (and whose VQA
  votes); then the caption verifier as above.

Works for scripts (the visprog family) and Python programs alike.  ``vprl eval
--strategy vlagent --ablation STAGE`` runs it; the returned choices carry ``.executor``
(the ensemble tool host and/or the caption verifier) so that logical accuracy on
counterfactual scenes is measured on the same answering path as accuracy.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field, replace

STAGES = ("naive", "parser", "caption", "ensemble")
CPU_DETECTORS = ("shapes-cv", "shapes-cv/half", "shapes-cv/third", "shapes-cv/blur", "shapes-cv/jpeg")


@dataclass
class VLAgentSettings:
    stage: str = "ensemble"
    detectors: tuple = CPU_DETECTORS   # backend names (hf: {"backend": "hf", "detector": PATH})
    minimum: int = 2                   # M of Algorithm 1
    sample: int = 16                   # m questions whose LOC lines score the detectors
    seed: int = 0
    stats: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.stage not in STAGES:
            raise ValueError(f"unknown VLAgent stage {self.stage!r}; choose one of {', '.join(STAGES)}")


def repaired(program: str, question: str):
    """(program after the SS-parser's repair, violations before, violations after)."""
    from envs.visprog.compile import script_of, script_program
    from rewards.vlagent.pychecks import repair_program
    from rewards.vlagent.repair import repair_script

    script = script_of(program)
    if script is not None:
        fix = repair_script(script, question)
        return (script_program(fix.text) if fix.changed else program), fix.before, fix.after
    fix = repair_program(program, question)
    return fix.text, fix.before, fix.after


def parse_and_repair(rows, programs, stats: dict) -> list[str]:
    """The program each row runs after the SS-parser (and counts for the parser figures)."""
    chosen = []
    rules: Counter = Counter()
    for row, candidates in zip(rows, programs):
        fixes = [repaired(p, row["question"]) for p in candidates]
        for _, before, _ in fixes[:1]:
            for rule in {v.rule for v in before}:
                rules[rule] += 1
        first = fixes[0]
        stats["flagged"] = stats.get("flagged", 0) + bool(first[1])
        stats["repaired"] = stats.get("repaired", 0) + (bool(first[1]) and first[0] != candidates[0])
        stats["valid_after"] = stats.get("valid_after", 0) + (not first[2])
        valid = next((f[0] for f in fixes if not f[2]), first[0])
        chosen.append(valid)
    stats["rules"] = dict(rules)
    stats["scripts"] = len(rows)
    return chosen


def select_detectors(rows, programs: list[str], settings: VLAgentSettings) -> tuple[list, list]:
    """Algorithm 1 over the LOC lines of m sampled questions; (chosen names, rounds)."""
    from rewards.vlagent.reward import boxes_by_detector, located_phrases
    from rewards.vlagent.selection import select_models

    rng = random.Random(f"vprl-vlagent:{settings.seed}")
    idx = sorted(rng.sample(range(len(rows)), min(settings.sample, len(rows))))
    phrases = [located_phrases(programs[i]) for i in idx]
    if not any(phrases):
        return [settings.detectors[0]], []
    found = boxes_by_detector(list(settings.detectors), [rows[i]["image"] for i in idx], phrases)
    lines = {d: [b for per_row in found[d] for b in per_row] for d in settings.detectors}
    return select_models(lines, settings.minimum)


class VerifiedExecutor:
    """An executor whose answers pass the caption verifier (so logical accuracy on
    counterfactual images is measured on the verified answer, like accuracy)."""

    def __init__(self, executor, verifier, question_of: dict):
        self.executor, self.verifier, self.question_of = executor, verifier, question_of
        self.switched = 0

    def run(self, programs, images, **kwargs):
        from rewards.vlagent.caption import captions_for

        results = self.executor.run(programs, images, **kwargs)
        questions = [self.question_of.get(p) for p in programs]
        live = [i for i, q in enumerate(questions) if q is not None]
        captions = captions_for(self.executor, [images[i] for i in live])
        verdicts = self.verifier.verify([questions[i] for i in live], captions,
                                        [results[i].answer if results[i].ok else None for i in live])
        for i, v in zip(live, verdicts):
            if v.switched:
                self.switched += 1
                results[i] = replace(results[i], status="ok", answer=v.final, error=None)
        return results


def answer(rows, programs: list[list[str]], executor, settings: VLAgentSettings, judge=None,
           host_factory=None):
    """(choices, executor that reproduces the answers) for ``vprl eval``'s metrics.

    judge: a text LLM (``batch(questions, long_answers)``) for the caption stages.
    host_factory(backend) -> a started ToolHost for the ensemble stage (default: in-process).
    """
    from train.strategies.registry import Choice

    stats = settings.stats
    order = STAGES.index(settings.stage)
    chosen = [ps[0] for ps in programs] if order == 0 else parse_and_repair(rows, programs, stats)
    runner = executor
    if order >= STAGES.index("ensemble"):
        runner = _ensemble_executor(rows, chosen, executor, settings, host_factory)
    if order >= STAGES.index("caption"):
        from rewards.vlagent.caption import CaptionVerifier

        if judge is None:
            raise ValueError("the caption stages need a judge (a text LLM)")
        runner = VerifiedExecutor(runner, CaptionVerifier(judge),
                                  {p: r["question"] for p, r in zip(chosen, rows)})
    results = runner.run(chosen, [r["image"] for r in rows])
    if order >= STAGES.index("caption"):
        stats["switched"] = runner.switched
    return [Choice(i, p, r) for i, (p, r) in enumerate(zip(chosen, results))], runner


def _ensemble_executor(rows, chosen, executor, settings, host_factory):
    from envs.execution import Executor
    from envs.tools.ensemble import make_ensemble
    from envs.tools.host import ToolHost

    names, rounds = select_detectors(rows, chosen, settings)
    settings.stats["detectors"] = names
    settings.stats["selection_rounds"] = rounds
    backend = make_ensemble(members=names)
    host = host_factory(backend) if host_factory else ToolHost(backend, llm=None).start()
    ensemble_ex = Executor(timeout_s=executor.timeout_s, workers=executor.workers, backend=host.spec)
    settings.stats["_closers"] = [ensemble_ex.close, host.close]
    return ensemble_ex


def close(settings: VLAgentSettings) -> None:
    for fn in settings.stats.pop("_closers", []):
        fn()


class VLAgentChoices(list):
    """The choices, plus the executor that reproduces their answers and its closer."""

    executor = None
    settings = None

    def close(self) -> None:
        close(self.settings)


def vlagent(inputs) -> list:
    """The registry entry: options ablation (stage), judge ("policy" or a model name),
    detectors (comma-separated backend names), min_models (M)."""
    from policies.text_lm import TextLM

    opts = inputs.options
    detectors = opts.get("detectors") or CPU_DETECTORS
    settings = VLAgentSettings(stage=opts.get("ablation", "ensemble"),
                               detectors=tuple(detectors.split(",") if isinstance(detectors, str) else detectors),
                               minimum=int(opts.get("min_models", 2)), seed=inputs.seed)
    judge = None
    if STAGES.index(settings.stage) >= STAGES.index("caption"):
        name = opts.get("judge", "policy")
        if name == "policy":  # the policy judges, adapter included
            judge = TextLM("policy", short_tokens=8)
            judge.model, judge.tokenizer = inputs.policy.generator.model, inputs.policy.tokenizer
            judge.tokenizer.padding_side = "left"
        else:
            judge = TextLM(name, short_tokens=8)
    choices, runner = answer(inputs.rows, inputs.programs, inputs.executor, settings, judge=judge)
    out = VLAgentChoices(choices)
    out.executor, out.settings = runner, settings
    return out
