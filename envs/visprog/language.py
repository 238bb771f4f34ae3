"""The planning-script language (VisProg's, as VLAgent uses it): modules, tokens, lines.

A script is one step per line, ``OUT=MODULE(arg=value,...)``, over variables such as
``IMAGE`` (the input), ``BOX0``, ``IMAGE0``, ``ANSWER0``, ``IMAGE_ARRAY0`` and
``FINAL_RESULT``.  A value is a quoted string, a number or a variable.  Blank lines
and ``#`` comment lines are allowed and ignored.

``parse_script`` tokenizes every line on its own, so one bad line does not hide the
others: it returns the well-formed steps and one ``SyntaxIssue`` per malformed line.
Checking which modules, arguments and variables a line names is the SS-parser's job
(``rewards.vlagent.ssparser``); this module only knows the grammar and the module table.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from envs.visprog.evaluator import expression_variables

# Kinds of values a variable can hold; a module argument accepts some of them.
IMAGE, IMAGES, BOXES, NUMBER, TEXT, ANSWER, ANSWERS, ANY = (
    "image", "image array", "boxes", "number", "text", "answer", "answer array", "any")
INPUT = "IMAGE"  # the variable holding the question's image


@dataclass(frozen=True)
class Arg:
    name: str
    kinds: tuple              # variable kinds accepted; () = a literal only
    literal: str | None       # "str" or "int" when a literal is accepted, else None
    required: bool = True


@dataclass(frozen=True)
class Module:
    name: str
    args: tuple
    returns: str
    doc: str

    def arg(self, name: str) -> Arg | None:
        return next((a for a in self.args if a.name == name), None)


def _m(name, returns, doc, *args):
    return Module(name, tuple(args), returns, doc)


_IMG = Arg("image", (IMAGE,), None)
_BOX = Arg("box", (BOXES,), None)
MODULES: dict[str, Module] = {m.name: m for m in (
    _m("LOC", BOXES, "boxes of `object` in the image, best first; object='TOP', 'BOTTOM', "
       "'LEFT' or 'RIGHT' gives that half of the image", _IMG, Arg("object", (), "str")),
    _m("COUNT", NUMBER, "the number of boxes", _BOX),
    _m("CROP", IMAGE, "the first box, enlarged 1.5x about its centre and clipped to the "
       "image (the whole image when there is no box)", _IMG, _BOX),
    _m("CROP_LEFTOF", IMAGE, "the part of the image left of the first box's centre", _IMG, _BOX),
    _m("CROP_RIGHTOF", IMAGE, "the part right of the first box's centre", _IMG, _BOX),
    _m("CROP_ABOVE", IMAGE, "the part above the first box's centre", _IMG, _BOX),
    _m("CROP_BELOW", IMAGE, "the part below the first box's centre", _IMG, _BOX),
    _m("CROP_EACH", IMAGES, "one crop (as CROP) per box, best first; k keeps the first k",
       _IMG, _BOX, Arg("k", (NUMBER,), "int", required=False)),
    _m("VQA", ANSWER, "the answer to `question` about the image (one per image of an "
       "image array)", Arg("image", (IMAGE, IMAGES), None), Arg("question", (), "str")),
    _m("CAP", TEXT, "a caption of the image", _IMG),
    _m("EVAL", ANSWER, "the value of a Python-like expression over {VARIABLES}; 'yes'/'no' "
       "read as True/False", Arg("expr", (), "str")),
    _m("RESULT", ANY, "the script's answer", Arg("var", (ANY,), None)),
)}

# What each module produces when its input is an array (VQA maps over crops).
ARRAY_RETURNS = {"VQA": ANSWERS}
HALVES = ("TOP", "BOTTOM", "LEFT", "RIGHT")

VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>-?\d+(?:\.\d+)?)
  | (?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
  | (?P<op>[=(),])
""", re.X)


class ScriptSyntaxError(ValueError):
    def __init__(self, message: str, column: int | None = None):
        super().__init__(message)
        self.column = column


@dataclass(frozen=True)
class Token:
    kind: str   # name | number | string | op
    text: str
    column: int


def tokenize(line: str) -> list[Token]:
    """Tokens of one script line; raises ScriptSyntaxError at the first bad character."""
    out, pos = [], 0
    while pos < len(line):
        m = _TOKEN.match(line, pos)
        if m is None:
            bad = line[pos]
            if bad in "'\"":
                raise ScriptSyntaxError("unterminated string", pos + 1)
            raise ScriptSyntaxError(f"unexpected character {bad!r}", pos + 1)
        if m.lastgroup != "ws":
            out.append(Token(m.lastgroup, m.group(), pos + 1))
        pos = m.end()
    return out


@dataclass(frozen=True)
class Value:
    kind: str       # str | int | float | var | word (an unquoted lower-case word)
    value: object

    def render(self) -> str:
        if self.kind == "str":
            return repr(self.value)
        return str(self.value)


