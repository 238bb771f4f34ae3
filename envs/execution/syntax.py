"""The syntax tree side of the static check: a rule for every node type, and the rewrite.

``NODE_RULES`` names, for every node type of the grammar this interpreter parses, what
the checker does with it. A node type missing from the table (a newer Python's syntax)
is refused, so the policy never silently lets through a construct nobody looked at;
``tests/unit/test_execution_policy.py`` walks the grammar and fails on any gap.

Names are checked wherever the grammar binds or reads one by a string: variables,
attributes, function, class and argument names, ``except ... as``, import aliases,
``global``/``nonlocal``, keyword arguments, ``match`` captures and class-pattern
keywords. Strings in annotations are parsed and checked like code, because a standard
library module may evaluate them later.
"""
from __future__ import annotations

import ast
import re

from .rules import (ALLOWED_MODULES, DENIED_NAMES, MAX_ANNOTATION_CHARS, SAFE_DUNDER_METHODS,
                    attribute_refusal, module_refusal, nesting_refusal)

# Keywords that switch off numpy's memory-safety checks. The runtime refuses the calls
# whatever the spelling (numpy_guards.withdraw_array_resize); this gives the literal form its
# reason before anything runs.
RAW_MEMORY_KEYWORDS = {
    "refcheck": "ndarray.resize(refcheck=False) frees memory that views still use; "
                "numpy.resize(a, shape) returns a resized copy",
}
_REFLECTION_CALLS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# "{0.__class__}".format(x) walks attributes inside a string literal.
_FORMAT_TRAVERSAL = re.compile(r"\{[^{}]*[.\[]\s*_")
_FORMAT_METHODS = ("format", "format_map")

CHILDREN = "children"  # nothing to check on the node itself; its children are checked
REFUSE = "refuse"
NODE_RULES = {
    # modules: programs are parsed in "exec" mode; annotation strings in "eval" mode
    "Module": CHILDREN, "Expression": CHILDREN, "Interactive": REFUSE, "FunctionType": REFUSE,
    # statements
    "FunctionDef": "definition", "AsyncFunctionDef": "definition", "ClassDef": "definition",
    "Return": CHILDREN, "Delete": CHILDREN, "Assign": CHILDREN, "AugAssign": CHILDREN,
    "AnnAssign": "annotated", "For": CHILDREN, "AsyncFor": CHILDREN, "While": CHILDREN,
    "If": CHILDREN, "With": CHILDREN, "AsyncWith": CHILDREN, "Match": CHILDREN,
    "Raise": CHILDREN, "Try": CHILDREN, "TryStar": CHILDREN, "Assert": CHILDREN,
    "Import": "import_", "ImportFrom": "import_from", "Global": "declared",
    "Nonlocal": "declared", "Expr": CHILDREN, "Pass": CHILDREN, "Break": CHILDREN,
    "Continue": CHILDREN,
    # expressions
    "BoolOp": CHILDREN, "NamedExpr": CHILDREN, "BinOp": CHILDREN, "UnaryOp": CHILDREN,
    "Lambda": CHILDREN, "IfExp": CHILDREN, "Dict": CHILDREN, "Set": CHILDREN,
    "ListComp": CHILDREN, "SetComp": CHILDREN, "DictComp": CHILDREN,
    "GeneratorExp": CHILDREN, "Await": CHILDREN, "Yield": CHILDREN, "YieldFrom": CHILDREN,
    "Compare": CHILDREN, "Call": "call", "FormattedValue": CHILDREN, "JoinedStr": CHILDREN,
    "Constant": CHILDREN, "Attribute": "attribute", "Subscript": CHILDREN,
    "Starred": CHILDREN, "Name": "name", "List": CHILDREN, "Tuple": CHILDREN,
    "Slice": CHILDREN,
    # contexts and operators
    "Load": CHILDREN, "Store": CHILDREN, "Del": CHILDREN, "And": CHILDREN, "Or": CHILDREN,
    "Add": CHILDREN, "Sub": CHILDREN, "Mult": CHILDREN, "MatMult": CHILDREN, "Div": CHILDREN,
    "Mod": CHILDREN, "Pow": CHILDREN, "LShift": CHILDREN, "RShift": CHILDREN,
    "BitOr": CHILDREN, "BitXor": CHILDREN, "BitAnd": CHILDREN, "FloorDiv": CHILDREN,
    "Invert": CHILDREN, "Not": CHILDREN, "UAdd": CHILDREN, "USub": CHILDREN, "Eq": CHILDREN,
    "NotEq": CHILDREN, "Lt": CHILDREN, "LtE": CHILDREN, "Gt": CHILDREN, "GtE": CHILDREN,
    "Is": CHILDREN, "IsNot": CHILDREN, "In": CHILDREN, "NotIn": CHILDREN,
    # parts of statements and expressions
    "comprehension": CHILDREN, "ExceptHandler": "except_handler", "arguments": CHILDREN,
    "arg": "argument", "keyword": "keyword", "alias": CHILDREN, "withitem": CHILDREN,
    "match_case": CHILDREN, "TypeIgnore": CHILDREN,
    # patterns
    "MatchValue": CHILDREN, "MatchSingleton": CHILDREN, "MatchSequence": CHILDREN,
    "MatchMapping": "match_mapping", "MatchClass": "match_class", "MatchStar": "capture",
    "MatchAs": "capture", "MatchOr": CHILDREN,
}


