"""train/search.py, composed forms (`search.compose`): programs written from the question's
phrases, proven on training questions of their template (the probe), taught on the batch,
on the probe (`teach_probe`) and rehearsed in later iterations (`rehearse`); spatial
relations from the patches' documented attributes, and a third call on the patch a relation
selects."""

from envs.data.render import render
from envs.data.scene import Obj, Scene
from policies.compose import marker
from rewards.combine import RewardSet
from tests.helpers.comparisons import comparison_rows
from tests.helpers.search_runs import FAMILY, PREFIX, named_prompts, rollout, run, two_ranks
from train.config import RewardSpec, SearchConfig
from train.search import PROBE_MIN, WHEN, instance, lift, lift_phrases, search


COMPARE = ('\n    return bool_to_yesno(len(image_patch.find("{a}")) > len(image_patch.find("{b}")))\n')


def test_a_phrase_form_applies_to_the_questions_of_its_template_only():
    program = PREFIX + COMPARE.format(a="red circles", b="blue squares")
    form = lift_phrases(program, "Are there more red circles than blue squares?")
    assert form.startswith(WHEN) and "red circles" not in form
    assert instance(form, "Are there more green squares than red circles?") == PREFIX + COMPARE.format(
        a="green squares", b="red circles")
    assert instance(form, "Are there fewer green squares than red circles?") is None
    assert instance(form, "How many red circles are there?") is None
    assert lift_phrases(PREFIX + '\n    return "yes"\n', "Is there a circle?") is None  # reads no phrase
    whole = lift(PREFIX + '\n    return image_patch.simple_query("Is there a circle?")\n', "Is there a circle?")
    assert instance(whole, "How many?") == PREFIX + '\n    return image_patch.simple_query("How many?")\n'


def test_composed_search_proves_the_comparison_on_training_questions_and_teaches_it(executor):
    """No edit of the sampled one-tool programs compares two counts; `search.compose` writes
    the comparison from the question's phrases, proves its phrase form on training questions
    of the same template (a yes/no guess such as `exists(A)` fails there), teaches it, and
    remembers it."""
    rows = comparison_rows(4, seed=1)
    assert {r["answer"] for r in rows} == {"yes", "no"}
    probe = comparison_rows(3 * PROBE_MIN, seed=2)
    # The sampled programs are wrong: `exists` of a colour where the answer is no, "yes" where it is yes.
    sampled = [rollout(i, PREFIX + f'\n    return bool_to_yesno(image_patch.exists("{r["question"].split()[3]}"))\n',
                       0.0) for i, r in enumerate(rows) if r["answer"] == "no"]
    sampled += [rollout(i, PREFIX + '\n    return "no"\n', 0.0) for i, r in enumerate(rows) if r["answer"] == "yes"]
    assert not any(" > " in ro.program or " < " in ro.program for ro in run(rows, sampled, executor)[0])
    library = {}
    found, stats = run(rows, sampled, executor, library=library, library_size=4, compose=2, probe_rows=probe)
    assert stats["search/proven"] == 1 and stats["search/composed_forms"] > 1
    assert stats["search/taught_composed"] == len(rows)
    (form,) = [f for f in library["viper_compact"] if f.startswith(WHEN)]
    assert " > " in form or " < " in form
    assert {ro.row for ro in found} == set(range(len(rows)))
    for ro in found:
        assert ro.searched and ro.reward == 1.0 and ro.program == instance(form, rows[ro.row]["question"])
    few = run(rows, sampled, executor, compose=2, probe_rows=probe[: PROBE_MIN - 1])[1]
    assert few["search/proven"] == 0  # too few questions of the template to prove anything
    # Labels no program of the tools can match (every answer flipped): nothing reaches 9 in 10.
    flipped = [{**r, "answer": {"yes": "no", "no": "yes"}[r["answer"]]} for r in probe]
    assert run(rows, sampled, executor, compose=2, probe_rows=flipped)[1]["search/proven"] == 0
    # One answer on the whole probe: a program that always says "no" would be right; none is proven.
    alike = [r for r in comparison_rows(8 * PROBE_MIN, seed=3) if r["answer"] == "no"]
    assert len(alike) >= PROBE_MIN
    assert run(rows, sampled, executor, compose=2, probe_rows=alike)[1]["search/proven"] == 0
    # Two ranks decide as one process does.
    out = two_ranks(rows, sampled, compose=2, library=4, probe_rows=probe)
    assert out[0][1] == out[1][1] == stats
    assert {ro.program for r in (0, 1) for ro in out[r][0]} == {ro.program for ro in found}


