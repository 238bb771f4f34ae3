"""Program extraction from raw model text."""

from policies.programs import end_of_program, extract_program
from policies.programs import program_from

BODY = '    p = ImagePatch(image)\n    return p.simple_query("x")\n'


def test_bare_body_is_cut_at_next_query_and_def():
    text = BODY + "\n# Query: next one\ndef execute_command(image):\n    return 'no'\n"
    assert extract_program(text) == "def execute_command(image):\n" + BODY


def test_code_fence_and_trailing_prose():
    text = "Sure!\n```python\ndef execute_command(image):\n    return 'yes'\n```\nThat works."
    assert extract_program(text) == "def execute_command(image):\n    return 'yes'\n"


def test_full_function_then_stray_call_or_second_def():
    text = "def execute_command(image):\n    x = 1\n\n    return x\nprint(execute_command(None))\ndef g():\n  pass"
    assert extract_program(text) == "def execute_command(image):\n    x = 1\n\n    return x\n"


def test_end_of_program_ignores_blank_and_indented_lines():
    assert end_of_program("\n    a\n\n    b\n") is None
    assert end_of_program("\n    a\n#Query") == 6


def test_program_from_joins_prompt_tail_and_completion():
    prompt = "# Query: q\ndef execute_command(image):\n    image_patch = ImagePatch(image)"
    program = program_from(prompt, "\n    return 'yes'\n\n# Query: other")
    assert program == "def execute_command(image):\n    image_patch = ImagePatch(image)\n    return 'yes'\n"
    # A completion with its own function stands alone; TRL's chat format is accepted too.
    assert program_from("no code here", "def execute_command(image):\n    return 1") == \
        "def execute_command(image):\n    return 1\n"
    assert program_from([{"role": "user", "content": prompt}],
                        [{"role": "assistant", "content": "\n    return 2"}]).endswith("    return 2\n")


def test_program_from_reads_multimodal_message_blocks():
    prompt = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text":
              "# Query: q\ndef execute_command(image):\n    image_patch = ImagePatch(image)"}]}]
    assert program_from(prompt, "\n    return 'no'") == \
        "def execute_command(image):\n    image_patch = ImagePatch(image)\n    return 'no'\n"
