"""The `template` test source: the basic properties from the question's form alone.

For policies and test writers too weak to write tests (the embedded 135M model writes
few usable ones), rules read the question's wording and write the same
`def execute_test(image)` an LLM would: yes/no questions answer yes or no, "what
color" answers a colour word, "how many" a number, "A or B" one of the two. It reads
only the question text: never the `spec` column, the scene or any label.

A leaf module (it imports nothing from the project but other leaves), so the `proptest` prompt family
can show these tests by default.
"""

from __future__ import annotations

import ast
import re

from envs.common.questions import is_yes_no

# General English vocabularies (world knowledge, not the dataset's labels).
COLOR_WORDS = ("red", "orange", "yellow", "green", "cyan", "blue", "purple", "violet", "pink", "magenta",
               "brown", "black", "white", "gray", "grey", "silver", "gold", "beige", "tan", "maroon",
               "navy", "teal", "turquoise", "olive", "cream", "dark", "light")
SHAPE_WORDS = ("circle", "square", "triangle", "rectangle", "oval", "ellipse", "star", "diamond", "hexagon",
               "pentagon", "heart", "cross", "cube", "sphere", "cylinder", "cone", "round", "rectangular")
SIZE_WORDS = ("small", "large", "big", "little", "tiny", "huge", "medium", "short", "tall", "long")
_ITM = re.compile(r"^verify image matches text\s*=", re.I)
_ARTICLE = r"(?:(?:a|an|the)\s+)?"
_OPTIONS = re.compile(rf"{_ARTICLE}([a-z][\w-]*)\s*,?\s+or\s+{_ARTICLE}([a-z][\w-]*)\s*\??$")


def _options(q: str) -> tuple[str, str] | None:
    """"Is the circle red or blue?" -> ("red", "blue"); not for "is there ... or ..."
    or "either ... or ...", which ask yes/no."""
    if re.search(r"\beither\b", q) or re.match(r"^(is|are) there\b", q):
        return None
    m = _OPTIONS.search(q)
    return (m.group(1), m.group(2)) if m else None


def properties(question: str) -> list[tuple[str, str]]:
    """(assert expression, failure message) pairs for a question's form."""
    q = " ".join(question.strip().splitlines()[0].lower().split()) if question.strip() else ""
    if _ITM.match(q):
        return [('result in ["yes", "no"]', "image-text matching answers yes or no")]
    if q.startswith("how many"):
        return [("result.isdigit()", "a count is a number")]
    options = _options(q)
    if options and is_yes_no(q):
        return [(f"result in {list(options)!r}", "the answer is one of the options")]
    if is_yes_no(q):
        return [('result in ["yes", "no"]', "a yes/no question answers yes or no")]
    # A vocabulary check already implies one word: a second test would only double the credit.
    if re.search(r"\bwhat colou?r\b", q):
        return [(f"result in {list(COLOR_WORDS)!r}", "the answer is a colour")]
    if re.search(r"\bwhat shape\b", q):
        return [(f"result in {list(SHAPE_WORDS)!r}", "the answer is a shape")]
    if re.search(r"\bwhat size\b", q):
        return [(f"result in {list(SIZE_WORDS)!r}", "the answer is a size")]
    return [('result not in ["yes", "no"]', "an open question does not answer yes or no"),
            ("len(result.split()) <= 3", "a short answer of at most three words")]


def template_test(question: str) -> str:
    """The `execute_test` text for `question`."""
    lines = ["def execute_test(image):", "    result = solve_query(image)"]
    for i, (expr, message) in enumerate(properties(question), 1):
        lines += [f"    # Test case {i}:", f"    assert {expr}, {message!r}"]
    lines.append("    return result")
    return "\n".join(lines) + "\n"


def template_shown(question: str) -> str:
    """The template tests as a code writer sees them (`PropertySuite.shown()` of the
    template suite): the default tests of the `proptest` prompt family."""
    return "\n".join(f"# Test case {i}:\nassert {ast.unparse(ast.parse(expr, mode='eval').body)}"
                     for i, (expr, _) in enumerate(properties(question), 1))