def test_a_phrase_within_another_or_reading_like_a_slot_is_written_as_it_is():
    """Slots are made and filled in one pass: a phrase within a longer phrase is its own slot,
    and a question's text that looks like a slot is not filled again."""
    question = "Is red the color of the red circle?"
    program = PREFIX + ('\n    return bool_to_yesno(image_patch.exists("red circle") and '
                        'image_patch.verify_property("red circle", "red"))\n')
    form = lift_phrases(program, question)
    assert form is not None and "red" not in form.split("\n", 1)[1]
    assert instance(form, "Is blue the color of the blue square?") == program.replace(
        "red circle", "blue square").replace('"red"', '"blue"')
    odd = "Are there more x__vprl_phrase_1__y than z?"
    compare = lift_phrases(PREFIX + COMPARE.format(a="red circles", b="blue squares"),
                           "Are there more red circles than blue squares?")
    assert instance(compare, odd) is None  # underscores split its phrases: another template
    assert instance(compare, "Are there more vprl phrase circles than z?") == PREFIX + COMPARE.format(
        a="vprl phrase circles", b="z")
    whole = lift(PREFIX + '\n    return image_patch.simple_query("Is there a circle?")\n', "Is there a circle?")
    assert instance(whole, "What is __vprl_question__?") == \
        PREFIX + '\n    return image_patch.simple_query("What is __vprl_question__?")\n'


def test_teach_probe_teaches_a_proven_form_on_probe_questions_it_got_right_split_across_ranks(executor):
    """`search.teach_probe`: the proven comparison is also taught on the training questions of
    its template that proved it (those it got right, not this iteration's), each a new row of
    the batch with its own prompt; two ranks split that list; off, nothing is added."""
    rows = comparison_rows(4, seed=1)
    probe = [rows[0]] + comparison_rows(3 * PROBE_MIN, seed=2)  # a batch question among the probe: not taught twice
    sampled = [rollout(i, PREFIX + '\n    return "maybe"\n', 0.0) for i in range(len(rows))]
    families = {"viper_compact": FAMILY}

    def teach(shard, teach_probe=5):
        batch = list(rows)
        found, stats = search(SearchConfig(enabled=True, compose=2, teach_probe=teach_probe), batch, sampled,
                              families, executor, RewardSet([RewardSpec("correctness")]), "gqa_accuracy", seed=0,
                              probe_rows=probe, render=named_prompts, shard=shard)
        return batch, [ro for ro in found if ro.row >= len(rows)], stats

    batch, taught, stats = teach((0, 1))
    assert stats["search/proven"] == 1 and stats["search/taught_probe"] == len(taught) == 5
    assert len(batch) == len(rows) + 5 and rows[0] not in batch[len(rows):]
    (form,) = {lift_phrases(ro.program, batch[ro.row]["question"]) for ro in taught}
    for ro in taught:
        question = batch[ro.row]["question"]
        assert ro.searched and ro.reward == 1.0 and ro.program == instance(form, question)
        assert (ro.prompt, ro.prompt_ids) == (f"viper_compact: {question}", [len(question)])
        assert ro.completion == ro.program[len(PREFIX):]
    halves = [teach((r, 2)) for r in (0, 1)]
    assert sorted(ro.program for _, t, _ in halves for ro in t) == sorted(ro.program for ro in taught)
    assert [len(t) for _, t, _ in halves] == [3, 2]
    batch, taught, stats = teach((0, 1), teach_probe=0)
    assert batch == rows and not taught and "search/taught_probe" not in stats


