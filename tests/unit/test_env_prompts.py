"""Prompt families of the environments: layout, refinement prompts and runnable examples.

In-context examples teach by example, so a broken one teaches a broken program: every
example must pass the sandbox's policy check, and the ones written for the shapes world
must run on a rendered scene and give the scene graph's answer.
"""

import pytest

from envs.data.render import render
from envs.data.scene import Obj, Scene
from envs.execution.static_check import check_program
from envs.prompts import DEFAULT_FAMILY, FAMILIES, get_family, render_refinement
from policies.programs import program_from

QUESTION = "How many blue squares are there?"
# Families whose completions are Python bodies; the visprog script families are
# tested in test_visprog.py (their examples below, here).
PYTHON_FAMILIES = sorted(n for n, f in FAMILIES.items() if f.header)
SCRIPT_FAMILIES = sorted(n for n, f in FAMILIES.items() if not f.header)


def test_families_and_default():
    assert DEFAULT_FAMILY == "viper_compact"
    assert {"viper_compact", "viper_itm", "pot", "tool_api"} <= set(FAMILIES)
    with pytest.raises(ValueError, match="known: .*tool_api"):
        get_family("viper_full_typo")


@pytest.mark.parametrize("name", PYTHON_FAMILIES)
def test_prompt_ends_with_the_question_and_the_program_prefix(name):
    family = FAMILIES[name]
    text = family.render(None, QUESTION)
    assert text.endswith(family.program_prefix) and text.count(f"# Query: {QUESTION}") == 1
    # Between the question and the program only comments may stand (proptest's tests).
    between = text[text.index(f"# Query: {QUESTION}\n") + len(f"# Query: {QUESTION}\n"): -len(family.program_prefix)]
    assert all(line.startswith("#") for line in between.splitlines())
    # A completion continues the prefix; the reward sees header + first line + completion.
    program = program_from(text, "\n    return 'x'\n")
    assert program == family.header + family.body_start + "    return 'x'\n"


@pytest.mark.parametrize("name", PYTHON_FAMILIES)
def test_every_in_context_example_passes_the_sandbox_policy(name):
    family = FAMILIES[name]
    for question, body in family.examples:
        assert body.startswith(family.body_start), question
        report = check_program(family.header + body)
        assert report.status is None, (question, report.message)


@pytest.mark.parametrize("name", SCRIPT_FAMILIES)
def test_every_planning_example_passes_the_ss_parser(name):
    from rewards.vlagent.ssparser import check_script

    for question, script in get_family(name).examples:
        assert check_script(script, question) == [], question


@pytest.mark.parametrize("name", SCRIPT_FAMILIES)
def test_script_refinement_shows_the_script(name):
    family = FAMILIES[name]
    failed = program_from("Program:", "X=CAP(image=IMAGE)\nY=COUNT(box=X)")
    text = render_refinement(family, None, QUESTION, failed, "Error: TypeError")
    assert "# Incorrect program:\nX=CAP(image=IMAGE)\nY=COUNT(box=X)\n" in text
    assert "def execute_command" not in text and text.rstrip().endswith("Program:")


def test_pot_examples_use_no_tools():
    for _, body in get_family("pot").examples:
        assert "ImagePatch" not in body and "ImageObject" not in body


@pytest.mark.parametrize("name", PYTHON_FAMILIES)
def test_refinement_prompt_judges_the_new_program_not_the_failed_one(name):
    family = FAMILIES[name]
    failed = family.header + family.body_start + "    return undefined_name\n"
    text = render_refinement(family, None, QUESTION, failed, "Error: NameError: undefined_name")
    assert text.endswith("# Corrected program:\n" + family.program_prefix)
    assert failed.rstrip() in text and "# Error: NameError: undefined_name" in text
    program = program_from(text, "\n    return 'fixed'\n")
    assert program == family.header + family.body_start + "    return 'fixed'\n"


def test_refinement_prompt_caps_a_runaway_program():
    family = get_family(DEFAULT_FAMILY)
    failed = family.header + "    x = 1\n" * 5000
    text = render_refinement(family, None, QUESTION, failed, "Error: timeout")
    assert len(text) < len(family.render(None, QUESTION)) + 5000
    assert "program truncated" in text


@pytest.fixture(scope="module")
def scene_image():
    # Three well separated shapes: a red circle at the upper left, a small blue square
    # at the lower right and a large green triangle at the lower left (bottom-left origin).
    scene = Scene([Obj("circle", "red", "large", 60, 190), Obj("square", "blue", "small", 200, 60),
                   Obj("triangle", "green", "large", 70, 60)])
    return render(scene)


def run_examples(executor, image, name, questions):
    family = get_family(name)
    bodies = dict(family.examples)
    results = executor.run([family.header + bodies[q] for q in questions], [image] * len(questions))
    return [(r.status, r.answer) for r in results]


def test_itm_examples_verify_captions_on_a_scene(executor, scene_image):
    questions = [q for q, _ in get_family("viper_itm").examples]
    # red circle left of a blue square: yes; two green triangles: no; large square above
    # a small circle: no (there is neither).
    assert run_examples(executor, scene_image, "viper_itm", questions) == [
        ("ok", "yes"), ("ok", "no"), ("ok", "no")]


def test_tool_api_examples_orchestrate_the_image_object(executor, scene_image):
    questions = ["What color is the large triangle?", "Are there more squares than circles?"]
    assert run_examples(executor, scene_image, "tool_api", questions) == [
        ("ok", "green"), ("ok", "no")]


def test_pot_examples_run_as_plain_python(executor, scene_image):
    questions = [q for q, _ in get_family("pot").examples]
    assert run_examples(executor, scene_image, "pot", questions) == [
        ("ok", "2"), ("ok", "27.0"), ("ok", "yes")]


def test_a_body_line_without_its_newline_or_indent_still_joins_the_prompt():
    """A hand-written action is a line of its own: `env.step("    return 'yes'")` and
    `"return 'yes'"` run as the body's next line; a policy's continuation of the prompt's
    last line, and a real syntax error, are kept as written."""
    head = "def execute_command(image):\n    image_patch = ImagePatch(image)"
    expected = head + "\n    return 'yes'"
    assert program_from(head, "    return 'yes'").rstrip() == expected
    assert program_from(head, "return 'yes'").rstrip() == expected
    assert program_from(head, "\n    return 'yes'").rstrip() == expected
    continued = program_from(head + "\n    n = len(image_patch", ".find('cube'))\n    return str(n)")
    assert "n = len(image_patch.find('cube'))" in continued
    assert program_from(head, "    return 'yes' 'no' (").startswith(head + "    return")


def test_joining_a_deeply_nested_completion_does_not_crash_the_caller():
    """`compile` raises RecursionError (not SyntaxError) on ~3000 nested unary minuses; the
    join treats that as "does not compile" and keeps the literal text for the sandbox."""
    head = "def execute_command(image):\n    image_patch = ImagePatch(image)"
    program = program_from(head, "return " + "-" * 3000 + "1")
    assert program.startswith(head + "return ---")
