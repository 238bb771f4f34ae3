"""policies/compose.py: the question's phrases and template, the API's typed tools, and the
programs composed from them (pure text; their rewards are tested in test_search_compose.py)."""

import ast
import json

from envs.prompts import get_family
from policies.compose import composed, expressions, marker, numbers, patch_name, phrases, template, tools

FAMILY = get_family("viper_compact")
PREFIX = FAMILY.program_prefix


def test_phrases_are_the_runs_of_content_words_as_the_question_writes_them():
    assert phrases("Are there more red circles than blue squares?") == ["red circles", "blue squares"]
    assert phrases("Is there either a Red object or a large blue square?") == ["Red object", "large blue square"]
    assert phrases("What color is the small square to the left of the red circle?") == [
        "color", "small square", "red circle"]
    assert phrases("Is the red circle left of the red circle?") == ["red circle"]  # once, though twice asked
    assert phrases("How many are there?") == []
    assert phrases("u v w x y z") == ["u v w x y z"]
    assert phrases("u of v of w of x of y", limit=3) == ["u", "v", "w"]


def test_questions_asking_the_same_of_other_objects_share_a_template():
    more, words = template("Are there more red circles than blue squares?")
    assert more == f"Are there more {marker(0)} than {marker(1)}?" and words == ["red circles", "blue squares"]
    assert template("Are there more small triangles than large gray objects?")[0] == more
    assert template("Are there fewer red circles than blue squares?")[0] != more
    assert template("Is the circle left of the circle?") == (f"Is the {marker(0)} left of the {marker(0)}?", ["circle"])
    quoted, words = template('Verify image matches text="There is a gray triangle."')
    assert words[-1] == "gray triangle" and quoted.endswith(f'"There is a {marker(2)}."')


def test_a_number_the_question_names_ends_a_phrase_and_compares_with_a_count():
    """Cardinals are closed-class words: "exactly one small circle" holds the phrase "small
    circle", the number stays in the template (questions naming another number have
    another), and a count compares with it in one call."""
    question = 'Verify image matches text="There is exactly one small circle."'
    one, words = template(question)
    assert words[-2:] == ["exactly", "small circle"] and f"{marker(len(words) - 2)} one {marker(len(words) - 1)}" in one
    assert template(question.replace("one small circle", "one red square"))[0] == one
    assert template(question.replace("one", "two"))[0] != one
    assert numbers("Are there 3 or twelve cubes, or 3?") == [3, 12] and numbers("Is it done?") == []
    assert phrases("Are there 2 red cubes?") == ["red cubes"]
    found = expressions(FAMILY.api, "image_patch", question, quote=json.dumps, calls=1)
    for op in ("==", ">", "<"):
        assert f'bool_to_yesno(len(image_patch.find("small circle")) {op} 1)' in found
    assert not any(" == 1" in e for e in expressions(FAMILY.api, "image_patch", "Is there a small circle?",
                                                     quote=json.dumps))


def test_the_tools_and_their_types_come_from_the_api_listing():
    methods, functions = tools(FAMILY.api)
    assert methods == {"find": (("str",), "list"), "exists": (("str",), "bool"),
                       "verify_property": (("str", "str"), "bool"), "simple_query": (("str",), "str")}
    assert functions == {"bool_to_yesno": (("bool",), "str")}
    other = '''class Patch:
    def count(self, name: str) -> int: ...
    def crop(self, left, lower): ...  # untyped: not composed
    def _private(self, x: str) -> int: ...
'''
    assert tools(other) == ({"count": (("str",), "int")}, {})
    assert tools("class (:") == ({}, {})
    assert patch_name("    image_patch = ImagePatch(image)\n") == "image_patch"
    assert patch_name("    return 1\n") is None


def test_composed_programs_join_two_tools_over_the_phrases_and_all_parse():
    question = "Are there more red circles than blue squares?"
    programs = composed(PREFIX, FAMILY.body_start, FAMILY.api, question)
    body = ('\n    return bool_to_yesno(len(image_patch.find("red circles")) > '
            'len(image_patch.find("blue squares")))\n')
    assert PREFIX + body in programs
    assert PREFIX + '\n    return bool_to_yesno(image_patch.exists("red circles") or image_patch.exists("blue squares"))\n' \
        in programs
    assert PREFIX + f'\n    return image_patch.simple_query("{question}")\n' in programs
    assert len(programs) == len(set(programs))
    for program in programs:
        assert program.startswith(PREFIX)
        ast.parse(program)
        # The whole question goes only where it is the one argument.
        assert f'verify_property("{question}"' not in program and f', "{question}")' not in program
    assert [len(p) for p in programs] == sorted(len(p) for p in programs)  # shortest first
    one_call = composed(PREFIX, FAMILY.body_start, FAMILY.api, question, calls=1)
    assert set(one_call) < set(programs) and not any(" > " in p or " and " in p for p in one_call)
    assert composed(PREFIX, "    return 1\n", FAMILY.api, question) == []
    assert composed(PREFIX, FAMILY.body_start, FAMILY.api, question, calls=0) == []


