"""A seeded generator of random and mutated programs for the sandbox's fuzz tier.

Programs come from seed snippets that together use every node type of the grammar the
static policy has a rule for, assembled at random and then mutated: nested deep (brackets,
prefix operators, calls, lambdas, subscripts, annotation strings), given huge literals,
sprinkled with odd Unicode (lone surrogates, NUL, bidi controls, zero-width and
compatibility characters that NFKC folds into denied names), or cut and spliced at the
character level. The same seed gives the same programs.
"""
from __future__ import annotations

import random

HEADER = "def execute_command(image):\n"

# Statements and expressions, each indented for a function body; {e} is an expression
# slot, {n} a small number. Together they use every node type of envs.execution.syntax's
# NODE_RULES that a module can hold (tests/integration/test_fuzz.py checks it).
STATEMENTS = [
    "x = {e}", "x += {e}", "x: int = {e}", "y: 'list[int]' = []", "del x",
    "if {e}:\n    x = 1\nelif not {e}:\n    x = 2\nelse:\n    pass",
    "for i in range({n}):\n    if i > 2:\n        break\n    continue",
    "k = 0\nwhile k < {n}:\n    k += 1",
    "try:\n    x = {e}\nexcept (ValueError, TypeError) as err:\n    x = str(err)\nfinally:\n    pass",
    "try:\n    raise ExceptionGroup('g', [ValueError(1)])\nexcept* ValueError:\n    pass",
    "with open_thing() as t:\n    pass", "assert {e}, 'message'", "raise ValueError({e})",
    "import math", "import numpy as np", "from collections import Counter as C",
    "import os", "from numpy import linalg", "global g", "def inner():\n    nonlocal_value = 1\n    def deeper():\n        nonlocal nonlocal_value\n        nonlocal_value = 2\n    return deeper",
    "def f(a, /, b: int = 1, *args, c, d=2, **kw) -> 'int':\n    return a",
    "async def co():\n    await thing\n    async for q in it:\n        pass\n    async with cm as v:\n        pass",
    "def gen():\n    yield {e}\n    yield from range({n})",
    "class K:\n    z = 1\n    def __init__(self):\n        self.v = {e}\n    def __repr__(self):\n        return 'K'",
    "class Bad:\n    def __getattr__(self, name):\n        return name",
    "match {e}:\n    case 1 | 2:\n        pass\n    case [a, *rest]:\n        pass\n    case {{'k': v, **others}}:\n        pass\n    case K(z=zz):\n        pass\n    case None:\n        pass\n    case str() as s:\n        pass\n    case _:\n        pass",
    "print(f'{{x!r:>{{n}}}} {{image.shape}}')", "x = [i for i in range({n}) if i]",
    "x = {{i: i for i in range({n})}}", "x = {{i for i in range({n})}}",
    "x = (i for i in range({n}))", "x = lambda q, *r, **s: q", "x = (y := {e})",
    "x = image[0:{n}:2, ..., -1]", "x = [*range(3), *[{e}]]", "x = {{**{{}}, 'a': {e}}}",
    "x = {e} if {e} else {e}", "x = a @ b", "x = ~{n} | {n} & {n} ^ {n} << 1 >> 1",
    "x = {n} // 2 % 3 ** 2 - +1 * -2 / 1", "x = 1 < 2 <= 3 > 0 >= 0 == 0 != 1",
    "x = a is b is not c in d not in e", "x = a and b or c", "return {e}", "pass",
    "x = ().__class__", "x = getattr(image, '__cl' + 'ass__')", "x = '{{0.__class__}}'.format(1)",
    "x = type('T', (), {{'__del__': 1}})", "np.ndarray.resize(np.zeros(3), 9, refcheck=False)",
    "x = eval('1')", "x = ImagePatch(image).find('red square')",
    "x = np.polynomial.Polynomial.window", "setattr(math, 'pi', 3)",
]
EXPRESSIONS = [
    "1", "-1", "2.5", "1j", "'s'", "b'b'", "None", "True", "image", "image.shape[0]",
    "len(image)", "[1, 2]", "(1, 2)", "{{1: 2}}", "{{1}}", "x", "f'{{1}}'", "np.zeros(2)",
    "ImagePatch(image).exists('red square')", "sorted([3, 1])", "'a' * 3",
]
# Characters that have broken Python sandboxes and parsers: surrogates, NUL, BOM, bidi
# controls, zero-width ones, and compatibility forms NFKC folds into ASCII names
# (fullwidth, mathematical letters, ligatures).
ODD = ["\ud800", "\udfff", "\x00", "\ufeff", "\u202e", "\u2066", "\u200b", "\u200d",
       "\u0301", "\uff45\uff58\uff45\uff43", "\U0001d41e\U0001d431\U0001d41e\U0001d41c",
       "\ufb01", "_\uff3f\uff43\uff4c\uff41\uff53\uff53\uff3f_", "\u0435\u0445\u0435\u0441",
       "\U0010ffff", "\u2028", "\x0c", "\r", "\t", "\\"]


