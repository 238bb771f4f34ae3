"""Prompts of ViUniT Appendix D (unit-test generation) and Listing 4 (re-prompting).

The in-context examples are the paper's (Listings 6 and 8). For the 135M embedded model
the generation prompt ends with the opening of the first test line, so even a small
model continues in the "N. Image Caption: "..." Answer: ..." format the parser reads.
"""

from __future__ import annotations

SYSTEM_PROMPT = ("You are a skilled AI assistant specialized in generating test cases for programs "
                 "that respond to queries about images.")

# Listing 6, VQA: query -> tests.
QUERY_EXAMPLES = [
    ("Is there a cat or dog in the image?", [
        ("A grey tabby cat peacefully napping on a plush sofa", "yes"),
        ("A lively golden retriever bounding across a grassy field in the park", "yes"),
        ("Twin Siamese cats playfully swatting at a bright yellow ball", "yes"),
        ("A cluster of wild horses trotting along the sandy shores of a sunlit beach", "no"),
        ("An orange cat and a black Labrador playfully tugging on a rope toy", "yes"),
        ("A modern living room featuring sleek furniture and devoid of any pets", "no"),
    ]),
    ("Is there a red truck or bus in the image?", [
        ("A vibrant red Ford pickup parked beside a country road", "yes"),
        ("A red double-decker bus navigating through a busy downtown street", "yes"),
        ("A large blue semi-truck cruising down an interstate highway", "no"),
        ("A quiet suburban street devoid of any large vehicles like buses or trucks", "no"),
        ("A shiny red Ferrari speeding on a professional race track", "no"),
        ("An array of red delivery trucks lined up in a distribution center parking lot", "yes"),
        ("Several bright yellow school buses parked in a row at a local school", "no"),
    ]),
    ("What color is the largest car in the image?", [
        ("A large blue Ford pickup truck driving on a busy highway", "blue"),
        ("A city street empty of any large vehicles like buses or trucks", "no answer"),
        ("A row of green food trucks serving lunch in an urban park", "green"),
        ("A scene with a green public bus next to a smaller blue pickup at an intersection", "green"),
    ]),
    ("Is the vase to the left or right of the center?", [
        ("A delicate porcelain vase positioned on the right end of a mahogany dining table", "right"),
        ("A tall glass vase sitting on the left side of a neatly made bed in a sunlit room", "left"),
        ("A ceramic vase centrally placed on a round table surrounded by chairs", "center"),
    ]),
    ("What is the highest object in the image?", [
        ("A massive skyscraper dominating the skyline among lower city buildings", "skyscraper"),
        ("A lone oak tree surpassing the height of the cottage it stands next to", "tree"),
        ("Colorful balloons drifting above the treetops in a clear sky", "balloons"),
        ("A commercial jet flying high above the city\u2019s tallest skyscrapers", "plane"),
        ("A majestic eagle soaring high above a vast canyon landscape", "eagle"),
        ("A figure standing on the peak of a grassy hill under a blue sky", "person"),
    ]),
]

# Listing 8: the same queries with an implementation (two shown; the rest follow suit).
IMPLEMENTATIONS = {
    "Is there a cat or dog in the image?": '''def execute_command(image) -> str:
    image_patch = ImagePatch(image)
    cats = image_patch.find("cat")
    dogs = image_patch.find("dog")
    has_cats_or_dogs = len(cats) > 0 or len(dogs) > 0
    return bool_to_yesno(has_cats_or_dogs)''',
    "What color is the largest car in the image?": '''def execute_command(image) -> str:
    image_patch = ImagePatch(image)
    car_patches = image_patch.find("car")
    if not car_patches:
        return "No cars found in the image."
    # Sort cars by their area to find the largest one
    car_patches.sort(key=lambda x: x.area, reverse=True)
    largest_car_patch = car_patches[0]
    color_of_largest_car = largest_car_patch.simple_query("What is the color?")
    return color_of_largest_car''',
}

IMPLEMENTATION_INSTRUCTIONS = (
    "Create test cases for the specified query and program using the format provided in the examples.\n"
    "The test cases should consist of image captions and answers to the query.\n"
    "The answers should be consice, limited to a single word.\n")

# What the prompt ends with: the model continues the first caption.
OPENING = '1. Image Caption: "'


def _tests_block(tests) -> str:
    return "\n".join(f'{i}. Image Caption: "{c}" Answer: {a}' for i, (c, a) in enumerate(tests, 1))


def query_only_text(question: str) -> str:
    shots = "\n".join(f"Query: {q}\nTests:\n{_tests_block(t)}" for q, t in QUERY_EXAMPLES)
    return f"{shots}\nQuery: {question}\nTests:\n"


def with_implementation_text(question: str, program: str) -> str:
    shots = "\n".join(f"# Query: {q}\n{IMPLEMENTATIONS[q]}\nTests:\n{_tests_block(t)}"
                      for q, t in QUERY_EXAMPLES if q in IMPLEMENTATIONS)
    return (f"{shots}\n{IMPLEMENTATION_INSTRUCTIONS}Query: {question}\nProgram:\n{program.rstrip()}\n"
            "Tests:\n")


def render(tokenizer, question: str, program: str | None = None, chat: bool = False) -> str:
    """The full generation prompt, ending with OPENING. Plain text by default: like the
    policy prompts, a chat turn in between makes the 135M model drift off the format."""
    user = with_implementation_text(question, program) if program else query_only_text(question)
    if chat and getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
        head = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    else:
        head = f"{SYSTEM_PROMPT}\n\n{user}"
    return head + OPENING


# Listing 4: the instruction and layout of a unit-test re-prompt.
REPROMPT_INSTRUCTIONS = (
    "You are provided a Python program that answers a query about an image, with a set of tests "
    "with the corresponding outputs and exected responses.\n"
    "Correct the Python program such that it passes the tests.\n"
    "- Ensure the corrected program is different than the incorrect program provided.")


def test_cases_text(tests, outputs) -> str:
    """Listing 4's "Test Cases" block: caption, expected answer and the program's output."""
    lines = ["Test Cases:"]
    for i, (t, out) in enumerate(zip(tests, outputs)):
        label = chr(ord("A") + i) if i < 26 else str(i + 1)
        lines += [f"Test {label}", f'Image Content: "{t.caption}"', f'Ground Truth Answer: "{t.answer}"',
                  f'Program Output: "{out}"']
    return "\n".join(lines)
