"""Static checks that turn a generated `execute_test` into a suite (before anything runs).

- A test that does not compile (or defines no `execute_test`) is `test_invalid`: its
  suite has no tests and no program is blamed for it.
- Asserts after the fourth test case are cut (the prompt asks for at most four).
- Asserts that cannot tell answers apart are dropped with their reason: always true
  by their form (`assert bool_to_yesno(...)` is a non-empty string, `isinstance(result,
  str)` holds for every answer, which is text here), never true (`isinstance(result,
  list)`), never reading the answer, repeating an earlier one, naming an undefined
  function, or refused by the sandbox's own policy.
"""

from __future__ import annotations

import ast
import builtins
import functools

from rewards.property_tests.types import MAX_TESTS, PropertySuite, Step

ENTRY = "execute_test"
PROGRAM_CALL = "solve_query"
# Calls whose value is a non-empty string whatever their arguments.
_STRING_CALLS = frozenset({"bool_to_yesno", "repr", "llm_query"})


@functools.lru_cache(maxsize=1)
def _known_names() -> frozenset:
    """Globals a test may read: the tools namespace and the sandbox's builtins."""
    from envs.execution.rules import DENIED_NAMES
    from envs.tools import build_namespace

    tools = set(build_namespace("shapes-cv"))
    safe = {n for n in dir(builtins) if n not in DENIED_NAMES and not n.startswith("_")}
    return frozenset(tools | safe | {"image", PROGRAM_CALL, "re"})


def _function_text(text: str) -> str:
    """The `def execute_test` block of a reply: from the def to its first unindented line."""
    start = text.find(f"def {ENTRY}")
    if start < 0:
        return ""
    lines = text[start:].splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        if line.strip() and not line[:1].isspace():
            break
        out.append(line)
    return "\n".join(out).rstrip() + "\n"


def _parse(src: str):
    """The module tree, or the SyntaxError. A reply cut by the token budget ends in half a
    line: that last line is dropped once (the budget's fault, not the test writer's)."""
    try:
        return ast.parse(src), None
    except SyntaxError as exc:
        lines = src.rstrip("\n").splitlines()
        if exc.lineno is not None and exc.lineno >= len(lines) and len(lines) > 1:
            try:
                return ast.parse("\n".join(lines[:-1]) + "\n"), None
            except SyntaxError:
                pass
        return None, f"does not compile: {exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, f"does not compile: {type(exc).__name__}"


def _calls_program(node) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == PROGRAM_CALL
               for n in ast.walk(node))


def _names_read(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _names_bound(node) -> set:
    """Names a statement binds for itself (targets, comprehension and lambda variables)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)) and hasattr(n, "name"):
            out.add(n.name)
    return out


def _reads_answer(node, answer_names: set) -> bool:
    return _calls_program(node) or bool(_names_read(node) & answer_names)


def _is_answer_text(node, answer_names: set) -> bool:
    """The answer itself, a character or a slice of it: text, whatever the program did."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return (isinstance(node, ast.Name) and node.id in answer_names) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == PROGRAM_CALL)


def _type_names(node) -> list:
    kinds = node.elts if isinstance(node, ast.Tuple) else [node]
    return [k.id if isinstance(k, ast.Name) else None for k in kinds]


def always_false(node, answer_names: set) -> str | None:
    """Why an assert's expression fails for every answer, or None: a type check of the
    answer text against types that are not str (answers are text here)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
            and len(node.args) == 2 and _is_answer_text(node.args[0], answer_names):
        names = _type_names(node.args[1])
        if None not in names and "str" not in names and "object" not in names:
            return f"answers are text here, so an isinstance check against {', '.join(names)} always fails"
    return None


def always_true(node, answer_names: set) -> str | None:
    """Why an assert's expression holds for every answer, or None."""
    if isinstance(node, ast.Constant):
        return "a constant that is always true" if node.value else None
    if isinstance(node, ast.JoinedStr):
        if any(isinstance(v, ast.Constant) and v.value for v in node.values):
            return "a non-empty string is always true"
        return None
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and node.elts:
        return "a non-empty container is always true"
    if isinstance(node, ast.Dict) and node.keys:
        return "a non-empty container is always true"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in _STRING_CALLS:
            return f"{node.func.id}(...) returns a non-empty string, which is always true"
        if node.func.id == "isinstance" and len(node.args) == 2 and _reads_answer(node.args[0], answer_names):
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if any(isinstance(k, ast.Name) and k.id == "str" for k in kinds):
                return "answers are always text here, so a str type check always passes"
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and _reads_answer(node.left, answer_names):
        # type(result) == str / type(result) is str
        left, right, op = node.left, node.comparators[0], node.ops[0]
        if isinstance(op, (ast.Eq, ast.Is)) and isinstance(left, ast.Call) and isinstance(left.func, ast.Name) \
                and left.func.id == "type" and isinstance(right, ast.Name) and right.id == "str":
            return "answers are always text here, so a str type check always passes"
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.Is)) \
            and ast.dump(node.left) == ast.dump(node.comparators[0]):
        return "compares a value with itself"
    if isinstance(node, ast.BoolOp):
        reasons = [always_true(v, answer_names) for v in node.values]
        if isinstance(node.op, ast.Or) and any(reasons):
            return next(r for r in reasons if r)
        if isinstance(node.op, ast.And) and all(reasons):
            return reasons[0]
    return None


