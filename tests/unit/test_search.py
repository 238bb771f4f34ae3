"""train/search.py, mutation search: it runs where sampling found nothing, keeps only general
forms (the question a slot) that beat the samples on enough of the searched questions (scored
by the run's own reward, in the real sandbox), one program per question, remembers them, and
the update teaches the prompt what search found. Composed forms: test_search_compose.py."""

from types import SimpleNamespace

import pytest

from envs.data.render import render
from envs.data.scene import Obj, Scene
from tests.helpers.search_runs import PREFIX, rollout, run, two_ranks
from train.config import Config
from train.sampling import training_examples
from train.search import instance, lift

COUNTING = PREFIX + '\n    return str(len(image_patch.find("circle")))\n'
RIGHT = PREFIX + '\n    return image_patch.simple_query("What color is the circle?")\n'
WRONG_YES = PREFIX + '\n    return "yes"\n'


@pytest.fixture
def rows():
    image = render(Scene([Obj("circle", "red", "large", 60, 128), Obj("square", "blue", "small", 180, 60)]))
    return [{"id": "a", "image": image, "question": "What color is the circle?", "answer": "red"},
            {"id": "b", "image": image, "question": "How many circles are there?", "answer": "1"},
            {"id": "c", "image": image, "question": "What shape is the blue object?", "answer": "square"},
            {"id": "d", "image": image, "question": "Is there a green triangle?", "answer": "no"}]



def test_search_finds_a_general_form_sampling_missed_and_teaches_one_instance_per_question(rows, executor):
    sampled = [rollout(0, COUNTING, 0.0), rollout(0, COUNTING, 0.0), rollout(1, COUNTING, 1.0),
               rollout(2, COUNTING, 0.0), rollout(3, WRONG_YES, 0.0)]
    found, stats = run(rows, sampled, executor)
    assert stats["search/questions"] == 3  # question 1 was solved by a sample: not searched
    assert stats["search/forms"] > stats["search/general_forms"] >= 1 and stats["search/tried"] > 0
    assert sorted(ro.row for ro in found) == [0, 2, 3]  # one program per improved question
    assert RIGHT in {ro.program for ro in found}
    for ro in found:
        assert ro.searched and not ro.refined and ro.reward == 1.0
        assert ro.program.startswith(PREFIX) and PREFIX + ro.completion == ro.program
        assert rows[ro.row]["question"] in ro.program  # a form reads its question


def test_a_question_holding_double_quotes_is_taught_in_a_literal_copied_as_is(rows, executor):
    """The sampled program ends its literal at the question's first quote (as the embedded
    policy did on every image-text question); search teaches the form with the question
    single-quoted, so the policy copies it instead of escaping it, and reads it back as a form
    either way."""
    match = 'Verify image matches text="There is a red circle."'
    rows = rows + [{"id": "e", "image": rows[0]["image"], "question": match, "answer": "yes"}]
    truncated = PREFIX + '\n    return image_patch.simple_query("Verify image matches text=")\n'
    found, _ = run(rows, [rollout(0, COUNTING, 0.0), rollout(2, COUNTING, 0.0), rollout(4, truncated, 0.0)],
                   executor)
    taught = {ro.row: ro.program for ro in found}
    assert taught[4] == PREFIX + f"\n    return image_patch.simple_query('{match}')\n"
    form = lift(taught[4], match)
    assert form is not None and instance(form, match) == taught[4]
    assert lift(taught[4].replace(f"'{match}'", '"Verify image matches text=\\"There is a red circle.\\""'),
                match) == form  # the escaped spelling is the same form


def test_teach_solved_teaches_a_kept_form_where_a_sample_was_right_by_chance(rows, executor):
    """`return "no"` solves question 3 by chance; with `teach_solved` the kept form is taught
    there too (as well as the lucky program does), and never where the policy already samples it."""
    lucky = PREFIX + '\n    return "no"\n'
    sampled = [rollout(0, COUNTING, 0.0), rollout(2, COUNTING, 0.0), rollout(3, lucky, 1.0), rollout(1, COUNTING, 1.0)]
    found, stats = run(rows, sampled, executor)
    assert sorted(ro.row for ro in found) == [0, 2] and "search/taught_solved" not in stats
    found, stats = run(rows, sampled, executor, teach_solved=True)
    taught = {ro.row: ro for ro in found}
    assert sorted(taught) == [0, 1, 2, 3] and stats["search/taught_solved"] == 2
    for row in (1, 3):
        assert taught[row].searched and taught[row].reward == 1.0
        assert rows[row]["question"] in taught[row].program and taught[row].program != lucky
    again = sampled + [rollout(3, taught[3].program, 1.0)]
    assert 3 not in {ro.row for ro in run(rows, again, executor, teach_solved=True)[0]}