def test_rehearse_teaches_each_remembered_proven_form_on_fresh_questions_of_its_template_every_iteration(executor):
    """`search.rehearse`: in a later iteration where nothing is searched, the remembered proven
    form is taught on that many training questions of its template where it is right (not the
    iteration's own; others on another iteration's seed); two ranks split that list; a form
    proven again and taught on its probe is not rehearsed too; off, nothing is added."""
    reward_set, families = RewardSet([RewardSpec("correctness")]), {"viper_compact": FAMILY}
    first = comparison_rows(4, seed=1)
    library = {}
    wrong = [rollout(i, PREFIX + '\n    return "maybe"\n', 0.0) for i in range(len(first))]
    search(SearchConfig(enabled=True, compose=2, library=4), first, wrong, families, executor, reward_set,
           "gqa_accuracy", seed=0, library=library, probe_rows=comparison_rows(3 * PROBE_MIN, seed=2))
    (form,) = [f for f in library["viper_compact"] if f.startswith(WHEN)]
    later = comparison_rows(4, seed=5)
    probe = [later[0]] + comparison_rows(3 * PROBE_MIN, seed=2)  # a batch question among them: not taught

    def rehearse(sampled, n=5, seed=1, shard=(0, 1), rows=probe, **cfg):
        batch = list(later)
        found, stats = search(SearchConfig(enabled=True, compose=2, library=4, rehearse=n, **cfg), batch, sampled,
                              families, executor, reward_set, "gqa_accuracy", seed=seed,
                              library={k: list(v) for k, v in library.items()}, probe_rows=rows, render=named_prompts,
                              shard=shard)
        return batch, [ro for ro in found if ro.row >= len(later)], stats

    solved = [rollout(i, PREFIX + f'\n    return "{r["answer"]}"\n', 1.0) for i, r in enumerate(later)]
    batch, taught, stats = rehearse(solved)
    assert stats["search/questions"] == 0 and stats["search/rehearsed"] == len(taught) == 5
    assert later[0] not in batch[len(later):]
    for ro in taught:
        question = batch[ro.row]["question"]
        assert ro.searched and ro.reward == 1.0 and ro.program == instance(form, question)
        assert (ro.prompt, ro.prompt_ids) == (f"viper_compact: {question}", [len(question)])
    again = {batch[ro.row]["id"] for ro in taught}
    assert {b["id"] for b in rehearse(solved, seed=2)[0][len(later):]} != again  # drawn afresh
    halves = [rehearse(solved, shard=(r, 2)) for r in (0, 1)]
    assert sorted(ro.program for _, t, _ in halves for ro in t) == sorted(ro.program for ro in taught)
    # Labels the form gets wrong everywhere: it is run, and taught nowhere.
    flipped = [{**r, "answer": {"yes": "no", "no": "yes"}[r["answer"]]} for r in probe]
    assert rehearse(solved, rows=flipped)[2]["search/rehearsed"] == 0
    # Proven again this iteration and taught on its probe: rehearsed no more.
    wrong = [rollout(i, PREFIX + '\n    return "maybe"\n', 0.0) for i in range(len(later))]
    stats = rehearse(wrong, teach_probe=3)[2]
    assert stats["search/proven"] == 1 and stats["search/taught_probe"] == 3 and stats["search/rehearsed"] == 0
    assert rehearse(solved, n=0)[1] == []


