"""The programs' execution results as a reward reads them.

`execute_and_score` runs a batch's programs once and hands the results to the rewards
whose signature names `results`; a reward called another way (TRL's reward_funcs, a
user's own loop) gets none and runs the programs itself.
"""

from __future__ import annotations

from policies.programs import program_from


def executor_or_shared(executor=None):
    """`executor` (the caller's, from the reward context), else the process-wide one:
    TRL hands a reward no executor."""
    if executor is not None:
        return executor
    from envs.execution import shared_executor

    return shared_executor()


def program_results(prompts, completions, image, executor=None, results=None) -> list:
    """Each completion's program run on its image: `results` when the caller already ran
    them (one per completion), else a run on `executor_or_shared(executor)`."""
    if results is not None:
        if len(results) != len(completions):
            raise ValueError(f"results: {len(results)} for {len(completions)} completions; "
                             "hand one ExecutionResult per completion, or none")
        return list(results)
    programs = [program_from(p, c) for p, c in zip(prompts, completions)]
    return executor_or_shared(executor).run(programs, list(image))