def test_a_remembered_form_is_taught_in_later_iterations_where_it_no_longer_wins_on_min_share(rows, executor):
    """search.library: the form kept in one iteration is tried again in the next, where it wins on
    1 of 3 searched questions (two are labelled so that no program is right): taught there, which
    a forgetting search does not do; with teach_solved it is also taught where a fixed string was
    right by chance, although no question was searched at all."""
    library = {}
    first = [rollout(0, COUNTING, 0.0), rollout(2, COUNTING, 0.0), rollout(3, WRONG_YES, 0.0)]
    found, stats = run(rows, first, executor, library=library, library_size=4)
    assert len(found) == 3 and stats["search/library"] == len(library["viper_compact"]) >= 1
    assert "visprog" not in library  # script families are not searched
    (form,) = {lift(ro.program, rows[ro.row]["question"]) for ro in found}
    assert library["viper_compact"][0] == form
    unanswerable = [{**rows[1], "id": "e", "answer": "7"}, {**rows[2], "id": "f", "answer": "purple"}]
    later = rows + unanswerable
    second = [rollout(0, COUNTING, 0.0), rollout(4, COUNTING, 0.0), rollout(5, COUNTING, 0.0)]
    assert run(later, second, executor, methods_off=True)[0] == []  # 1 win of 3: not general when forgotten
    found, _ = run(later, second, executor, methods_off=True, library=library, library_size=4)
    assert [(ro.row, ro.program) for ro in found] == [(0, instance(form, rows[0]["question"]))]
    lucky = [rollout(3, PREFIX + '\n    return "no"\n', 1.0)]
    found, stats = run(later, lucky, executor, library=library, library_size=4, teach_solved=True)
    assert [(ro.row, ro.program) for ro in found] == [(3, instance(form, rows[3]["question"]))]
    assert stats["search/questions"] == 0 and stats["search/taught_solved"] == 1


def test_a_program_right_on_one_question_only_is_not_general(rows, executor):
    """`return "no"` is right on question 3 alone: a form must win on min_share of the searched questions."""
    sampled = [rollout(0, COUNTING, 0.0), rollout(2, COUNTING, 0.0), rollout(3, WRONG_YES, 0.0)]
    found, stats = run(rows, sampled, executor, min_share=1.0, methods_off=True)
    assert found == [] and stats["search/general_forms"] == 0


def test_nothing_is_searched_when_every_question_is_solved_or_its_family_writes_scripts(rows, executor):
    found, stats = run(rows, [rollout(0, RIGHT, 1.0), rollout(1, COUNTING, 0.0, family="visprog")], executor)
    assert found == [] and stats.get("search/questions", 0) == 0 and stats.get("search/tried", 0) == 0


def test_the_update_teaches_the_prompt_the_program_search_found(rows, executor):
    found, _ = run(rows, [rollout(0, COUNTING, 0.0), rollout(2, COUNTING, 0.0)], executor)
    cfg = Config()
    tokenizer = SimpleNamespace(eos_token_id=2)
    loop = SimpleNamespace(cfg=cfg, tokenizer=tokenizer, selfplay=SimpleNamespace(
        training_completion=lambda ro, name, tok: [len(ro.program)]))  # stands for the tokenizer: ids by length
    assert len(found) == 2
    examples = training_examples(loop, [rollout(0, COUNTING, 0.0), rollout(2, COUNTING, 0.0)] + found)
    assert examples[0].weight == 0.0 and examples[0].completion_ids == [7, 2]  # the sample, as sampled
    for ro, ex in zip(found, examples[2:], strict=True):
        assert ex.weight == 1.0 and ex.completion_ids == [len(ro.program), 2]



def test_two_ranks_choose_the_forms_one_process_chooses(rows, executor):
    sampled = [rollout(0, COUNTING, 0.0), rollout(1, COUNTING, 0.0), rollout(2, COUNTING, 0.0),
               rollout(3, WRONG_YES, 0.0)]
    alone, alone_stats = run(rows, sampled, executor)
    out = two_ranks(rows, sampled)
    together = {ro.program for r in (0, 1) for ro in out[r][0]}
    assert together == {ro.program for ro in alone} and together
    assert out[0][1] == out[1][1] == alone_stats