@dataclass
class Step:
    line: int                  # 1-based line number in the script
    out: str
    module: str
    args: list                 # [(name, Value)] in the order written (duplicates kept)
    text: str = ""

    def get(self, name: str) -> Value | None:
        return next((v for n, v in self.args if n == name), None)

    def inputs(self) -> list[str]:
        """Variables the step reads: variable arguments and EVAL's {NAMES}."""
        names = [v.value for _, v in self.args if v.kind == "var"]
        if self.module == "EVAL":
            expr = self.get("expr")
            if expr is not None and expr.kind == "str":
                names += expression_variables(str(expr.value))
        return list(dict.fromkeys(names))

    def render(self) -> str:
        """The canonical text of the line: ``OUT=MODULE(a=v,...)``."""
        return f"{self.out}={self.module}({','.join(f'{n}={v.render()}' for n, v in self.args)})"


@dataclass(frozen=True)
class SyntaxIssue:
    line: int
    column: int | None
    message: str


@dataclass
class Script:
    lines: list[str]                       # the raw lines
    steps: list[Step] = field(default_factory=list)
    syntax: list[SyntaxIssue] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def step_at(self, line: int) -> Step | None:
        return next((s for s in self.steps if s.line == line), None)

    def render(self) -> str:
        """Canonical text: well-formed steps re-rendered, every other line kept as is."""
        out = []
        for i, raw in enumerate(self.lines, 1):
            step = self.step_at(i)
            out.append(step.render() if step is not None else raw.strip())
        return "\n".join(out).strip("\n")


def parse_value(tokens: list[Token], i: int) -> tuple[Value, int]:
    tok = tokens[i]
    if tok.kind == "string":
        return Value("str", _unquote(tok.text)), i + 1
    if tok.kind == "number":
        number = float(tok.text)
        return (Value("int", int(number)) if number.is_integer() and "." not in tok.text
                else Value("float", number)), i + 1
    if tok.kind == "name":
        return Value("var" if VARIABLE.match(tok.text) else "word", tok.text), i + 1
    raise ScriptSyntaxError(f"expected a value, found {tok.text!r}", tok.column)


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


def parse_line(line: str, number: int = 1) -> Step:
    """One ``OUT=MODULE(arg=value,...)`` line; raises ScriptSyntaxError."""
    tokens = tokenize(line)
    end = len(line.rstrip()) + 1

    def expect(i, kind, text=None, what=None):
        if i >= len(tokens):
            raise ScriptSyntaxError(f"line ends early: expected {what or text or kind}", end)
        tok = tokens[i]
        if tok.kind != kind or (text is not None and tok.text != text):
            raise ScriptSyntaxError(f"expected {what or repr(text) or kind}, found {tok.text!r}",
                                    tok.column)
        return tok

    out = expect(0, "name", what="an output variable")
    if not VARIABLE.match(out.text):
        raise ScriptSyntaxError(f"output variable {out.text!r} must be upper case "
                                "(BOX0, IMAGE0, ANSWER0, ...)", out.column)
    expect(1, "op", "=")
    module = expect(2, "name", what="a module name")
    expect(3, "op", "(")
    args, i = [], 4
    while i < len(tokens) and tokens[i].text != ")":
        name = expect(i, "name", what="an argument name")
        expect(i + 1, "op", "=", what="'=' after the argument name")
        if i + 2 >= len(tokens):
            raise ScriptSyntaxError(f"argument {name.text!r} has no value", end)
        value, i = parse_value(tokens, i + 2)
        args.append((name.text, value))
        if i < len(tokens) and tokens[i].text == ",":
            i += 1
        elif i < len(tokens) and tokens[i].text != ")":
            raise ScriptSyntaxError(f"expected ',' or ')', found {tokens[i].text!r}",
                                    tokens[i].column)
    expect(i, "op", ")", what="')'")
    if i + 1 < len(tokens):
        raise ScriptSyntaxError(f"unexpected {tokens[i + 1].text!r} after the call",
                                tokens[i + 1].column)
    return Step(number, out.text, module.text, args, line.strip())


def is_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def parse_script(text: str) -> Script:
    """Every line parsed on its own: well-formed steps plus one issue per bad line."""
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    script = Script(lines)
    for number, line in enumerate(lines, 1):
        if is_blank(line):
            continue
        try:
            script.steps.append(parse_line(line, number))
        except ScriptSyntaxError as exc:
            script.syntax.append(SyntaxIssue(number, exc.column, str(exc)))
    return script


# ------------------------------------------------------------------ from model text
_STOP = re.compile(r"^\s*(Question|Program|Answer|Query|Script)\s*:|^\s*```", re.I)
_FENCE = re.compile(r"```[A-Za-z]*\s*\n(.*?)(?:```|$)", re.S)


def extract_script(text: str) -> str:
    """The script in a completion: the lines up to the first blank line, next
    ``Question:``/``Program:`` line or code fence; a fenced block stands on its own."""
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    kept: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line.strip():
            if kept:
                break
            continue
        if _STOP.match(line):
            if kept:
                break
            continue
        kept.append(line.strip())
    return "\n".join(kept)


_SCRIPT_START = re.compile(r"\s*[A-Z][A-Z0-9_]*\s*=\s*[A-Z][A-Z0-9_]*\s*\(")


def looks_like_script(text: str) -> bool:
    """True when text starts (after blank lines and fences) with an ``OUT=MODULE(`` line."""
    return bool(_SCRIPT_START.match(extract_script(text)))
