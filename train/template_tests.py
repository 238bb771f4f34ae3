"""Template tests: each sampled program also scored on other training questions of its template.

Under a binary reward a yes/no question is answered right by chance half the time: a
program that asks `exists` of one phrase of "Are there more red circles than blue
squares?" earns the same 1 as the count comparison, and Eq. 8 reinforces both alike
(bench/README, "Why not 85%"). ViUniT scores a program on several tests rather than one;
here the tests are the training questions that ask the same thing of other objects
(`policies.compose.template`). A program is lifted to its phrase form (the question and its
phrases made slots, `train.search`), that form is run on up to `objective.template_tests`
other training questions of its template, and the program's reward becomes the mean of its
own reward and theirs. A guess then scores near a half, the comparison near 1, and a
group-relative objective pushes the guess down even where it was right.

The tests are scored by the run's own reward, so no label enters that the reward does not
already read (a label-free reward stays label-free), and the held-out questions are never
touched. A template with fewer than `PROBE_MIN` other training questions, a program of a
script family, or a program whose reward is None keeps its own reward. `accuracy` (the label
score the logs report) stays the program's own.
"""

from __future__ import annotations

from dataclasses import replace

from train.search import PROBE_MIN, WHEN, column, instance, lift_phrases, questions_by_template, score_programs


def template_scored(rollouts: list, rows: list[dict], probe_rows, size: int, families: dict, executor,
                    reward_set, metric: str | None) -> tuple[list, dict]:
    """`rollouts` with each sampled program's reward replaced by its mean over its own question
    and up to `size` other training questions of its template (`probe_rows`), and stats.
    Searched programs keep theirs: search already proved or compared them on their template.
    One sandbox batch: each distinct form runs once per test question."""
    if not size or not rollouts:
        return rollouts, {}
    questions = column(probe_rows, "question")
    by_template = questions_by_template(questions)
    plan = {}  # rollout index -> (form, the test questions' indices)
    for k, ro in enumerate(rollouts):
        family = families.get(ro.prompt_family)
        if ro.searched or ro.reward is None or family is None or family.stop is not None:
            continue
        question = rows[ro.row]["question"]
        form = lift_phrases(ro.program, question, require_phrase=False)
        tests = [i for i in by_template.get(form.split("\n", 1)[0][len(WHEN):], ()) if questions[i] != question]
        if len(tests) >= PROBE_MIN:
            plan[k] = (form, tuple(tests[:size]))
    pairs = sorted({(form, i) for form, tests in plan.values() for i in tests}, key=lambda p: (p[1], p[0]))
    programs = [instance(form, questions[i]) for form, i in pairs]
    scored = score_programs([probe_rows[i] for _, i in pairs], programs, executor, reward_set, metric)
    score = {pair: (sc.reward or 0.0) for pair, sc in zip(pairs, scored)}
    out, moved = list(rollouts), []
    for k, (form, tests) in plan.items():
        mean = (rollouts[k].reward + sum(score[(form, i)] for i in tests)) / (1 + len(tests))
        moved.append(rollouts[k].reward - mean)
        out[k] = replace(rollouts[k], reward=mean)
    return out, {"template_tests/programs": len(plan), "template_tests/forms": len({f for f, _ in plan.values()}),
                 "template_tests/runs": len(pairs),
                 "template_tests/reward_drop": sum(moved) / len(moved) if moved else 0.0}
