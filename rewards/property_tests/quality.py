"""How good the generated tests are (PropTest Tables 4 and 6, Figure 6).

The ground-truth answer stands in for the program: a test that rejects it is toxic.
Tests that raise a runtime error on the ground truth are left out of the pass-rate
denominators and counted apart. With programs' answers as well, the confusion matrix
of "the tests pass" against "the answer is right" shows how far a failed property
marks a wrong answer. This reads labels by design: it measures the tests, it is not a
reward.
"""

from __future__ import annotations

from collections import Counter

from rewards.property_tests.harness import check_answers


def _ratio(a: int, b: int) -> float:
    return a / b if b else float("nan")


def test_quality(executor, suites: list, rows: list[dict], program_results: list | None = None,
                 metric: str = "gqa_accuracy") -> dict:
    """Suite- and test-level figures with each row's `answer` in place of the program;
    with `program_results` (row i's program's ExecutionResult), the confusion matrix."""
    images = [r["image"] for r in rows]
    gt = check_answers(executor, suites, [str(r["answer"]) for r in rows], images)
    tests = Counter(t for c in gt for t in c.tests)
    usable = [c for c in gt if c.status == "ok" and any(t != "error" for t in c.tests)]
    passing = sum(all(t != "fail" for t in c.tests) for c in usable)
    dropped = Counter(d["reason"].split(":")[0] for s in suites for d in s.dropped)
    out = {
        "questions": len(rows),
        "test_invalid": sum(c.status == "test_invalid" for c in gt),
        "questions_with_tests": sum(c.status == "ok" and bool(c.tests) for c in gt),
        "tests_per_question": _ratio(sum(len(s) for s in suites), len(suites)),
        "tests_dropped": sum(dropped.values()),
        "dropped_by_reason": dict(dropped),
        "tests_pass": tests["pass"], "tests_fail": tests["fail"], "tests_error": tests["error"],
        # Table 4: "accuracy" = questions whose ground truth passes the whole suite.
        "suite_pass_rate": _ratio(passing, len(usable)),
        "suite_toxic_rate": _ratio(len(usable) - passing, len(usable)),
        "test_pass_rate": _ratio(tests["pass"], tests["pass"] + tests["fail"]),
        "test_toxic_rate": _ratio(tests["fail"], tests["pass"] + tests["fail"]),
        "test_error_rate": _ratio(tests["error"], sum(tests.values())),
    }
    if program_results is not None:
        out.update(confusion(executor, suites, rows, program_results, gt, metric))
    return out


def confusion(executor, suites, rows, program_results, gt_checks, metric: str = "gqa_accuracy") -> dict:
    """Figure 6 on the programs' answers (questions with usable tests and an answer):
    positive = the tests pass. `toxic_strict` is CodeT's toxic test (the paper's): the
    suite passes the program's wrong answer yet rejects the ground truth."""
    from rewards.labels import result_score
    from rewards.property_tests.harness import check_results

    images = [r["image"] for r in rows]
    checks = check_results(executor, suites, program_results, images)
    cells = Counter()
    strict = 0
    for row, res, chk, g in zip(rows, program_results, checks, gt_checks):
        if chk.status != "ok" or not chk.tests:
            continue
        right = result_score(res, row, metric) == 1.0
        passes = not chk.failed
        cells[("tp" if right else "fp") if passes else ("fn" if right else "tn")] += 1
        strict += passes and not right and g.failed
    n = sum(cells.values())
    return {"confusion": {k: cells[k] for k in ("tp", "fp", "tn", "fn")}, "checked_answers": n,
            # How far a failed property marks a wrong answer, and how many wrong answers it catches.
            "wrong_given_fail": _ratio(cells["tn"], cells["tn"] + cells["fn"]),
            "wrong_caught": _ratio(cells["tn"], cells["tn"] + cells["fp"]),
            "toxic_strict": _ratio(strict, n)}