def _expression(rng: random.Random, depth: int = 0) -> str:
    if depth > 2 or rng.random() < 0.5:
        return rng.choice(EXPRESSIONS)
    inner = _expression(rng, depth + 1)
    return rng.choice([f"({inner})", f"[{inner}]", f"-{inner}", f"not {inner}", f"str({inner})",
                       f"{inner} + {inner}", f"({inner},)", f"(lambda: {inner})()"])


def _fill(template: str, rng: random.Random) -> str:
    return template.format(e=_expression(rng), n=rng.randint(0, 6))


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.split("\n"))


def random_program(rng: random.Random) -> str:
    """A function body of a few random statements, with a return."""
    body = [_fill(rng.choice(STATEMENTS), rng) for _ in range(rng.randint(1, 6))]
    body.append(f"return {_expression(rng)}")
    preamble = "import numpy as np\nimport math\n" if rng.random() < 0.7 else ""
    return preamble + HEADER + "".join(_indent(s) for s in body)


def _deep(rng: random.Random) -> str:
    n = rng.choice([50, 99, 150, 199, 300, 1000, 5000, 50_000])
    opener, closer = rng.choice([("(", ")"), ("[", "]"), ("{", "}"), ("f(", ")"), ("-", ""),
                                 ("not ", ""), ("lambda: ", ""), ("~", ""), ("x[", "]"),
                                 ("1 + ", ""), ("await ", ""), ("image.", "a")])
    if opener == "image.":
        return "image" + ".a" * n
    return opener * n + "1" + closer * n


def _first_statement(program: str, statement: str) -> str:
    """``program`` with ``statement`` run first in its entry function (a mutation placed
    after the final return would never run)."""
    at = program.find(HEADER)
    if at < 0:
        return program + _indent(statement)
    at += len(HEADER)
    return program[:at] + _indent(statement) + program[at:]


def mutate(program: str, rng: random.Random) -> str:
    """One mutation of ``program``: deep nesting, a huge literal, odd Unicode, or a cut."""
    kind = rng.randrange(7)
    if kind == 0:  # deep nesting in an expression
        return _first_statement(program, f"z = {_deep(rng)}")
    if kind == 1:  # deep nesting where the checker parses a string itself
        return f"def execute_command(image: '{_deep(rng)}'):\n    return 1\n"
    if kind == 2:  # huge literals
        size = rng.choice([5000, 50_000, 99_000, 200_000])
        literal = rng.choice([f"'{'x' * size}'", "9" * size, f"b'{'y' * size}'",
                              "10 ** 10 ** 10", "[0] * 10 ** 9", f"0x{'f' * size}",
                              f"1e{'9' * 400}", f"'{'{' * size}'.format()"])
        return _first_statement(program, f"z = {literal}")
    if kind == 3:  # odd characters anywhere
        chars = list(program)
        for _ in range(rng.randint(1, 4)):
            chars.insert(rng.randrange(len(chars) + 1), rng.choice(ODD))
        return "".join(chars)
    if kind == 4:  # odd characters in names and strings only
        return program.replace("x", rng.choice(ODD), rng.randint(1, 3))
    if kind == 5:  # cut and splice
        a, b = sorted(rng.randrange(len(program) + 1) for _ in range(2))
        c = rng.randrange(len(program) + 1)
        return program[:c] + program[a:b] + program[c:]
    return program[: rng.randrange(len(program) + 1)]  # truncated


def programs(seed: int):
    """An endless, seeded stream of programs: random ones, and mutations of them."""
    rng = random.Random(seed)
    while True:
        program = random_program(rng)
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            program = mutate(program, rng)
        yield program
