"""EVAL without ``eval``: a small expression evaluator over an AST allow-list.

VisProg pastes each ``{VAR}``'s value into the expression text and calls Python's
``eval``.  Here the expression is parsed once with ``ast`` and walked by hand; only
these nodes are evaluated, everything else is refused before anything runs:

- constants (str, int, float, bool, None), variables, list and tuple displays;
- ``and`` / ``or`` / ``not``, unary ``-`` / ``+``;
- ``+ - * / // %`` (``*`` on numbers only, so no string or list can be blown up);
- comparisons ``== != < <= > >= in not in`` (chained too), ``a if c else b``;
- ``x[i]`` with a constant integer index;
- calls of ``len all any min max sum abs round int float str set sorted`` with
  positional arguments.

Coercions (VisProg's): a variable whose value is "yes"/"no" reads as True/False and a
numeric string as a number; string literals 'yes'/'no' in the expression read as
True/False too, so ``{A} == 'yes'`` means what it says.  A boolean result is returned
as "yes"/"no".
"""
from __future__ import annotations

import ast
import operator
import re

MAX_CHARS = 1000
MAX_NODES = 200
FUNCTIONS = {"len": len, "all": all, "any": any, "min": min, "max": max, "sum": sum,
             "abs": abs, "round": round, "int": int, "float": float, "str": str,
             "set": lambda *a: sorted(set(*a), key=repr), "sorted": sorted}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
        ast.NotIn: lambda a, b: a not in b}
_ALLOWED = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.List, ast.Tuple, ast.BoolOp,
            ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp, ast.Compare,
            ast.IfExp, ast.Subscript, ast.Call, *_BIN, *_CMP)
_BRACED = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?\Z")


class EvalError(ValueError):
    """An EVAL expression that is malformed, outside the allow-list, or fails."""


def coerce(value):
    """VisProg's reading of a variable: yes/no -> bool, numeric text -> number."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("yes", "no"):
            return text == "yes"
        if _NUMBER.match(text):
            number = float(text)
            return int(number) if number.is_integer() and "." not in text else number
        return value
    if isinstance(value, (list, tuple)):
        return [coerce(v) for v in value]
    return value


def compile_expression(expr: str) -> ast.Expression:
    """The checked syntax tree of ``expr`` ({NAME} placeholders become names);
    raises EvalError naming the first refused construct."""
    if not isinstance(expr, str):
        raise EvalError(f"EVAL needs an expression string, got {type(expr).__name__}")
    if len(expr) > MAX_CHARS:
        raise EvalError(f"the expression is longer than {MAX_CHARS} characters")
    text = _BRACED.sub(r"\1", expr).strip()
    if not text:
        raise EvalError("the expression is empty")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise EvalError(f"malformed expression {expr!r}: {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError) as exc:  # null bytes, absurd nesting
        raise EvalError(f"the expression cannot be parsed ({type(exc).__name__})") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise EvalError(f"the expression has more than {MAX_NODES} parts")
    for node in nodes:
        if not isinstance(node, _ALLOWED):
            raise EvalError(f"{type(node).__name__} is not allowed in EVAL expressions")
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS):
                name = node.func.id if isinstance(node.func, ast.Name) else "this call"
                raise EvalError(f"{name}() is not allowed in EVAL; allowed functions: "
                                f"{', '.join(sorted(FUNCTIONS))}")
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                raise EvalError("EVAL calls take positional arguments only")
        if isinstance(node, ast.Subscript) and not _constant_index(node.slice):
            raise EvalError("EVAL indexes with a constant integer only, e.g. {ANSWER0}[1]")
        if isinstance(node, ast.Constant) and not isinstance(
                node.value, (str, int, float, bool, type(None))):
            raise EvalError(f"the constant {node.value!r} is not allowed in EVAL")
    return tree


def _constant_index(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def names_in(tree: ast.Expression) -> list[str]:
    return list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                              and not _is_function(tree, n)))


def _is_function(tree, name_node) -> bool:
    return any(isinstance(n, ast.Call) and n.func is name_node for n in ast.walk(tree))


def expression_variables(expr: str) -> list[str]:
    """Variables an expression reads ({NAME} or bare NAME); for an expression that does
    not parse, the {NAME} placeholders alone."""
    try:
        return names_in(compile_expression(expr))
    except EvalError:
        return list(dict.fromkeys(_BRACED.findall(expr if isinstance(expr, str) else "")))


def evaluate(expr: str, variables: dict):
    """Value of ``expr`` with ``variables`` (raw values; coerced here)."""
    tree = compile_expression(expr)
    env = {k: coerce(v) for k, v in variables.items()}
    try:
        value = _eval(tree.body, env)
    except EvalError:
        raise
    except (TypeError, ValueError, ZeroDivisionError, IndexError, KeyError,
            OverflowError) as exc:
        raise EvalError(f"EVAL {expr!r} failed: {type(exc).__name__}: {exc}") from None
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value


def _eval(node, env):
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str) and node.value.strip().lower() in ("yes", "no"):
            return node.value.strip().lower() == "yes"
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise EvalError(f"EVAL reads {node.id}, which is not defined")
        return env[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_eval(e, env) for e in node.elts]
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        value = None
        for part in node.values:
            value = _eval(part, env)
            if bool(value) != is_and:
                return value
        return value
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not operand
        _number(operand, "unary minus")
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Mult):
            _number(left, "*")
            _number(right, "*")
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    if isinstance(node, ast.Subscript):
        index = node.slice
        sign = -1 if isinstance(index, ast.UnaryOp) else 1
        position = sign * (index.operand if sign < 0 else index).value
        return _eval(node.value, env)[position]
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*[_eval(a, env) for a in node.args])
    raise EvalError(f"{type(node).__name__} is not allowed in EVAL expressions")


def _number(value, what):
    if not isinstance(value, (int, float)):  # bool is an int: yes * 2 is fine
        raise EvalError(f"{what} applies to numbers only, got {type(value).__name__}")
