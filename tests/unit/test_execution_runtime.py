"""The in-worker runtime, exercised in-process: these layers must hold even for
code that got past the static policy, so the tests compile programs directly."""
import collections
import math

import numpy as np
import pytest

from envs.execution import runtime
from envs.execution.static_check import PolicyReport


def compiled(source, mutates=False):
    return PolicyReport(None, code=compile(source, runtime.PROGRAM_FILENAME, "exec"),
                        mutates_attributes=mutates)


def run(source, namespace=None, timeout=1.0):
    from envs.execution.static_check import check_program

    report = check_program(source)
    if report.status is not None:  # these tests run what the policy would refuse, too
        report = compiled(source)
    return runtime.run_program(report, dict(namespace or {}), None, "execute_command",
                               runtime.SoftTimer(), timeout, None)


@pytest.mark.parametrize("statement", [
    "import os", "import ctypes", "from os import system", "import numpy.f2py",
    "from numpy import f2py", "from dataclasses import sys",
])
def test_the_runtime_import_guard_holds_without_the_static_check(statement):
    out = run(f"def execute_command(image):\n    {statement}\n")
    assert out["status"] == "runtime_error"
    assert "ImportError" in out["error"], out


def test_imports_give_read_only_views_without_private_or_unlisted_parts():
    out = run("import numpy as np\nimport dataclasses\n"
              "def execute_command(image):\n    return [np.linalg.norm([3, 4]), dataclasses]\n")
    assert out["status"] == "ok" and out["answer"] == "5"
    view = runtime.ModuleView(np)
    assert view.linalg.norm is np.linalg.norm
    for name in ("_core", "ctypeslib", "f2py", "load", "lib"):
        with pytest.raises(AttributeError):
            getattr(view, name)
    with pytest.raises(AttributeError, match="read-only"):
        view.pi = 3
    import dataclasses

    with pytest.raises(AttributeError, match="not available"):
        getattr(runtime.ModuleView(dataclasses), "keyword")  # a module not on the allow-list
    assert isinstance(getattr(runtime.ModuleView(dataclasses), "re"), runtime.ModuleView)
    assert "sys" not in dir(runtime.ModuleView(dataclasses))


def test_star_import_exposes_public_names_only():
    out = run("from math import *\ndef execute_command(image):\n    return floor(pi)\n")
    assert out["status"] == "ok" and out["answer"] == "3"


def test_builtins_are_a_restricted_fresh_copy():
    a = runtime.make_builtins(runtime.CappedOutput())
    b = runtime.make_builtins(runtime.CappedOutput())
    assert a is not b and a["print"] is not b["print"]
    for name in ("open", "eval", "exec", "compile", "globals", "vars", "input", "breakpoint"):
        assert name not in a
    assert a["__import__"] is runtime._guarded_import
    with pytest.raises(AttributeError):
        a["getattr"]((), "__class__")
    assert a["getattr"]((1, 2), "count")(1) == 1


def test_capped_output_keeps_the_head_and_counts_the_rest():
    out = runtime.CappedOutput(cap=10)
    out.print("abcdef", "ghijkl")
    out.print("more")
    text = out.text()
    assert text.startswith("abcdef ghi") and "output truncated" in text


def test_swallowed_timeouts_still_count_as_timeouts():
    # The soft timer re-fires, so this program catches it three times and then
    # returns normally; it still ran past its limit.
    out = run("def spin():\n    while True:\n        pass\n\n"
              "def execute_command(image):\n    n = 0\n    while n < 3:\n        try:\n"
              "            spin()\n        except BaseException:\n            n += 1\n"
              "    return 'finished'\n", timeout=0.2)
    assert out["status"] == "timeout" and out["answer"] is None
    assert out["duration_s"] < 1.0


def test_attribute_writes_are_allowed_only_on_what_the_program_made():
    shared = collections.OrderedDict()  # stands for any library object
    out = run("class Box:\n    pass\n"
              "def helper():\n    return 1\n"
              "def execute_command(image):\n    b = Box()\n    b.size = 3\n    b.size += 1\n"
              "    helper.calls = 2\n    Box.kind = 'box'\n    (b.x, b.y) = (1, 2)\n    del b.x\n"
              "    return [b.size, helper.calls, Box.kind, b.y]\n")
    assert out["status"] == "ok" and out["answer"] == "4", out
    for statement in ("f = shared; f.extra = 1", "setattr(shared, 'extra', 1)",
                      "f = math.sqrt; f.extra = 1", "f = shared; del f.popitem",
                      "import functools\n    functools.update_wrapper(shared, len)"):
        out = run(f"def execute_command(image):\n    {statement}\n",
                  {"shared": shared, "math": math})
        assert out["status"] == "runtime_error" and "only objects they made" in out["error"], \
            (statement, out)
    assert not hasattr(shared, "extra") and not hasattr(math.sqrt, "extra")


def test_attribute_names_are_copied_before_they_are_checked():
    """A str subclass that claims not to start with '_' is checked as what it holds."""
    out = run("class Liar(str):\n    def startswith(self, *a):\n        return False\n"
              "def execute_command(image):\n    return getattr(image, Liar('__class__'))\n")
    assert out["status"] == "runtime_error" and "__class__" in out["error"], out


def test_program_line_numbers_point_at_the_failing_statement():
    out = run("def helper():\n    return {}['missing']\n\ndef execute_command(image):\n"
              "    return helper()\n")
    assert out["status"] == "runtime_error"
    assert out["error"] == "Error: KeyError: 'missing' (line 2)"
    assert math.isfinite(out["duration_s"])
