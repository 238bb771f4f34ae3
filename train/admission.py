"""What a solved example must show, besides the right answer, to become a few-shot.

Seed 002 admits a program to the pool when its answer matches the training label. On
shapes that admits many programs that are right for the wrong reasons (a constant
"yes", a count where a colour was asked), and shots teach their reasons: a pool built
that way lowered validation accuracy. The stricter modes also ask for the reasons:

- `correctness`: the task metric reaches the pool's threshold (seed 002);
- `unit_tests`: and the program passes its question's visual unit tests (ViUniT:
  S(p) >= theta, i.e. the viunit reward is 1);
- `counterfactual`: and it answers the question's counterfactual scenes right (shapes:
  the scenes where the question stays well defined but its answer may change).

Each check takes the candidate programs (those already past the task metric) and
returns one bool per candidate.
"""

from __future__ import annotations

from rewards.unit_tests.suite import source_of

ADMISSIONS = ("correctness", "unit_tests", "counterfactual")
COUNTERFACTUAL_OPTIONS = ("m", "min_accuracy")


def label_columns(admission: str, options: dict) -> tuple[str, ...]:
    """The label columns an admission mode reads (the task metric's, and the oracle's)."""
    cols = ("answer", "answers")
    if admission == "counterfactual" or (admission == "unit_tests" and source_of(options) == "scene"):
        cols += ("spec",)
    return cols


def check_options(admission: str, options: dict) -> None:
    """Refuse options a mode does not take, at start-up."""
    if admission not in ADMISSIONS:
        raise ValueError(f"unknown admission {admission!r}; choose one of {', '.join(ADMISSIONS)}")
    if admission == "correctness" and options:
        raise ValueError("admission: correctness takes no admission_options")
    if admission == "counterfactual":
        unknown = sorted(set(options) - set(COUNTERFACTUAL_OPTIONS))
        if unknown:
            raise ValueError(f"admission: counterfactual options are {', '.join(COUNTERFACTUAL_OPTIONS)}; "
                             f"got {', '.join(unknown)}")
    if admission == "unit_tests":
        from rewards.registry import get

        get("viunit").check_kwargs(dict(options))


def unit_tests_pass(programs: list[str], rows: list[dict], options: dict, run_dir=None, reward=None,
                    executor=None) -> list[bool]:
    """True where the program passes its question's unit tests (viunit reward of 1).

    options: the viunit reward's kwargs (test_source, k, theta, ...); suites are cached per
    question in `run_dir/unit_tests/` and shared with a viunit reward of the same settings.
    reward: a `viunit` instance to reuse (its suite builders stay loaded between calls).
    """
    from rewards.registry import get

    if not programs:
        return []
    reward = reward or get("viunit")
    scores = reward([""] * len(programs), programs, question=[r["question"] for r in rows],
                    spec=[r.get("spec") for r in rows], run_dir=run_dir, executor=executor, **options)
    return [s is not None and s >= 1.0 for s in scores]


def counterfactual_pass(rollouts, rows: list[dict], executor, options: dict, seed: int = 0) -> list[bool]:
    """True where the rollout's program is right on at least `min_accuracy` (default: all)
    of `m` (default 4) counterfactual scenes of its question. Needs shapes rows (`spec`, `scene`)."""
    from train.evaluate import logical_metrics

    if not rollouts:
        return []
    if any(not rows[ro.row].get("spec") or not rows[ro.row].get("scene") for ro in rollouts):
        raise ValueError("admission: counterfactual needs rows with 'spec' and 'scene' columns (the shapes "
                         "dataset); use admission: unit_tests or correctness for other data")
    m, need = int(options.get("m", 4)), float(options.get("min_accuracy", 1.0))
    reports = logical_metrics(rollouts, rows, executor, m, seed)
    passed = [False] * len(rollouts)
    for rep in reports:
        passed[rep["index"]] = rep["logical_accuracy"] >= need
    return passed
