"""Self-refinement on execution errors (seed 002, section 3 and Appendix B.3).

A program that fails to compile or raises is shown to the policy again with its error,
through the family's refinement prompt (`envs.prompts.render_refinement`), and the new
program is executed, up to `max_refinements` times. Wrong answers are not refined: the
gold label is never revealed, and the paper fixes only "obvious coding mistakes"
(missing modules, arithmetic on strings). The paper finds it pays most at step 0, so
`refine_stats` reports per call how many programs were tried and fixed.

Generation and execution are injected callables, so the loop runs on the trainer's
batched generator and the process-wide sandbox as well as on stubs in unit tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from envs.prompts import error_text, render_refinement
from policies.programs import program_from

REFINE_ON = ("compile_error", "runtime_error")


@dataclass
class Refined:
    """Where one question's refinement ended."""

    program: str
    result: object                      # the final ExecutionResult (anything with .status)
    rounds: int                         # refinement prompts sent (0: the first program stood)
    initial_status: str
    history: list[tuple[str, str]] = field(default_factory=list)  # (program, status) per round

    @property
    def fixed(self) -> bool:
        return self.rounds > 0 and getattr(self.result, "status", None) == "ok"


def refine_batch(generate_fn: Callable[[list[str]], list[str]],
                 execute_fn: Callable[[list[str], list[int]], list],
                 family, tokenizer, questions: Sequence[str], programs: Sequence[str],
                 results: Sequence, max_refinements: int, shots=None,
                 shots_per_question: Sequence[list] | None = None,
                 refine_on: Sequence[str] = REFINE_ON,
                 to_program: Callable[[str, str], str] | None = None) -> list[Refined]:
    """Refine many programs together: each round is one generate call and one execute call.

    generate_fn(prompts) -> completions, one per prompt (the text continuing each prompt).
    execute_fn(programs, indices) -> results; indices[i] is the question programs[i]
        answers, so the caller can pick that question's image.
    shots / shots_per_question: the shots of the first prompts (one list for all, or one
        list per question); the refinement prompt keeps them so only the query block
        changes.
    to_program(prompt, completion) -> program; defaults to `policies.programs.program_from`.
    """
    if max_refinements < 0:
        raise ValueError(f"max_refinements must be at least 0, got {max_refinements}")
    if not len(questions) == len(programs) == len(results):
        raise ValueError("questions, programs and results must have the same length")
    if shots_per_question is not None and len(shots_per_question) != len(questions):
        raise ValueError("shots_per_question needs one list of shots per question")
    to_program = to_program or program_from
    out = [Refined(p, r, 0, getattr(r, "status", "unknown")) for p, r in zip(programs, results)]
    for _ in range(max_refinements):
        todo = [i for i, item in enumerate(out) if getattr(item.result, "status", None) in refine_on]
        if not todo:
            break  # every program succeeded (or failed in a way refinement does not address)
        prompts = [render_refinement(family, tokenizer, questions[i], out[i].program,
                                     error_text(out[i].result),
                                     shots if shots_per_question is None else shots_per_question[i])
                   for i in todo]
        completions = list(generate_fn(prompts))
        if len(completions) != len(prompts):
            raise ValueError(f"generate_fn returned {len(completions)} completions "
                             f"for {len(prompts)} prompts")
        new_programs = [to_program(p, c) for p, c in zip(prompts, completions)]
        new_results = list(execute_fn(new_programs, todo))
        if len(new_results) != len(new_programs):
            raise ValueError(f"execute_fn returned {len(new_results)} results "
                             f"for {len(new_programs)} programs")
        for i, program, result in zip(todo, new_programs, new_results):
            item = out[i]
            item.program, item.result, item.rounds = program, result, item.rounds + 1
            item.history.append((program, getattr(result, "status", "unknown")))
    return out


def refine(generate_fn: Callable[[str], str], execute_fn: Callable[[str], object], family,
           tokenizer, question: str, program: str, result, max_refinements: int, shots=None,
           refine_on: Sequence[str] = REFINE_ON,
           to_program: Callable[[str, str], str] | None = None) -> Refined:
    """Refine one program: regenerate on compile/runtime errors until it runs or the limit.

    generate_fn(prompt) -> completion; execute_fn(program) -> result with `.status`/`.error`.
    Returns the final program and result and the number of rounds used.
    """
    return refine_batch(lambda prompts: [generate_fn(p) for p in prompts],
                        lambda programs, _indices: [execute_fn(p) for p in programs],
                        family, tokenizer, [question], [program], [result], max_refinements,
                        shots=shots, refine_on=refine_on, to_program=to_program)[0]


def refine_stats(items: Sequence[Refined], prefix: str = "refine/") -> dict:
    """How much refinement did in one step: tried, fixed, fix rate, mean rounds, final CPR."""
    tried = [item for item in items if item.rounds > 0]
    fixed = sum(item.fixed for item in tried)
    stats = {
        f"{prefix}tried": len(tried),
        f"{prefix}fixed": fixed,
        f"{prefix}rounds_mean": sum(item.rounds for item in tried) / len(tried) if tried else 0.0,
        f"{prefix}code_pass_before": (sum(item.initial_status == "ok" for item in items) / len(items)
                                      if items else None),
        f"{prefix}code_pass_after": (sum(getattr(item.result, "status", None) == "ok" for item in items)
                                     / len(items) if items else None),
    }
    if tried:
        stats[f"{prefix}fix_rate"] = fixed / len(tried)
    return stats
