"""Static policy, answer conversion and result validation: no worker processes."""
import numpy as np
import pytest

from envs.execution import ExecutionResult, to_answer
from envs.execution.static_check import check_program
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


# Issue 25, class 1: text that makes the parser, the AST builder or the checker raise
# something other than SyntaxError (MemoryError from CPython's parser stack, RecursionError,
# UnicodeError, ...), in the program and in the annotation strings the checker parses itself.
HOSTILE_TEXTS = {
    "annotation: unary chain (MemoryError in the parser)": "'" + "-" * 50_000 + "1'",
    "annotation: not chain": "'" + "not " * 20_000 + "1'",
    "annotation: lambda chain": "'" + "lambda: " * 10_000 + "1'",
    "annotation: short but deep unary chain": "'" + "-" * 150 + "1'",
    "annotation: short but deep brackets": "'" + "[" * 150 + "]" * 150 + "'",
    "annotation: binop chain": "'" + "1+" * 40_000 + "1'",
    "annotation: huge literal": "'" + "9" * 5000 + "'",
    "annotation: lone surrogate": "'\ud800'",
    "annotation: null byte": "'a\x00b'",
}


@pytest.mark.parametrize("name", HOSTILE_TEXTS)
def test_hostile_annotation_strings_are_the_programs_own_status(name):
    source = f"def execute_command(image: {HOSTILE_TEXTS[name]}):\n    return 1\n"
    report = check_program(source)
    assert report.status in ("compile_error", "forbidden") and report.message, report


@pytest.mark.parametrize("body", [
    "return " + "-" * 90_000 + "1",
    "return " + "not " * 20_000 + "1",
    "return " + "1+" * 40_000 + "1",
    "return image" + ".x" * 40_000,
    "return f" + "()" * 30_000,
    "return " + "[" * 90 + "1" + "]" * 90 + " + " + "(" * 90 + "1" + ")" * 90,
    "return " + "9" * 99_000,
    "return '\ud800'",
    "return b'\\x00' + '\x00'",
])
def test_hostile_program_texts_are_the_programs_own_status(body):
    report = check_program(ENTRY.format(body))
    assert report.status in ("compile_error", "forbidden") or report.code is not None, report


def test_a_deep_tree_is_refused_before_the_recursive_checker_runs():
    # 95 brackets pass CPython's own limit (200) but nest the AST past the budget
    # only together with calls; the walk that measures depth does not recurse.
    from envs.execution.rules import tree_depth
    import ast

    assert tree_depth(ast.parse("f(" * 150 + ")" * 150), 400) is False
    assert tree_depth(ast.parse("-" * 600 + "1"), 400) is True


def test_any_exception_inside_the_checker_is_a_compile_error(monkeypatch):
    """Whatever a fuzzer finds next, the catch-all turns it into this program's status."""
    from envs.execution import static_check

    def explode(source, filename):
        raise OverflowError("somewhere deep in the checker")
    monkeypatch.setattr(static_check, "_check", explode)
    report = static_check.check_program(ENTRY.format("return 1"))
    assert report.status == "compile_error" and "OverflowError" in report.message


def test_honest_annotations_still_pass():
    source = ("from typing import List\n"
              "def execute_command(image: 'np.ndarray') -> 'List[tuple[int, str]]':\n"
              "    x: 'dict[str, list[int]]' = {}\n    return 1\n")
    assert check_program(source).status is None


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


# ---------------------------------------------------------------- every node of the grammar

def _grammar_node_types():
    """The concrete node types of the grammar this interpreter parses (its _ast module)."""
    import _ast

    classes = [getattr(_ast, n) for n in dir(_ast)]
    classes = [c for c in classes if isinstance(c, type) and issubclass(c, _ast.AST)]
    return sorted(c.__name__ for c in classes if not c.__subclasses__() or c is _ast.Constant)


def test_the_policy_has_a_rule_for_every_node_type_of_the_grammar():
    from envs.execution.syntax import NODE_RULES

    missing = [name for name in _grammar_node_types() if name not in NODE_RULES]
    assert not missing, f"node types the static policy has no rule for: {missing}"
    assert len(_grammar_node_types()) > 100


