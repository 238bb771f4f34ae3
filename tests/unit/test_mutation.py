"""Program search's edits (policies/mutation.py): each operator on a hand-made seed, the
guards (the prompt's line stays, no read before binding, no repeats), parsimony, and the
function set read from a prompt's API."""

import ast
import random

from envs.prompts import get_family
from policies.mutation import api_methods, literal, mutants

FIRST = "def execute_command(image):\n    image_patch = ImagePatch(image)\n"
METHODS = {"find": 1, "exists": 1, "verify_property": 2, "simple_query": 1}


def body(program: str) -> str:
    assert program.startswith(FIRST), program
    return program[len(FIRST):]


def all_mutants(seed: str, **kw) -> list[str]:
    return mutants([seed], 10_000, random.Random(0), **kw)


def test_drop_unwrap_and_return_early_are_one_edit_away():
    seed = FIRST + ('    circles = image_patch.find("circle")\n    if circles:\n'
                    '        return circles[0].simple_query("What color is this?")\n    return "none"\n')
    found = {body(m) for m in all_mutants(seed, depth=1)}
    assert '    circles = image_patch.find("circle")\n    return circles[0].simple_query("What color is this?")\n' \
        in found  # unwrap: the guard is gone
    assert '    return image_patch.find("circle")\n' in found  # return_early
    assert '    return "none"\n' in found  # drop the if; `circles` is then unread and pruned


def test_point_mutation_uses_the_function_set_with_the_same_arity():
    seed = FIRST + '    return str(len(image_patch.find("red circle")))\n'
    found = {body(m) for m in all_mutants(seed, depth=1, methods=METHODS)}
    assert '    return str(len(image_patch.exists("red circle")))\n' in found
    assert '    return str(len(image_patch.simple_query("red circle")))\n' in found
    assert not any("verify_property" in m for m in found)  # two arguments: not a one-argument call's stand-in
    assert not {body(m) for m in all_mutants(seed, depth=1)} & {'    return str(len(image_patch.exists("red circle")))\n'}


def test_hoist_and_constant_reach_a_new_form_in_a_few_edits():
    seed = FIRST + '    return str(len(image_patch.find("square")))\n'
    question = "What size is the square?"
    one_edit = {body(m) for m in all_mutants(seed, depth=1, methods=METHODS, terminals=(question,))}
    assert '    return len(image_patch.find("square"))\n' in one_edit  # hoist str(...)
    assert f'    return str(len(image_patch.find("{question}")))\n' in one_edit  # constant: a terminal
    four = {body(m) for m in all_mutants(seed, depth=4, methods=METHODS, terminals=(question,))}
    assert f'    return image_patch.simple_query("{question}")\n' in four
    assert f'    return image_patch.simple_query("{question}")\n' not in \
        {body(m) for m in all_mutants(seed, depth=3, methods=METHODS, terminals=(question,))}


def test_rename_reads_only_names_bound_before():
    seed = FIRST + ('    squares = image_patch.find("square")\n    circles = image_patch.find("circle")\n'
                    '    return str(len(circles))\n')
    found = all_mutants(seed, depth=1)
    assert any(body(m) == '    squares = image_patch.find("square")\n    return str(len(squares))\n' for m in found)
    for m in found:
        assert "image.find" not in m and "ImagePatch(image_patch)" not in m  # the argument and the prompt's line stay
        assert "squares = squares" not in m and "circles = circles" not in m  # no read before binding


def test_every_mutant_keeps_the_prompts_line_parses_returns_and_is_new():
    seeds = [FIRST + '    return bool_to_yesno(image_patch.exists("blue square"))\n',
             FIRST + ('    squares = image_patch.find("green square")\n    triangles = image_patch.find("triangle")\n'
                      '    for triangle in triangles:\n        if squares and triangle.horizontal_center < '
                      'squares[0].horizontal_center:\n            return triangle.simple_query("What color is this?")\n'
                      '    return triangles[0].simple_query("What color is this?")\n')]
    found = mutants(seeds, 500, random.Random(1), methods=METHODS, terminals=("Is there a cat?",))
    assert found
    normal = {ast.unparse(ast.parse(s)) for s in seeds}
    keys = [ast.unparse(ast.parse(m)) for m in found]
    assert len(set(keys)) == len(keys) and not normal & set(keys)
    for m in found:
        tree = ast.parse(m)
        assert m.startswith(FIRST) and any(isinstance(n, ast.Return) for n in ast.walk(tree))
        assert "'" not in m  # strings stay double-quoted, as the policy writes them


def test_the_shortest_come_first_and_a_limit_keeps_them():
    seed = FIRST + ('    circles = image_patch.find("circle")\n    if circles:\n'
                    '        return circles[0].simple_query("What color is this?")\n    return "none"\n')
    every = all_mutants(seed, methods=METHODS)
    assert [len(m) for m in every] == sorted(len(m) for m in every)
    assert mutants([seed], 5, random.Random(0), methods=METHODS) == every[:5]


def test_same_rng_same_mutants_and_broken_seeds_have_none():
    seed = FIRST + '    return str(len(image_patch.find("square")))\n'
    assert mutants([seed], 20, random.Random(3), methods=METHODS) == mutants([seed], 20, random.Random(3),
                                                                            methods=METHODS)
    assert mutants(["def execute_command(image):\n    return (", "not python at all ::"], 20, random.Random(0)) == []
    assert mutants([FIRST], 20, random.Random(0)) == []  # nothing but the prompt's line: nothing to edit


def test_api_methods_reads_the_prompts_function_set():
    assert api_methods(get_family("viper_compact").api) == METHODS
    assert api_methods("not python (") == {}


def test_a_text_holding_double_quotes_is_written_to_be_copied_not_escaped():
    """The embedded policy ends a literal at its text's first double quote: a question that
    holds double quotes (and no single ones) is single-quoted so a program copies it as is."""
    quoted = 'Verify image matches text="There is a red circle."'
    for text, expected in [("What color is the circle?", '"What color is the circle?"'),
                           (quoted, "'" + quoted + "'"),
                           ('it\'s "x"', '"it\'s \\"x\\""'),  # both quotes: escaped, double-quoted
                           ('a\\b "c"', '"a\\\\b \\"c\\""'), ('tab\t"x"', '"tab\\t\\"x\\""')]:
        assert literal(text) == expected
        assert ast.literal_eval(literal(text)) == text
    seed = FIRST + '    return image_patch.simple_query("Verify image matches text=")\n'
    found = {body(m) for m in all_mutants(seed, depth=1, terminals=(quoted,))}
    assert f"    return image_patch.simple_query('{quoted}')\n" in found
