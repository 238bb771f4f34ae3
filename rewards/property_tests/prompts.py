"""Our prompts for writing property tests, in the structure of PropTest Figure 7.

CO-STAR sections (context, objective with guidelines, style, tone, audience,
response), then `###`-separated in-context examples, then the query. Three variants:

- `basic` (6 examples): properties of the answer's form only (yes/no, the options of
  an "or" question, a number, a short phrase), in plain Python;
- `advanced` (10 examples): also world knowledge through `llm_query`, which answers
  yes or no ("Is <answer> a colour?");
- `itm` (6 examples): image-text matching (`Verify image matches text="..."`), where
  a "yes" must be backed by the objects the text names (`ImagePatch(image).exists`),
  the VQA analogue of the paper's grounding tests (Figure 3c).

The prompt ends inside the function, after the first test-case comment, so even the
135M embedded model continues in the format the parser reads. The query is pasted in
by concatenation, never by `str.format`, so quotes and braces in it are harmless.
"""

from __future__ import annotations

SYSTEM = "You are an expert programming assistant. Only answer with a function starting with def execute_test."
OPENING = "def execute_test(image):\n    result = solve_query(image)\n    # Test case 1:"

_GUIDELINES = [
    "The answer is a short string of one or two words.",
    "If the query is a yes-or-no question, the answer is yes or no.",
    'If the query offers options joined by "or", the answer is one of the options.',
    'If the query asks "how many", the answer is a number written with digits.',
]
_LLM_GUIDELINE = ("Use llm_query(question) to check knowledge that the answer must agree with; "
                  "it answers yes or no.")
_ITM_GUIDELINES = [
    'The query asks whether the image matches the text; the answer is "yes" or "no".',
    'If the answer is "yes", every object the text names must be found in the image: check each with '
    'ImagePatch(image).exists(name).',
]

# (query, [(assert expression, message)]) -- form-only properties, no tools.
BASIC_EXAMPLES = [
    ("Is the man to the left or to the right of the car?", [
        ('result in ["left", "right"]', "the answer is one of the two options")]),
    ("Are there both cups and plates on the table?", [
        ('result in ["yes", "no"]', "a yes-or-no question answers yes or no")]),
    ("How many people are sitting on the bench?", [
        ("result.isdigit()", "a count is written with digits"),
        ("int(result) < 100", "a count of people on a bench is small")]),
    ("What color is the umbrella?", [
        ("len(result.split()) <= 2", "the answer is one or two words"),
        ('result not in ["yes", "no"]', "the query is not a yes-or-no question"),
        ("not any(c.isdigit() for c in result)", "a colour has no digits")]),
    ("Is the sky cloudy or clear?", [
        ('result in ["cloudy", "clear"]', "the answer is one of the two options")]),
    ("What is the animal next to the fence?", [
        ("len(result.split()) <= 2", "the answer is one or two words"),
        ('result not in ["yes", "no"]', "the query is not a yes-or-no question")]),
]

# The basic ones plus world knowledge through llm_query.
ADVANCED_EXAMPLES = [
    ("What kind of cuisine is this?", [
        ("len(result.split()) <= 2", "the answer is one or two words"),
        ('llm_query(f"Is {result} a type of cuisine?") == "yes"', "the answer is a cuisine")]),
    BASIC_EXAMPLES[0],
    ("What color is the umbrella?", [
        ("len(result.split()) <= 2", "the answer is one or two words"),
        ('llm_query(f"Is {result} a color?") == "yes"', "the answer is a colour")]),
    BASIC_EXAMPLES[1],
    ("Which room of the house is shown?", [
        ('result not in ["yes", "no"]', "the query is not a yes-or-no question"),
        ('llm_query(f"Is {result} a room in a house?") == "yes"', "the answer is a room")]),
    BASIC_EXAMPLES[2],
    ("What is the animal next to the fence?", [
        ("len(result.split()) <= 2", "the answer is one or two words"),
        ('llm_query(f"Is {result} an animal?") == "yes"', "the answer is an animal")]),
    ("What is the woman holding?", [
        ('result not in ["yes", "no"]', "the query is not a yes-or-no question"),
        ('llm_query(f"Can a person hold a {result}?") == "yes"', "a person can hold it")]),
    BASIC_EXAMPLES[4],
    ("What shape is the road sign?", [
        ("len(result.split()) == 1", "the answer is one word"),
        ('llm_query(f"Is {result} a shape?") == "yes"', "the answer is a shape")]),
]