def test_a_node_type_without_a_rule_is_refused():
    import ast

    from envs.execution.syntax import Checker

    class Future(ast.expr):  # stands for syntax a newer Python adds
        _fields = ()

    tree = ast.parse("def execute_command(image):\n    return 1\n")
    tree.body[0].body[0].value = Future(lineno=2, col_offset=11)
    checker = Checker(tree)
    checker.visit(tree)
    assert checker.refusal and "Future" in checker.refusal[0]


@pytest.mark.parametrize("source", [
    "class C:\n    def __getattr__(self, name):\n        return 1\n",
    "class C:\n    def __del__(self):\n        pass\n",
    "class C:\n    def __array_interface__(self):\n        pass\n",
    "class C:\n    def __reduce_ex__(self, p):\n        pass\n",
    "class C:\n    __slots__ = ()\n",
    "def __getattr__(name):\n    return 1\n",
    "try:\n    pass\nexcept Exception as __builtins__:\n    pass\n",
    "import math as __builtins__\n",
    "from math import pi as __loader__\n",
    "def f():\n    global __builtins__\n",
    "match 1:\n    case object(__class__=c):\n        pass\n",
    "match 1:\n    case [*__rest__]:\n        pass\n",
    "match 1:\n    case {**__rest__}:\n        pass\n",
    "match 1:\n    case __x__:\n        pass\n",
    "def f(__builtins__):\n    pass\n",
    "f(__class__=1)\n",
    "def f(x: '().__class__'):\n    pass\n",
    "def f() -> 'import os':\n    pass\n",
    "x: '__import__(\"os\")' = 1\n",
    "def f(x: list['exec']):\n    pass\n",
])
def test_dunders_are_refused_wherever_the_grammar_names_something(source):
    report = check_program(source)
    assert report.status == "forbidden", source


@pytest.mark.parametrize("source", [
    "class Box:\n    def __init__(self, v):\n        self.v = v\n"
    "    def __repr__(self):\n        return 'Box'\n    def __lt__(self, other):\n"
    "        return self.v < other.v\n",
    "def f(x: 'int') -> 'List[int]':\n    return [x]\n",
    "match [1, 2]:\n    case [a, *rest]:\n        pass\n",
    "try:\n    pass\nexcept ValueError as err:\n    pass\n",
])
def test_ordinary_uses_of_the_same_syntax_pass(source):
    assert check_program(source).status is None


@pytest.mark.parametrize("fmt,ok", [
    ("{} {0} {x} {x[0]} {x.real:>{w}}", True),
    ("{0.__class__}", False),
    ("{x._private}", False),
    ("{0:{1.__class__}}", False),
    ("{x.gi_frame}", False),
])
def test_format_strings_are_checked_where_they_are_used(fmt, ok):
    from envs.execution.guards import check_format

    if ok:
        assert check_format(fmt) == fmt
    else:
        with pytest.raises(AttributeError):
            check_format(fmt)


def test_class_namespaces_from_factories_are_checked():
    from envs.execution.rules import namespace_refusal

    assert namespace_refusal(["__module__", "__qualname__", "__init__", "run", "_x"]) is None
    for bad in ("__array_interface__", "__getattr__", "__del__", "__reduce__", "__slots__"):
        assert namespace_refusal([bad]), bad

    class Key(str):
        pass

    assert namespace_refusal([Key("x")])


def test_the_lru_is_bounded_in_bytes_and_entries():
    from envs.common.lru import LRU

    lru = LRU(max_bytes=100, max_items=5)
    for i in range(10):
        lru.put(i, str(i), 30)
    assert lru.bytes <= 100 and len(lru) == 3 and lru.get(9) == "9" and lru.get(0) is None
    lru.put("huge", "x", 1000)  # the newest entry stays, whatever its size
    assert lru.get("huge") == "x" and len(lru) == 1


def test_the_compilers_warnings_about_a_program_stay_out_of_the_trainers_log(recwarn):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as under python -W error
        report = check_program(ENTRY.format("assert (1, 'always true')\n    return '\\-'"))
    assert report.status is None
    assert not [w for w in recwarn if issubclass(w.category, (SyntaxWarning, DeprecationWarning))]
