"""The tool-API family (seed 002, section 3.2): one `ImageObject` that answers questions.

Instead of a perception API with boxes and crops, the policy gets an indirection: an
object wrapping the image with a semantic `answer(question)` and a `describe()`. The
policy's job shrinks to orchestration: splitting the question into simpler ones, asking
them, and combining the answers with Python (the paper's most common zero-shot failure
is arithmetic on the string answers, hence the explicit conversions in the examples).
Which model answers behind `ImageObject` is the tool backend's business (shapes-cv on
the embedded default).
"""

from __future__ import annotations

from envs.prompts.viper import PromptFamily

SYSTEM = (
    "You answer questions about an image by writing a Python program that asks simpler "
    "questions about the image and combines the answers."
)

# The interface exactly as seed 002 gives it; only the docstrings are shortened.
API = '''class ImageObject:
    """Holds an image and is able to answer questions about it."""
    def __init__(self, image): ...
    def answer(self, question: str) -> str: ...  # answers a question by inspecting the image
    def describe(self) -> str: ...  # describes the image
'''

BODY_START = "    image_object = ImageObject(image)\n"

EXAMPLES = [
    (
        "What color is the large triangle?",
        '''    image_object = ImageObject(image)
    return image_object.answer("What color is the large triangle?")
''',
    ),
    (
        "Are there more squares than circles?",
        '''    image_object = ImageObject(image)
    # Answers are strings: convert counts before comparing them.
    squares = int(image_object.answer("How many squares are there?"))
    circles = int(image_object.answer("How many circles are there?"))
    return "yes" if squares > circles else "no"
''',
    ),
    (
        "What is the sum of the two largest values in the chart?",
        '''    image_object = ImageObject(image)
    listed = image_object.answer("List every value in the chart, separated by commas.")
    values = sorted((float(v) for v in listed.split(",") if v.strip()), reverse=True)
    return str(values[0] + values[1])
''',
    ),
]

TOOL_API = PromptFamily("tool_api", SYSTEM, API, EXAMPLES, body_start=BODY_START)
