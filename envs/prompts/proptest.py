"""Test-conditioned programs (PropTest Figure 9): each query is shown with its property
tests, and the program is written to pass them.

The family keeps the compact ImagePatch API and shows 8 in-context examples, each a
query, its assertion tests (only the `# Test case n:` comments and the assert lines,
as the release shows them, commented out so they are read and not run), and a program.
`proptest_baseline` is the same prompt without the tests: the paper's ViperGPT column
uses the same examples, so the two differ in the tests alone.

`render(tokenizer, question, shots, tests=...)` takes the tests as text (a suite's
`shown()`); without them the family shows the label-free `template` tests (the leaf
`rewards.property_tests.template`), so training and `vprl eval --prompt proptest`
work unchanged.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from envs.prompts.viper import API, SYSTEM, PromptFamily

GUIDELINES = """# Write a function using Python and the ImagePatch class (above) that answers the query.
# - Use base Python (comparison, sorting) for basic logical operations, left/right/up/down, math, etc.
# - The assertion tests under each query check the expected answer: write the function so that it passes them.
# - Do not return None or "Unknown". If the answer is not found, return image_patch.simple_query(query).
"""

# (query, assertion tests as "# Test case n:" / assert lines, body after the header)
EXAMPLES = [
    ("Is there a blue square?",
     ['result in ["yes", "no"]'],
     '''    image_patch = ImagePatch(image)
    return bool_to_yesno(image_patch.exists("blue square"))
'''),
    ("How many red circles are there?",
     ["result.isdigit()"],
     '''    image_patch = ImagePatch(image)
    return str(len(image_patch.find("red circle")))
'''),
    ("What color is the triangle left of the green square?",
     ["len(result.split()) == 1", 'result not in ["yes", "no"]'],
     '''    image_patch = ImagePatch(image)
    squares = image_patch.find("green square")
    triangles = image_patch.find("triangle")
    for triangle in triangles:
        if squares and triangle.horizontal_center < squares[0].horizontal_center:
            return triangle.simple_query("What color is this?")
    return image_patch.simple_query("What color is the triangle left of the green square?")
'''),
    ("Is the square red or blue?",
     ['result in ["red", "blue"]'],
     '''    image_patch = ImagePatch(image)
    squares = image_patch.find("square")
    if squares and squares[0].verify_property("square", "red"):
        return "red"
    return "blue"
'''),
    ("Is the circle to the left of the triangle?",
     ['result in ["yes", "no"]'],
     '''    image_patch = ImagePatch(image)
    circles = image_patch.find("circle")
    triangles = image_patch.find("triangle")
    if not circles or not triangles:
        return image_patch.simple_query("Is the circle to the left of the triangle?")
    return bool_to_yesno(circles[0].horizontal_center < triangles[0].horizontal_center)
'''),
    ("What shape is the object above the yellow square?",
     ["len(result.split()) == 1", 'result not in ["yes", "no"]'],
     '''    image_patch = ImagePatch(image)
    squares = image_patch.find("yellow square")
    for patch in image_patch.find("object"):
        if squares and patch.vertical_center > squares[0].upper:
            return patch.simple_query("What shape is this?")
    return image_patch.simple_query("What shape is the object above the yellow square?")
'''),
    ("Is there both a green circle and a small square?",
     ['result in ["yes", "no"]'],
     '''    image_patch = ImagePatch(image)
    return bool_to_yesno(image_patch.exists("green circle") and image_patch.exists("small square"))
'''),
    ("Are there more red objects than blue objects?",
     ['result in ["yes", "no"]'],
     '''    image_patch = ImagePatch(image)
    return bool_to_yesno(len(image_patch.find("red object")) > len(image_patch.find("blue object")))
'''),
]

def tests_block(tests: str) -> str:
    """The tests under a query: every line commented out, or a note that there are none."""
    lines = [line for line in (tests or "").splitlines() if line.strip()]
    if not lines:
        return "# Assertion tests: none"
    return "# Assertion tests:\n" + "\n".join(line if line.lstrip().startswith("#") else f"# {line}"
                                               for line in lines)


def shown(asserts: list[str]) -> str:
    """Assert expressions as a suite's `shown()` prints them (same quoting)."""
    return "\n".join(f"# Test case {i}:\nassert {ast.unparse(ast.parse(a, mode='eval').body)}"
                     for i, a in enumerate(asserts, 1))


@dataclass
class TestConditionedFamily(PromptFamily):
    """A PromptFamily whose queries carry their property tests."""

    example_tests: tuple = ()   # (example query, its tests as text)

    def tests_for(self, question: str) -> str:
        """The default tests of a query: the template's, from its form alone."""
        from rewards.property_tests.template import template_shown

        return template_shown(question)

    def user_text(self, question: str, shots=None, tests: str | None = None) -> str:
        parts = [self.api + GUIDELINES]
        known = dict(self.example_tests)
        for q, body in list(self.examples) + list(shots or []):
            # Pool shots come without tests: they get the default source's.
            block = tests_block(known[q] if q in known else self.tests_for(q.splitlines()[0]))
            parts.append(f"# Query: {q}\n{block}\n{self.header}{body}")
        # A refinement turn passes its whole block as the question: the tests follow its
        # first line (the question), the failed program and its feedback come after them.
        first, _, rest = question.partition("\n")
        block = tests_block(tests if tests is not None else self.tests_for(first))
        parts.append(f"# Query: {first}\n{block}" + (f"\n{rest}" if rest else ""))
        return "\n".join(parts)

    def render(self, tokenizer, question: str, shots=None, tests: str | None = None) -> str:
        if not self.chat:
            return f"# {self.system}\n{self.user_text(question, shots, tests)}\n{self.program_prefix}"
        messages = [{"role": "system", "content": self.system},
                    {"role": "user", "content": self.user_text(question, shots, tests)}]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return text + self.program_prefix


PROPTEST = TestConditionedFamily(
    "proptest", SYSTEM, API, [(q, body) for q, _, body in EXAMPLES],
    example_tests=tuple((q, shown(t)) for q, t, _ in EXAMPLES))


@dataclass
class SameExamplesNoTests(PromptFamily):
    """The test-conditioned prompt without any tests (the guideline about them dropped)."""

    def user_text(self, question: str, shots=None) -> str:
        guidelines = "".join(line for line in GUIDELINES.splitlines(keepends=True) if "assertion tests" not in line)
        parts = [self.api + guidelines]
        for q, body in list(self.examples) + list(shots or []):
            parts.append(f"# Query: {q}\n{self.header}{body}")
        parts.append(f"# Query: {question}")
        return "\n".join(parts)


PROPTEST_BASELINE = SameExamplesNoTests("proptest_baseline", SYSTEM, API, [(q, body) for q, _, body in EXAMPLES])
