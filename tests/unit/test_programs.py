"""Program extraction from raw model text."""

import pytest

from policies.programs import ProgramEnd, end_of_program, extract_program, program_from

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


# The stop rule: a program ends at a top-level line outside any open bracket or string.
OPEN_CONSTRUCTS = [
    # a multi-line call whose arguments sit at column 0
    "\n    x = image_patch.find(\n'circle',\n)\n    return x\n",
    # a list closed at column 0
    "\n    names = [\n'red',\n'blue'\n]\n    return names[0]\n",
    # a dict and nested brackets, with a '#' and a ')' inside strings
    "\n    d = {'a': ('#', ')'),\n'b': [1,\n2]}\n    return 'x'\n",
    # triple-quoted strings (both delimiters) with column-0 lines, quotes and brackets inside
    '\n    s = """first\n# not a comment\ndef not_a_def(:\n"""\n    return s\n',
    "\n    s = '''a ' quote\nand \" one\n)'''\n    return s\n",
    # a backslash continuation onto column 0
    "\n    y = 1 + \\\n2\n    return y\n",
    # a bracket inside a comment does not open anything; an escaped quote does not close
    "\n    # look (left\n    z = 'it\\'s'\n    return z\n",
    # blank lines inside the body
    "\n    a = 1\n\n\n    return a\n",
]


@pytest.mark.parametrize("body", OPEN_CONSTRUCTS)
def test_stop_rule_keeps_column0_lines_inside_open_brackets_and_strings(body):
    tail = "# Query: next question\ndef execute_command(image):\n    return 'no'\n"
    text = body + tail
    cut = end_of_program(text)
    assert cut == len(body) - 1, (cut, text[: cut or 0])
    assert extract_program(text[1:]) == "def execute_command(image):" + body.rstrip("\n") + "\n"


@pytest.mark.parametrize("body", OPEN_CONSTRUCTS)
def test_stop_rule_gives_the_same_cut_fed_piece_by_piece(body):
    text = body + "print(execute_command(None))\n"
    for size in (1, 2, 3, 7):
        scanner, fed = ProgramEnd(), 0
        for start in range(0, len(text), size):
            piece = text[start : start + size]
            kept = scanner.feed(piece)
            if kept is not None:  # (the newline itself may have come in an earlier piece)
                assert end_of_program(text) == len(body) - 1
                assert text[: fed + kept].rstrip("\n") == body.rstrip("\n")
                break
            fed += len(piece)
        else:
            raise AssertionError("the program never ended")


def test_stop_rule_ends_at_a_top_level_line_after_a_closed_bracket():
    assert end_of_program("\n    x = f(\n1)\nx = 2\n") == 14
    assert end_of_program("\n    s = 'open\nQ") == 14  # a one-line string cannot span lines
    assert end_of_program("\n    x = (\n") is None     # still open at the end: no cut
