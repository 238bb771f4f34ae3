"""Visual program-of-thought (seed 002, section 3.1).

The policy looks at the image itself and writes a program that holds the values it
read as Python data, reasons in comments and computes the answer: no tool is called.
It suits policies that see the image (VLMs) and questions that need arithmetic over
values on a chart or a document. The function keeps our `execute_command(image)`
header so the sandbox runs it like every other family; `image` is simply unused.

The paper's zero-shot prompt is in a figure we do not have; this one states the same
contract (values extracted in code, rationales as comments, no API) and adds three
in-context examples, which the policy-iteration loop later replaces with solved ones.
"""

from __future__ import annotations

from envs.prompts.viper import PromptFamily

SYSTEM = (
    "You answer questions about an image by writing a Python program. Read the values "
    "you need off the image, write them into the program as data, explain each step in "
    "a comment, and compute the answer."
)

API = """# Rules:
# - No vision tools exist: write what you see in the image as lists, dicts and numbers.
# - Explain each step in a comment, then compute the answer with plain Python.
# - Return the answer as a short string (a word, a number, yes or no).
"""

# Every program starts with this line: it makes the policy write the data down first.
BODY_START = "    # Values read from the image.\n"

EXAMPLES = [
    (
        "How many red circles are there?",
        '''    # Values read from the image.
    objects = [("red", "circle"), ("blue", "square"), ("red", "circle"), ("red", "triangle")]
    # Count the objects that are both red and circles.
    count = sum(1 for color, shape in objects if color == "red" and shape == "circle")
    return str(count)
''',
    ),
    (
        "What is the difference between the highest and the lowest bar?",
        '''    # Values read from the image.
    bars = {"2019": 35.7, "2020": 15.4, "2021": 26.9, "2022": 8.7}
    # The highest bar is 35.7 and the lowest is 8.7.
    difference = max(bars.values()) - min(bars.values())
    return str(round(difference, 2))
''',
    ),
    (
        "Is the triangle to the left of the green square?",
        '''    # Values read from the image.
    # Horizontal centres in pixels, measured from the left edge.
    triangle_x = 40
    green_square_x = 180
    # Left of means a smaller horizontal centre.
    return "yes" if triangle_x < green_square_x else "no"
''',
    ),
]

POT = PromptFamily("pot", SYSTEM, API, EXAMPLES, body_start=BODY_START)