def test_another_api_gets_its_own_programs():
    """An API whose counter returns an int: counts compare directly, and str() answers them."""
    api = "class Scene:\n    def count(self, name: str) -> int: ...\n    def has(self, name: str) -> bool: ...\n"
    found = expressions(api, "scene", "Are there more cats than dogs?", quote=lambda s: repr(s))
    assert "str(scene.count('cats'))" in found
    assert "scene.count('cats') > scene.count('dogs')" not in found  # no (bool) -> str function: no yes/no answer
    assert not any("find" in e for e in found)
    with_answer = api + "def yesno(value: bool) -> str: ...\n"
    found = expressions(with_answer, "scene", "Are there more cats than dogs?", quote=lambda s: repr(s))
    assert "yesno(scene.count('cats') > scene.count('dogs'))" in found
    assert "yesno(scene.has('cats') and scene.has('dogs'))" in found


def test_documented_attributes_of_found_patches_compare_between_two_phrases():
    """The class comment's listed names are attributes; `find` returns patches, so with
    `attributes` its first patch's attributes compare between two phrases, in both orders
    and with both signs (the question's order with the relation's sign is among them)."""
    from policies.compose import documented_attributes
    assert documented_attributes(FAMILY.api) == {"ImagePatch": ["left", "right", "lower", "upper",
                                                                "horizontal_center", "vertical_center", "area"]}
    question = "Is the red circle to the right of the blue square?"
    found = expressions(FAMILY.api, "image_patch", question, quote=repr, attributes=True)
    x = "image_patch.find('{}')[0].horizontal_center"
    for a, op, b in [("red circle", ">", "blue square"), ("blue square", "<", "red circle"),
                     ("red circle", "<", "blue square")]:
        assert f"bool_to_yesno({x.format(a)} {op} {x.format(b)})" in found
    assert not any(f"find('{question}')[0]" in e for e in found)  # the whole question is no phrase
    assert not any("[0]." in e for e in expressions(FAMILY.api, "image_patch", question, quote=repr))  # off
    assert not any("[0]." in e for e in expressions(FAMILY.api, "image_patch", question, quote=repr, calls=1,
                                                      attributes=True))  # two calls
    programs = composed(PREFIX, FAMILY.body_start, FAMILY.api, question, attributes=True)
    assert set(composed(PREFIX, FAMILY.body_start, FAMILY.api, question)) < set(programs)
    for program in programs:
        ast.parse(program)
    api = '''class Box:
    # An object found.  Prose: its words are no attributes.
    # width, height
    x: float
    def near(self, other: str) -> bool: ...
class Scene:
    def boxes(self, name: str) -> list[Box]: ...
    def names(self, name: str) -> list[str]: ...
def yesno(value: bool) -> str: ...
'''
    assert documented_attributes(api) == {"Box": ["x", "width", "height"]}
    found = expressions(api, "scene", "Is the cat above the dog?", quote=repr, attributes=True)
    assert "yesno(scene.boxes('cat')[0].height > scene.boxes('dog')[0].height)" in found
    assert not any("names('cat')[0]" in e for e in found)  # a list of strings has no documented attributes
    assert documented_attributes("class (:") == {}


def test_a_third_call_asks_about_the_first_patch_a_relation_to_another_phrase_selects():
    """"What color is the A to the left of the B?" needs the A that stands left of B's patch,
    then a question asked of it: three calls. With `attributes` and `calls=3`, one phrase's
    list is filtered by each documented attribute and sign against another phrase's first
    patch, and each `(str) -> str` method asks the question or a phrase of the first patch
    left. Without either, nothing is selected; and another API's names are used."""
    question = "What color is the small object to the left of the red circle?"
    found = expressions(FAMILY.api, "image_patch", question, quote=repr, calls=3, attributes=True)
    want = ("[p for p in image_patch.find('small object') if p.horizontal_center < "
            "image_patch.find('red circle')[0].horizontal_center][0].simple_query('{}')")
    assert want.format(question) in found and want.format("color") in found
    assert set(expressions(FAMILY.api, "image_patch", question, quote=repr, calls=2, attributes=True)) < set(found)
    for off in (dict(calls=2, attributes=True), dict(calls=3, attributes=False)):
        assert not any(" for p in " in e for e in expressions(FAMILY.api, "image_patch", question, quote=repr, **off))
    # Both orders of the two phrases, both signs, every documented attribute; the list of the
    # question itself is never filtered (it is no phrase).
    selecting = [e for e in found if " for p in " in e]
    assert len({e.split("][0].")[0] for e in selecting}) == 6 * 7 * 2  # ordered pairs of 3 phrases
    assert not any(f"find('{question}')" in e for e in selecting)
    for program in composed(PREFIX, FAMILY.body_start, FAMILY.api, question, calls=3, attributes=True):
        ast.parse(program)
    api = '''class Box:
    # width
    def label(self, what: str) -> str: ...
    def boxes(self, name: str) -> list[Box]: ...
'''
    found = expressions(api, "p", "What label has the cat above the dog?", quote=repr, calls=3, attributes=True)
    assert "[q for q in p.boxes('cat') if q.width > p.boxes('dog')[0].width][0].label('label')" in found
