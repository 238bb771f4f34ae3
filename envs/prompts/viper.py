"""The ViperGPT-style API prompt, condensed for small CPU policies.

ViUniT's Listing 1 documents every ImagePatch method with docstrings and examples
(about 2,500 tokens). At ~80 tokens/s prefill-bound decoding on two cores, that text
alone would take most of an iteration, so the default family keeps the signatures,
the coordinate convention and a handful of in-context examples in Listing 3's
`# Query:` / `def execute_command(image):` form.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.programs import HEADER

# The body's first line is given too: a 135M policy otherwise often drops out of the
# function at once, and nearly every program starts with this line anyway.
BODY_START = "    image_patch = ImagePatch(image)\n"

API = '''class ImagePatch:
    # A crop of the image. Coordinates have the origin at the bottom-left:
    # left < right, lower < upper; horizontal_center, vertical_center, area.
    def find(self, object_name: str) -> list["ImagePatch"]: ...  # e.g. "red circle", "square"
    def exists(self, object_name: str) -> bool: ...
    def verify_property(self, object_name: str, attribute: str) -> bool: ...
    def simple_query(self, question: str) -> str: ...  # e.g. "What color is this?"
def bool_to_yesno(value: bool) -> str: ...
'''

EXAMPLES = [
    (
        "Is there a blue square?",
        '''    image_patch = ImagePatch(image)
    return bool_to_yesno(image_patch.exists("blue square"))
''',
    ),
    (
        "How many red circles are there?",
        '''    image_patch = ImagePatch(image)
    return str(len(image_patch.find("red circle")))
''',
    ),
    (
        "What color is the triangle left of the green square?",
        '''    image_patch = ImagePatch(image)
    squares = image_patch.find("green square")
    triangles = image_patch.find("triangle")
    for triangle in triangles:
        if squares and triangle.horizontal_center < squares[0].horizontal_center:
            return triangle.simple_query("What color is this?")
    return triangles[0].simple_query("What color is this?")
''',
    ),
]

SYSTEM = "You write Python programs that answer questions about an image using the API below."


@dataclass
class PromptFamily:
    """How a question becomes a chat prompt whose completion is a program body."""

    name: str
    system: str
    api: str
    examples: list[tuple[str, str]]
    header: str = HEADER
    body_start: str = BODY_START

    def user_text(self, question: str, shots: list[tuple[str, str]] | None = None) -> str:
        parts = [self.api]
        for q, body in list(self.examples) + list(shots or []):
            parts.append(f"# Query: {q}\n{self.header}{body}")
        # The question comes last so every prompt shares the longest possible prefix.
        parts.append(f"# Query: {question}")
        return "\n".join(parts)

    chat: bool = False

    def render(self, tokenizer, question: str, shots=None) -> str:
        if not self.chat:
            # Plain continuation of the in-context pattern: with a chat turn in between,
            # the 135M model mostly leaves the function body at once.
            return f"# {self.system}\n{self.user_text(question, shots)}\n{self.program_prefix}"
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user_text(question, shots)},
        ]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        # The assistant turn starts with the function header, so the completion is the body.
        return text + self.program_prefix

    # Where generation stops (policies.generation.stop_rule): None is the end of the
    # program, its first top-level line outside any open bracket or string
    # (policies.programs.ProgramEnd); a regex string ends free text (scripts).
    stop: str | None = None

    def display(self, program: str) -> str:
        """How an executed program is shown back to the policy (refinement prompts)."""
        return program

    @property
    def program_prefix(self) -> str:
        """What the prompt ends with and every program starts with.

        It stops before the line break: the tokenizer merges a newline with the next
        line's indent ('\\n   ' is one token), so a prompt ending in '\\n' would force
        a token split the model has rarely seen.
        """
        return self.header + self.body_start.rstrip("\n")


VIPER_COMPACT = PromptFamily("viper_compact", SYSTEM, API, EXAMPLES)