def left_rows(n: int, seed: int = 0) -> list[dict]:
    """`n` two-object scenes asking "Is the A to the left of the B?", labelled from the layout."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        (ca, sa), (cb, sb) = rng.sample([(c, s) for c in ("red", "blue", "green") for s in ("circle", "square")], 2)
        xa, xb = rng.sample((50, 128, 206), 2)
        ya, yb = rng.sample((60, 128, 196), 2)
        image = render(Scene([Obj(sa, ca, "small", xa, ya), Obj(sb, cb, "small", xb, yb)]))
        out.append({"id": f"left{i}", "image": image, "answer": "yes" if xa < xb else "no",
                    "question": f"Is the {ca} {sa} to the left of the {cb} {sb}?"})
    return out


def test_composed_search_proves_a_spatial_relation_from_the_patches_documented_attributes(executor):
    """"Is the A to the left of the B?" needs the found patches' coordinates, which the API
    documents as attributes in a comment: compose compares them, the probe proves the form
    on training questions of the template, and it is taught on the batch."""
    rows, probe = left_rows(4, seed=1), left_rows(3 * PROBE_MIN, seed=2)
    assert {r["answer"] for r in probe} == {"yes", "no"}
    sampled = [rollout(i, PREFIX + '\n    return image_patch.simple_query("What color is this?")\n', 0.0)
               for i in range(len(rows))]
    library = {}
    assert run(rows, sampled, executor, compose=2, probe_rows=probe)[1]["search/proven"] == 0  # not without
    found, stats = run(rows, sampled, executor, library=library, library_size=4, compose=2, attributes=True,
                       probe_rows=probe)
    assert stats["search/proven"] == 1
    (form,) = [f for f in library["viper_compact"] if f.startswith(WHEN)]
    # The question's order of its phrases, the sign the relation needs.
    assert "[0]." in form and " < " in form and form.index(marker(0)) < form.index(marker(1), form.index("return"))
    assert {ro.row for ro in found} == set(range(len(rows))) and all(ro.reward == 1.0 for ro in found)
    # Every label flipped means "to the right of": the other order is proven instead.
    flip = lambda rs: [{**r, "answer": {"yes": "no", "no": "yes"}[r["answer"]]} for r in rs]  # noqa: E731
    other = {}
    run(flip(rows), sampled, executor, compose=2, attributes=True, probe_rows=flip(probe), library=other,
        library_size=4)
    (reverse,) = [f for f in other["viper_compact"] if f.startswith(WHEN)]
    assert "[0]." in reverse and " > " in reverse and reverse == form.replace(" < ", " > ")


def selection_rows(n: int, seed: int = 0) -> list[dict]:
    """`n` scenes asking "What color is the square to the right of the B?": two squares of
    different colours on either side of B, labelled with the right one's colour (`find`
    lists patches left to right, so its first is the wrong one)."""
    import random

    rng = random.Random(seed)
    colors = ("red", "blue", "green", "yellow")
    out = []
    for i in range(n):
        left, right, cb = rng.sample(colors, 3)
        ys = rng.sample((60, 128, 196), 3)
        image = render(Scene([Obj("square", left, "small", 50, ys[0]), Obj("circle", cb, "small", 128, ys[1]),
                              Obj("square", right, "small", 206, ys[2])][:: rng.choice((1, -1))]))
        out.append({"id": f"sel{i}", "image": image, "answer": right,
                    "question": f"What color is the square to the right of the {cb} circle?"})
    return out


def test_a_third_composed_call_proves_the_question_asked_of_the_patch_a_relation_selects(executor):
    """"What color is the square to the right of the B?" with a square on each side of B: the
    whole image's `simple_query` and the first square found pick the left one, so no one- or
    two-call program is right on 9 in 10. `search.compose=3` filters the squares by a documented attribute
    against B's patch and asks the first one kept; the probe proves that form and the batch
    is taught it."""
    rows, probe = selection_rows(4, seed=1), selection_rows(3 * PROBE_MIN, seed=2)
    sampled = [rollout(i, PREFIX + '\n    return image_patch.simple_query("What color is the square?")\n', 0.0)
               for i in range(len(rows))]
    assert run(rows, sampled, executor, compose=2, attributes=True, probe_rows=probe)[1]["search/proven"] == 0
    library = {}
    found, stats = run(rows, sampled, executor, library=library, library_size=4, compose=3, attributes=True,
                       probe_rows=probe)
    assert stats["search/proven"] == 1
    (form,) = [f for f in library["viper_compact"] if f.startswith(WHEN)]
    assert " for p in image_patch.find(" in form and "][0].simple_query(" in form
    assert {ro.row for ro in found} == set(range(len(rows))) and all(ro.reward == 1.0 for ro in found)
    for ro in found:
        assert ro.program == instance(form, rows[ro.row]["question"])


def exactly_one_rows(n: int, seed: int = 0) -> list[dict]:
    """`n` image-text questions "There is exactly one A." over scenes holding 0 to 2 of A
    and one other object, labelled from the count."""
    import random

    rng = random.Random(seed)
    cells = [(x, y) for x in (40, 128, 216) for y in (50, 128, 206)]
    out = []
    for i in range(n):
        (ca, sa), (cb, sb) = rng.sample([(c, s) for c in ("red", "blue", "green") for s in ("circle", "square")], 2)
        k = rng.choice((0, 1, 1, 2))
        places = rng.sample(cells, k + 1)
        image = render(Scene([Obj(sa, ca, "small", *places[j]) for j in range(k)] + [Obj(sb, cb, "small", *places[k])]))
        out.append({"id": f"one{i}", "image": image, "answer": "yes" if k == 1 else "no",
                    "question": f'Verify image matches text="There is exactly one {ca} {sa}."'})
    return out


def test_composed_search_proves_a_count_against_the_number_the_question_names(executor):
    """"There is exactly one A." is true of one A, not of two: `exists(A)` is wrong on the
    scenes with two, and only the count compared with the question's number is right on 9 in
    10 of the probe; it is proven and taught on the batch."""
    rows, probe = exactly_one_rows(4, seed=1), exactly_one_rows(3 * PROBE_MIN, seed=2)
    assert {r["answer"] for r in probe} == {"yes", "no"}
    sampled = [rollout(i, PREFIX + '\n    return "maybe"\n', 0.0) for i in range(len(rows))]
    library = {}
    found, stats = run(rows, sampled, executor, library=library, library_size=4, compose=2, probe_rows=probe)
    assert stats["search/proven"] == 1
    (form,) = [f for f in library["viper_compact"] if f.startswith(WHEN)]
    assert " one " in form.split("\n", 1)[0] and ") == 1)" in form
    assert {ro.row for ro in found} == set(range(len(rows))) and all(ro.reward == 1.0 for ro in found)
    two = [{**r, "question": r["question"].replace("exactly one", "exactly two")} for r in rows]
    assert all(instance(form, r["question"]) is None for r in two)  # another number: another template
