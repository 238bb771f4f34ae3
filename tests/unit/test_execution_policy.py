"""Static policy, answer conversion and result validation: no worker processes."""
import numpy as np
import pytest

from envs.execution import ExecutionResult, to_answer
from envs.execution.policy import check_program
from envs.execution.results import describe_exception

ENTRY = "def execute_command(image):\n    {}\n"


def verdict(body_or_program):
    source = body_or_program if "\n" in body_or_program else ENTRY.format(body_or_program)
    return check_program(source)


@pytest.mark.parametrize("source", [
    "import os",
    "import subprocess",
    "import ctypes",
    "import socket",
    "import signal",
    "import sys",
    "import importlib",
    "from os import system",
    "import numpy.f2py",
    "from numpy import ctypeslib",
    "from numpy import load",
    "from . import x",
    "import numpy as np\nnp.ctypeslib",
    "import numpy as np\nnp.load('/etc/passwd')",
    "import numpy as np\nnp.loadtxt('/etc/passwd')",
    "import dataclasses\ndataclasses.sys.modules",
    "import typing\ntyping.sys",
    "import operator\noperator.attrgetter('x')",
    "return ().__class__.__bases__[0].__subclasses__()",
    "return execute_command.__globals__",
    "return image.__class__",
    "return getattr(image, '__class__')",
    "return (x for x in []).gi_frame.f_back.f_globals",
    "return '{0.__class__}'.format(1)",
    "image.tofile('/tmp/x')",
    "return open('/etc/passwd').read()",
    "return eval('1+1')",
    "exec('x = 1')",
    "return compile('1', 'f', 'eval')",
    "return globals()",
    "return vars()",
    "return __import__('os')",
    "return __builtins__",
    "exit(1)",
    "ImagePatch.find = lambda self, name: []",
    "setattr(ImagePatch, 'find', None)",
    "import math\nmath.pi = 3",
    "del np.array",
])
def test_forbidden_constructs_are_refused_with_a_reason(source):
    report = verdict(source)
    assert report.status == "forbidden", source
    assert report.message and report.code is None


@pytest.mark.parametrize("source", [
    "import math\nimport numpy as np\nfrom collections import Counter\nreturn math.sqrt(4)",
    "from numpy import linalg\nreturn linalg.norm([3, 4])",
    "import numpy.linalg\nreturn 1",
    "patches = ImagePatch(image).find('red circle')\nreturn len(patches) > 0",
    "return '{} {}'.format(1, 2)",
    "return getattr(image, 'shape')",
    "return f'{image.shape}'",
])
def test_ordinary_programs_pass(source):
    body = "\n    ".join(source.split("\n"))
    report = check_program(ENTRY.format(body))
    assert report.status is None, report.message
    assert report.code is not None


def test_programs_may_set_attributes_on_their_own_objects():
    program = (
        "class Box:\n    pass\n"
        "def execute_command(image):\n    b = Box()\n    b.size = 3\n    return b.size\n"
    )
    report = check_program(program)
    assert report.status is None
    assert report.mutates_attributes  # so the worker re-checks shared classes afterwards


def test_syntax_errors_are_compile_errors_with_line():
    report = check_program("def execute_command(image):\n    return (\n")
    assert report.status == "compile_error"
    assert "SyntaxError" in report.message
    assert report.line == 2


def test_absurdly_long_programs_are_refused_before_parsing():
    report = check_program("x = 1\n" * 50_000)
    assert report.status == "forbidden" and "longer than" in report.message


def test_null_bytes_and_deep_nesting_do_not_crash_the_checker():
    assert check_program("x = 1\0").status == "compile_error"
    assert check_program("x = " + "(" * 5000 + ")" * 5000).status == "compile_error"


@pytest.mark.parametrize("value,expected", [
    (["Red", "blue"], "red"),
    ([], "no"),
    ((True,), "yes"),
    (True, "yes"),
    (False, "no"),
    (np.bool_(True), "yes"),
    (3, "3"),
    (3.0, "3"),
    (2.5, "2.5"),
    (np.int64(7), "7"),
    (np.float32(0.5), "0.5"),
    (np.array([4, 5]), "4"),
    ("  Left Side \n", "left side"),
    (None, None),
    (float("nan"), "nan"),
])
def test_to_answer_follows_viper_rules(value, expected):
    assert to_answer(value) == expected


def test_to_answer_uses_str_for_other_objects():
    class Patch:
        def __str__(self):
            return "ImagePatch(1, 2, 3, 4)"

    assert to_answer(Patch()) == "imagepatch(1, 2, 3, 4)"
    assert len(to_answer("x" * 10_000)) <= 1000


GOOD_REPLY = {"status": "ok", "answer": "yes", "error": None, "duration_s": 0.5,
              "raw_type": "str", "stdout": ""}


@pytest.mark.parametrize("change", [
    {"status": "pwned"}, {"status": "protocol_error"}, {"answer": 3}, {"duration_s": "nan"},
    {"duration_s": float("nan")}, {"duration_s": -1.0}, {"duration_s": True},
    {"raw_type": 5}, {"stdout": None}, {"extra": 1}, {"error": ["x"]},
])
def test_a_malformed_reply_is_refused_whole(change):
    assert ExecutionResult.from_reply(GOOD_REPLY | change) is None
    assert ExecutionResult.from_reply({k: v for k, v in GOOD_REPLY.items() if k != "stdout"}) \
        is None
    assert ExecutionResult.from_reply(["not", "a", "dict"]) is None


def test_a_valid_reply_is_capped_and_made_encodable():
    reply = ExecutionResult.from_reply(GOOD_REPLY | {"answer": "a\ud800b", "stdout": "x" * 10**6})
    assert reply.status == "ok" and reply.answer == "a?b"
    reply.answer.encode("utf-8")
    assert len(reply.stdout) <= 4096 + 100
    assert set(reply.to_dict()) == {"status", "answer", "error", "duration_s", "raw_type", "stdout"}


def test_error_format_matches_reprompting_style():
    assert describe_exception(ZeroDivisionError("division by zero"), 3) == \
        "Error: ZeroDivisionError: division by zero (line 3)"
    assert describe_exception(MemoryError()) == "Error: MemoryError"
    assert describe_exception(KeyError("colour")) == "Error: KeyError: 'colour'"
