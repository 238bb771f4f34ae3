"""Answering strategies: one answer per question from the policy's programs.

`vprl eval --strategy NAME`, the benchmarks and any script choose through `choose`;
the held-out scoring of what they chose is `train.evaluate.evaluate_choices`.

Built in (ViUniT §3.4 and its baselines): `base` executes the first program;
`majority` takes the most common answer; `viunit` selects the program that passes
most unit tests; `refusal` also falls back to the end-to-end model below θ;
`reprompt` and `error_reprompt` ask the policy for corrected programs, with unit-test
or error feedback, for up to `iterations` rounds.

Adding a strategy (e.g. PropTest, VLAgent) is two steps:

1. write `fn(inputs: Inputs) -> list[Choice]` in a module of its own, say
   `train/strategies/proptest.py` (one Choice per row: the program chosen, its
   result on the row's image; `inputs.own` holds every candidate's result there);
2. register it here: `register_strategy("proptest", "train.strategies.proptest:choose",
   needs=("policy",), help="...")`. `vprl eval --strategy proptest` then offers it.

PropTest's `proptest`, `proptest_no_fallback` and `tests_not_run` write their own
test-conditioned programs (`writes_programs=True`) and check them with property tests.

`needs` names what the strategy cannot run without: "suites" (ViUniT unit-test suites,
built by `vprl eval`), "reprompt" (a sampler of corrected programs), "policy" (the
policy sampler itself, `inputs.policy`: `.sample(prompts, n)`, `.programs(questions, n)`,
`.prompt_family`, `.tokenizer`). Strategy-specific settings arrive in `inputs.options`.
"""

from train.strategies.registry import (Choice, Inputs, Scoring, Strategy, answer_strategies, choose,
                                       execute_own, get_strategy, register_strategy)

register_strategy("base", "train.strategies.basic:base", help="execute the first program")
register_strategy("majority", "train.strategies.basic:majority",
                  help="the most common answer among the programs that answered")
register_strategy("error_reprompt", "train.strategies.basic:error_reprompt", needs=("reprompt",),
                  help="re-prompt failing programs with the error they raised")
register_strategy("viunit", "train.strategies.unit_tests:viunit", needs=("suites",),
                  help="the program that passes most unit tests (ViUniT Eq. 6)")
register_strategy("refusal", "train.strategies.unit_tests:refusal", needs=("suites",),
                  help="viunit, falling back to the end-to-end model below θ")
register_strategy("reprompt", "train.strategies.unit_tests:reprompt", needs=("suites", "reprompt"),
                  help="re-prompt with unit-test feedback while the best program fails θ (Eq. 7)")
register_strategy("vlagent", "train.strategies.vlagent:vlagent", needs=("policy",),
                  help="VLAgent: SS-parser repair, caption and ensemble verifiers (--ablation)")
register_strategy("proptest", "train.strategies.proptest:proptest", writes_programs=True,
                  help="PropTest: a test-conditioned program, the end-to-end fallback on any failed test or error")
register_strategy("proptest_no_fallback", "train.strategies.proptest:proptest_no_fallback", writes_programs=True,
                  help="a test-conditioned program; a failed property test leaves the question unanswered")
register_strategy("tests_not_run", "train.strategies.proptest:tests_not_run", writes_programs=True,
                  help="a test-conditioned program, the fallback on errors only, tests not run")

__all__ = ["Choice", "Inputs", "Scoring", "Strategy", "answer_strategies", "choose", "execute_own",
           "get_strategy", "register_strategy"]
