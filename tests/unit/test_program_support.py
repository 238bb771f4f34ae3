"""bench/program_support.py's program forms: what the support diagnostic groups programs by."""

from bench.program_support import ONE_LINE, form, is_one_line

LOOP = '''def execute_command(image):
    image_patch = ImagePatch(image)
    for t in image_patch.find("triangle"):
        if t.horizontal_center < 5:
            return t.simple_query("What color is this?")
    return str(len(image_patch.find("square")))
'''


def test_form_names_the_tool_calls_and_the_control_flow():
    assert form(LOOP) == "find+len+simple_query [if,loop]"
    assert form("def execute_command(image):\n    return bool_to_yesno(ImagePatch(image).exists('x'))\n") \
        == "bool_to_yesno+exists"
    assert form("def execute_command(image):\n    return 'yes'\n") == "no call"
    assert form("def execute_command(image):\n    return (\n") == "does not parse"


def test_the_one_line_program_is_recognised_and_its_near_misses_are_not():
    q = "Is the red square above the circle?"
    assert is_one_line(ONE_LINE.format(question=q), q)
    assert is_one_line(f"def execute_command(image):\n    image_patch = ImagePatch(image)\n"
                       f"    return image_patch.simple_query({q.upper()!r})\n", q)
    assert not is_one_line(ONE_LINE.format(question="What color is this?"), q)  # another question
    assert not is_one_line(LOOP, q)
    assert not is_one_line(f"def execute_command(image):\n    p = ImagePatch(image)\n    p.find('x')\n"
                           f"    return p.simple_query({q!r})\n", q)  # computes something else too
