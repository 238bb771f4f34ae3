"""Issue 25, class 3: nothing mutable that library classes and modules share between
programs is left unsealed or unverified.

The walk here is the test's own (it does not reuse library_state.walk): from every
allowed module, through every public class along its MRO, public attributes of shared
objects and the items of containers. After the zygote's ``SharedState`` is built, every
array it meets must be read-only and every mutable container or shared object's dict
must be among those the child verifies after each program. It runs in a subprocess:
sealing changes numpy's classes for the rest of the process.
"""
import json
import subprocess
import sys
import textwrap

# Justified exceptions, "path": "why it cannot change what another program computes".
# Empty: every writeable array and mutable container found is sealed or verified.
ALLOWED_LEFT: dict[str, str] = {}

WALK = textwrap.dedent('''
    import collections, importlib, json, types
    import numpy as np
    from envs.execution.library_state import SharedState
    from envs.execution.rules import ALLOWED_MODULES, attribute_refusal
    from envs.tools import build_namespace

    namespace = build_namespace("shapes-cv")
    state = SharedState(namespace)
    verified = {id(live) for _, live, _ in state.watched}
    left, arrays, seen = [], 0, set()

    def public(name):
        return isinstance(name, str) and attribute_refusal(name) is None

    def visit(obj, path, depth):
        global arrays
        if depth > 4 or id(obj) in seen or isinstance(obj, (types.ModuleType, str, bytes, int,
                                                            float, type(None))):
            return
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            arrays += 1
            if obj.flags.writeable:
                left.append(path + " (writeable array)")
            elif id(obj) not in verified:
                left.append(path + " (array not verified)")
            return
        if isinstance(obj, (list, dict, set, bytearray, collections.deque)):
            if id(obj) not in verified:
                left.append(path + f" (mutable {type(obj).__name__})")
            items = obj.items() if isinstance(obj, dict) else (
                enumerate(obj) if isinstance(obj, (list, collections.deque)) else ())
            for key, value in items:
                visit(value, f"{path}[{key!r}]", depth + 1)
            return
        if isinstance(obj, tuple):
            for i, value in enumerate(obj):
                visit(value, f"{path}[{i}]", depth + 1)
            return
        if isinstance(obj, type):
            for klass in obj.__mro__:
                for name, value in vars(klass).items():
                    if public(name):
                        visit(getattr(value, "__func__", value), f"{path}.{name}", depth + 1)
            return
        attributes = getattr(obj, "__dict__", None)
        if type(attributes) is dict and not isinstance(obj, (types.FunctionType,
                                                             types.MethodType)):
            if type(obj).__flags__ & (1 << 9) and attributes and id(attributes) not in verified:
                left.append(path + f" (state of a shared {type(obj).__name__})")
            for name, value in list(attributes.items()):
                if public(name):
                    visit(value, f"{path}.{name}", depth + 1)

    for module_name in sorted(ALLOWED_MODULES):
        module = importlib.import_module(module_name)
        for name in dir(module):
            if public(name):
                value = getattr(module, name)
                if type(value) in (dict, list, set, bytearray, np.ndarray):
                    seen.add(id(value))  # module views hand out copies of these
                    for key, item in (value.items() if type(value) is dict else
                                      enumerate(value) if type(value) is list else ()):
                        visit(item, f"{module_name}.{name}[{key!r}]", 1)
                else:
                    visit(value, f"{module_name}.{name}", 0)
    for name, value in namespace.items():
        visit(value, f"tools.{name}", 0)
    print(json.dumps({"left": left, "arrays": arrays, "sealed": state.sealed,
                      "watched": len(state.watched)}))
''')


def test_every_shared_array_and_container_is_sealed_or_verified():
    out = subprocess.run([sys.executable, "-c", WALK], capture_output=True, text=True,
                         timeout=300, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    left = [p for p in found["left"] if p.split(" (")[0] not in ALLOWED_LEFT]
    assert not left, "shared mutable state neither sealed nor verified:\n" + "\n".join(left)
    # The walk met the members of the class the issue named, so it can fail.
    assert found["arrays"] >= 12
    assert {"numpy.polynomial.Polynomial.window", "numpy.polynomial.Chebyshev.domain"} \
        <= set(found["sealed"])


def test_a_change_to_a_shared_container_is_seen_by_identity():
    """The comparison after each program: in-place writes, additions, removals, a flag
    flipped back, all without calling anything the program wrote."""
    import numpy as np

    from envs.execution.library_state import _same, _snapshot

    for original, change in [
        ([1, 2], lambda c: c.append(3)),
        ({"a": 1}, lambda c: c.__setitem__("a", 2)),
        ({"a": 1}, lambda c: (c.pop("a"), c.__setitem__("b", 1))),
        ({1, 2}, lambda c: (c.discard(1), c.add(3))),
        (bytearray(b"ab"), lambda c: c.__setitem__(0, 0)),
        (np.zeros(2), lambda c: c.__setitem__(0, 1)),
        (np.zeros(2), lambda c: c.setflags(write=False)),
    ]:
        copy = _snapshot(original)
        assert _same(original, copy)
        change(original)
        assert not _same(original, copy), original


def test_the_fast_check_after_each_program_sees_what_the_full_one_sees(tmp_path):
    """``unchanged`` (run after every program) against ``changed`` (which names paths), on
    a shared object whose method writes its own state: numpy.ma's print option."""
    code = textwrap.dedent('''
        import sys
        import numpy as np
        from envs.execution.library_state import SharedState
        state = SharedState({})
        if sys.argv[1] == "ids":
            state._stamps = None  # the interpreter keeps no dict version stamps
        before = (state.unchanged(), state.changed())
        np.ma.masked_print_option.enable(True)  # the value it already has: no change
        same = state.unchanged()
        np.ma.masked_print_option.set_display("X")
        after = (state.unchanged(), state.changed())
        print(before, same, after)
    ''')
    for way in ("stamps", "ids"):
        out = subprocess.run([sys.executable, "-c", code, way], capture_output=True, text=True,
                             timeout=300, check=True).stdout.strip().splitlines()[-1]
        assert out == "(True, []) True (False, ['numpy.ma.masked_print_option'])", (way, out)