def _same_check(a: str, b: str) -> bool:
    """Two asserts that test the same expression (messages aside)."""
    ta, tb = ast.parse(a).body[0], ast.parse(b).body[0]
    if isinstance(ta, ast.Assert) and isinstance(tb, ast.Assert):
        return ast.dump(ta.test) == ast.dump(tb.test)
    return a == b


def _policy_refusal(stmt) -> str | None:
    """The sandbox's static policy on this statement alone (run inside a function)."""
    from envs.execution.static_check import check_program

    body = "\n".join("    " + line for line in ast.unparse(stmt).splitlines())
    report = check_program(f"def {ENTRY}(image):\n{body}\n")
    return None if report.status is None else f"refused by the sandbox: {report.message}"


def _comments(src: str) -> dict:
    """line number -> the '# Test case n:' comment on the line above it, if any."""
    out, pending = {}, ""
    for i, line in enumerate(src.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            pending = stripped
        elif stripped:
            out[i] = pending
            pending = ""
    return out


def parse_test(text: str, question: str, test_source: str) -> PropertySuite:
    """The suite a generated test text gives (never raises on model output)."""
    suite = PropertySuite(question=question, test_source=test_source, text=text)
    src = _function_text(text)
    if not src:
        suite.invalid = f"no `def {ENTRY}(image)` function"
        return suite
    tree, error = _parse(src)
    if tree is None:
        suite.invalid = error
        return suite
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == ENTRY), None)
    if fn is None:
        suite.invalid = f"no `def {ENTRY}(image)` function"
        return suite
    comments = _comments(src)
    # The harness always binds `result`, even when the test forgets its assignment.
    answer_names: set = {"result"}
    result_names: list = []
    known = set(_known_names()) | {"result"}
    written = 0
    for stmt in fn.body:
        if isinstance(stmt, ast.Return) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue  # the trailing `return result`, docstrings
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) \
                and stmt.value.func.id == PROGRAM_CALL and all(isinstance(t, ast.Name) for t in stmt.targets):
            for t in stmt.targets:  # `result = solve_query(image)`: the harness binds the answer
                result_names.append(t.id)
                answer_names.add(t.id)
                known.add(t.id)
            continue
        source = ast.unparse(stmt)
        has_assert = any(isinstance(n, ast.Assert) for n in ast.walk(stmt))
        if not has_assert:
            if _reads_answer(stmt, answer_names):
                answer_names |= _names_bound(stmt)
            known |= _names_bound(stmt)
            suite.steps.append(Step("setup", source))
            continue
        written += 1
        reason = None
        if written > MAX_TESTS:
            reason = f"beyond the {MAX_TESTS}th test case"
        else:
            undefined = sorted(_names_read(stmt) - known - _names_bound(stmt))
            if undefined:
                reason = f"undefined name {undefined[0]!r}"
            elif isinstance(stmt, ast.Assert) and always_true(stmt.test, answer_names):
                reason = f"vacuous: {always_true(stmt.test, answer_names)}"
            elif isinstance(stmt, ast.Assert) and always_false(stmt.test, answer_names):
                reason = f"impossible: {always_false(stmt.test, answer_names)}"
            elif not _reads_answer(stmt, answer_names):
                reason = "does not read the answer (the same outcome for every program)"
            if not reason and any(s.kind == "test" and _same_check(s.source, source) for s in suite.steps):
                reason = "repeats an earlier test case"
            reason = reason or _policy_refusal(stmt)
        if reason:
            suite.dropped.append({"source": source, "reason": reason})
        else:
            suite.steps.append(Step("test", source, comments.get(stmt.lineno, "")))
    suite.result_names = result_names or ["result"]
    # Setup after the last test reads nothing the tests need.
    while suite.steps and suite.steps[-1].kind == "setup":
        suite.steps.pop()
    return suite