def _root_name(node: ast.AST) -> str | None:
    """The variable at the base of ``a.b[c].d``, or None for call results etc."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class Checker:
    """Walks a tree; ``refusal`` is (message, line) of the first construct refused."""

    def __init__(self, tree: ast.AST):
        self.refusal: tuple[str, int | None] | None = None
        self.mutates_attributes = False
        self.imported: set[str] = set()
        self.bound: set[str] = set()
        self.line: int | None = None
        for node in ast.walk(tree):  # names the program binds itself
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.bound.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound.add(node.name)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    self.imported.add((alias.asname or alias.name).split(".")[0])

    def refuse(self, node, message: str) -> None:
        if self.refusal is None:
            self.refusal = (message, getattr(node, "lineno", None) or self.line)

    def visit(self, node: ast.AST) -> None:
        if self.refusal is not None:
            return
        self.line = getattr(node, "lineno", None) or self.line
        rule = NODE_RULES.get(type(node).__name__)
        if rule is None or rule == REFUSE:
            self.refuse(node, f"the syntax '{type(node).__name__}' is not allowed in programs")
            return
        if rule != CHILDREN:
            getattr(self, "rule_" + rule)(node)
        self.children(node)

    def children(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def binding(self, node, name: str | None, what: str) -> None:
        """A name the program binds (or declares): no dunders, no denied builtins."""
        if name is not None and (_dunder(name) or name in DENIED_NAMES):
            self.refuse(node, f"the {what} '{name}' is not allowed in programs")

    # ------------------------------------------------------------------ rules
    def rule_name(self, node):
        if node.id in DENIED_NAMES:
            self.refuse(node, f"'{node.id}' is not allowed in programs")
        elif _dunder(node.id):
            self.refuse(node, f"the special name '{node.id}' is not allowed in programs")

    def rule_attribute(self, node):
        reason = attribute_refusal(node.attr)
        if reason:
            self.refuse(node, reason)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.mutates_attributes = True
            self.mutation(node, node.value)

    def rule_definition(self, node):
        name = node.name
        if _dunder(name) and not (isinstance(node, ast.FunctionDef)
                                  and name in SAFE_DUNDER_METHODS):
            self.refuse(node, f"defining '{name}' is not allowed in programs (special methods "
                              f"allowed: {', '.join(sorted(SAFE_DUNDER_METHODS))})")
        self.binding(node, None if _dunder(name) else name, "name")
        if not isinstance(node, ast.ClassDef):
            self.annotation(node.returns)

    def rule_annotated(self, node):
        self.annotation(node.annotation)

    def rule_argument(self, node):
        self.binding(node, node.arg, "argument name")
        self.annotation(node.annotation)

    def rule_keyword(self, node):
        if node.arg is not None and _dunder(node.arg):
            self.refuse(node, f"the keyword argument '{node.arg}' is not allowed in programs")
        elif node.arg in RAW_MEMORY_KEYWORDS:
            self.refuse(node, f"the keyword argument '{node.arg}' is not allowed in programs "
                              f"({RAW_MEMORY_KEYWORDS[node.arg]})")

    def rule_except_handler(self, node):
        self.binding(node, node.name, "name")

    def rule_declared(self, node):
        for name in node.names:
            self.binding(node, name, "name")

    def rule_capture(self, node):
        self.binding(node, node.name, "name")

    def rule_match_mapping(self, node):
        self.binding(node, node.rest, "name")

    def rule_match_class(self, node):
        for name in node.kwd_attrs:  # `case C(attr=...)` reads the attribute `attr`
            reason = attribute_refusal(name)
            if reason:
                self.refuse(node, reason)

    def rule_import_(self, node):
        for alias in node.names:
            reason = module_refusal(alias.name)
            if reason:
                self.refuse(node, reason)
            self.binding(node, alias.asname, "name")

    def rule_import_from(self, node):
        if node.level:
            self.refuse(node, "relative imports are not allowed")
            return
        reason = module_refusal(node.module or "")
        if reason:
            self.refuse(node, reason)
        for alias in node.names:
            if alias.name != "*":
                reason = attribute_refusal(alias.name)
                if reason and f"{node.module}.{alias.name}" not in ALLOWED_MODULES:
                    self.refuse(node, reason)
            self.binding(node, alias.asname, "name")

    def rule_call(self, node):
        func = node.func
        if isinstance(func, ast.Name) and func.id in _REFLECTION_CALLS:
            if func.id in ("setattr", "delattr"):
                self.mutates_attributes = True
                if node.args:
                    self.mutation(node, node.args[0])
            if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[1].value, str):
                reason = attribute_refusal(node.args[1].value)
                if reason:
                    self.refuse(node, reason)
        if isinstance(func, ast.Attribute) and func.attr in _FORMAT_METHODS \
                and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str) \
                and _FORMAT_TRAVERSAL.search(func.value.value):
            self.refuse(node, "format strings may not reach private or special attributes")

    # ------------------------------------------------------------------ helpers
    def mutation(self, node, target):
        # Assigning onto something the program did not create itself (a tool
        # class, a module, a builtin) would leak into the programs that run next.
        root = _root_name(target)
        if root is not None and (root in self.imported or root not in self.bound):
            self.refuse(node, f"modifying '{root}' is not allowed: programs may not "
                              "change modules, tools or builtins")

    def annotation(self, node) -> None:
        """Strings in an annotation are code that typing or dataclasses may evaluate."""
        if node is None:
            return
        for part in ast.walk(node):
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                text = part.value.strip()
                too_big = nesting_refusal(text, MAX_ANNOTATION_CHARS)
                if too_big:
                    self.refuse(node, f"a string annotation may not be {too_big}")
                    return
                try:
                    parsed = ast.parse(text, mode="eval")
                except (SyntaxError, ValueError, MemoryError, RecursionError):
                    self.refuse(node, "a string annotation must be a valid expression")
                    return
                inner = Checker(parsed)
                inner.line = self.line
                inner.visit(parsed)
                if inner.refusal:
                    self.refuse(node, f"in a string annotation: {inner.refusal[0]}")
                    return


class Rewriter(ast.NodeTransformer):
    """Compiles two things into calls of runtime guards (guards.py):

    - ``obj.name`` as an assignment or ``del`` target becomes ``__vprl_attr__(obj)['name']``,
      so the ownership check holds in every binding form Python has;
    - reading ``x.format`` / ``x.format_map`` becomes ``__vprl_format__(x, 'format')``, so a
      format string held in a variable is checked where it is used.
    """

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            if node.attr not in _FORMAT_METHODS:
                return node
            call = ast.Call(ast.Name("__vprl_format__", ast.Load()),
                            [node.value, ast.Constant(node.attr)], [])
            return ast.copy_location(call, node)
        target = ast.Call(ast.Name("__vprl_attr__", ast.Load()), [node.value], [])
        return ast.copy_location(
            ast.Subscript(ast.copy_location(target, node), ast.Constant(node.attr), node.ctx),
            node)