ITM_EXAMPLES = [
    ('Verify image matches text="A dog is lying on a red sofa."', [
        ('result in ["yes", "no"]', "the answer is yes or no"),
        ('result == "no" or ImagePatch(image).exists("dog")', "a match needs a dog"),
        ('result == "no" or ImagePatch(image).exists("red sofa")', "a match needs a red sofa")]),
    ('Verify image matches text="Two people ride bicycles past a bus."', [
        ('result in ["yes", "no"]', "the answer is yes or no"),
        ('result == "no" or ImagePatch(image).exists("bicycle")', "a match needs bicycles"),
        ('result == "no" or ImagePatch(image).exists("bus")', "a match needs a bus")]),
    ('Verify image matches text="A small yellow square is above a blue circle."', [
        ('result in ["yes", "no"]', "the answer is yes or no"),
        ('result == "no" or ImagePatch(image).exists("small yellow square")', "a match needs the square"),
        ('result == "no" or ImagePatch(image).exists("blue circle")', "a match needs the circle")]),
    ('Verify image matches text="There are three green triangles."', [
        ('result in ["yes", "no"]', "the answer is yes or no"),
        ('result == "no" or ImagePatch(image).exists("green triangle")', "a match needs green triangles")]),
    ('Verify image matches text="The cup is on the left of the laptop."', [
        ('result in ["yes", "no"]', "the answer is yes or no"),
        ('result == "no" or ImagePatch(image).exists("cup")', "a match needs a cup"),
        ('result == "no" or ImagePatch(image).exists("laptop")', "a match needs a laptop")]),
    ('Verify image matches text="There is a large gray object and there is no red circle."', [
        ('result in ["yes", "no"]', "the answer is yes or no"),
        ('result == "no" or ImagePatch(image).exists("large gray object")', "a match needs the gray object")]),
]

KINDS = {"basic": (BASIC_EXAMPLES, False), "advanced": (ADVANCED_EXAMPLES, True), "itm": (ITM_EXAMPLES, None)}


def is_itm(question: str) -> bool:
    return question.strip().lower().startswith("verify image matches text")


def example_text(query: str, tests) -> str:
    lines = [f"<<Query>>: {query}", "def execute_test(image):", "    result = solve_query(image)"]
    for i, (expr, message) in enumerate(tests, 1):
        lines += [f"    # Test case {i}:", f"    assert {expr}, {message!r}"]
    lines.append("    return result")
    return "\n".join(lines)


def _header(kind: str) -> str:
    if kind == "itm":
        guidelines = _ITM_GUIDELINES
        context = ("The 'solve_query' function is a Python function that takes an image as input and answers "
                   "whether the image matches a text, as the string yes or no.")
    else:
        guidelines = _GUIDELINES + ([_LLM_GUIDELINE] if kind == "advanced" else [])
        context = ("The 'solve_query' function is a Python function that takes an image as input and returns "
                   "the answer to a <<Query>> about it as a string.")
    numbered = "\n".join(f"{i}. {g}" for i, g in enumerate(guidelines, 1))
    return (
        f"# CONTEXT #\n{context}\n\n"
        "# OBJECTIVE #\nWrite a Python function named 'execute_test' that checks properties of the answer "
        "of 'solve_query' for the given <<Query>>. Write at most four test cases, each an assert statement "
        "with the comment '# Test case n:' above it, starting from 1.\n"
        f"Consider these guidelines when writing the test cases:\n{numbered}\n\n"
        "# STYLE #\ntechnical, in correct Python\n\n"
        "# TONE #\nclear, precise, professional\n\n"
        "# AUDIENCE #\nDevelopers who use the test function to check the answers of solve_query\n\n"
        "# RESPONSE #\nOnly the function that starts with 'def execute_test(image)', without explanation.\n"
    )


def render(question: str, kind: str = "basic") -> str:
    """The generation prompt for `question`; ITM-form questions always get the ITM prompt."""
    if kind not in KINDS:
        raise ValueError(f"unknown property-test prompt {kind!r}; choose one of {', '.join(KINDS)}")
    if is_itm(question):
        kind = "itm"
    examples = "\n\n".join(example_text(q, t) for q, t in KINDS[kind][0])
    # Everything but the query is shared by every prompt: the KV prefix is prefilled once.
    return (f"{SYSTEM}\n\n{_header(kind)}\n###\nHere are some <<EXAMPLES>>:\n\n{examples}\n\n###\n"
            "# Instruction #\nWrite the function execute_test for the following query.\n"
            "<<Query>>: " + question.strip() + "\n" + OPENING)
