"""Program text: the one module that knows what a visual program looks like.

A program is `def execute_command(image):` (`HEADER`) plus an indented body. Here are
the header, extraction of a runnable program from raw model text (and where generation
may stop), the program a (prompt, completion) pair stands for, a program's body (what
few-shot shots show), and the end-to-end fallback program. It imports nothing from the
project but the script language (`envs.visprog`, a leaf too), so every layer may use it
(docs/LAYERS.md).
"""

from __future__ import annotations

import re

HEADER = "def execute_command(image):\n"
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.S)


class ProgramEnd:
    """Where a program body ends, found incrementally as text arrives.

    The body ends at the first line that starts at column 0 *outside* any open bracket,
    string (triple-quoted ones included), or backslash continuation: once the header
    `def execute_command(image):` is given, such a line (a second `def`, the next
    `# Query:`, a fence, a stray call) lies outside the function. A column-0 line inside
    a multi-line call, list or string is part of the program and does not end it.

    `feed(piece)` returns None while the program goes on, else how many characters of
    `piece` belong to the program (those before the newline that precedes the top-level
    line). Raw-string backslashes are treated like ordinary escapes (a rare misreading).
    """

    def __init__(self):
        self.depth = 0              # open ( [ {
        self.quote = ""             # the open string's delimiter: ' " \'\'\' or \"\"\"
        self.opening = ("", 0)      # quote char and count seen where a string may start
        self.closing = 0            # consecutive delimiter chars inside a triple-quoted string
        self.escape = False         # the previous char was a backslash
        self.comment = False
        self.line_start = False     # after a top-level newline: the next non-blank char decides
        self.newline_at = 0         # position (in this piece) of that newline, + 1
        self.done = False

    def feed(self, piece: str) -> int | None:
        if self.done:
            return 0
        boundary = 0 if self.line_start else None  # the newline may lie in an earlier piece
        for i, ch in enumerate(piece):
            if self.opening[1]:
                q, count = self.opening
                if ch == q and count < 3:
                    self.opening = (q, count + 1)
                    if count + 1 == 3:
                        self.quote, self.opening = q * 3, ("", 0)
                    continue
                self.opening = ("", 0)
                if count == 1:
                    self.quote = q  # a one-quote string: this char is inside it
                # count == 2: an empty string closed; this char is code again
            if self.quote:
                if ch != "\n" or len(self.quote) == 3 or self.escape:
                    self._in_string(ch)
                    continue
                self.quote, self.escape = "", False  # a newline ends an unterminated one-line string
            if self.line_start:
                if ch == "\n":
                    boundary = i
                    continue
                if ch in " \t\r\f":
                    self.line_start = False  # an indented line: still the body
                else:
                    self.done = True
                    return boundary
            self._in_code(ch, i)
            if self.line_start:
                boundary = i
        return None

    def _in_string(self, ch: str) -> None:
        if self.escape:
            self.escape = False
        elif ch == "\\":
            self.escape = True
        elif len(self.quote) == 1:
            if ch == self.quote:
                self.quote = ""
        elif ch == self.quote[0]:
            self.closing += 1
            if self.closing == 3:
                self.quote, self.closing = "", 0
            return
        self.closing = 0

    def _in_code(self, ch: str, i: int) -> None:
        if self.comment:
            if ch != "\n":
                return
            self.comment = False
        if ch == "\n":
            if self.escape:  # a backslash continuation
                self.escape = False
            elif self.depth == 0:
                self.line_start = True
            return
        self.escape = ch == "\\"
        if ch == "#":
            self.comment = True
        elif ch in "'\"":
            self.opening = (ch, 1)
        elif ch in "([{":
            self.depth += 1
        elif ch in ")]}":
            self.depth = max(self.depth - 1, 0)


def end_of_program(text: str) -> int | None:
    """Index of the newline after which the program body ends (see `ProgramEnd`), or None."""
    return ProgramEnd().feed(text)


def extract_program(text: str, header: str = HEADER) -> str:
    """Return the `execute_command` function found in `text`.

    Accepts a bare body that continues a prompt ending in the header, a full function,
    or code inside a markdown fence. Anything after the function (the next query, a
    second top-level def) is cut.
    """
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    # A completion that continues the prompt's header starts indented; only look for a
    # `def` when it does not, or a later example's def would replace the real body.
    bare_body = text.lstrip("\n")[:1] in (" ", "\t")
    start = -1 if bare_body else text.find("def execute_command")
    if start >= 0:
        text = text[start:]
        first_newline = text.find("\n")
        if first_newline < 0:
            return text
        head, body = text[: first_newline + 1], text[first_newline + 1 :]
    else:
        head, body = header, text
    cut = end_of_program("\n" + body)
    if cut is not None:
        body = body[: max(cut - 1, 0)]
    return (head + body).rstrip() + "\n"


def _text(message) -> str:
    """Plain text of a string, or of TRL's conversational/multimodal message lists."""
    if isinstance(message, str) or message is None:
        return message or ""
    if isinstance(message, list):
        if not message:
            return ""
        content = message[-1].get("content", "") if isinstance(message[-1], dict) else message[-1]
        if isinstance(content, list):  # multimodal blocks: [{"type": "text", "text": ...}, {"type": "image"}]
            return "".join(b.get("text", "") for b in content if isinstance(b, dict))
        return str(content)
    return str(message)


def program_from(prompt, completion) -> str:
    """Full `execute_command` source for a completion.

    Our prompts end inside the function (the header and first body line), so the
    program is that tail of the prompt plus the completion; TRL passes the same pair.
    Completions that carry a whole function (or a fenced block) stand on their own.
    A planning script (the visprog family's prompts, or a completion that is one) becomes
    the program that runs it (`envs.visprog.script_program`).
    """
    from envs.visprog.compile import program_for  # the script language, itself a leaf

    completion = _text(completion)
    prompt = _text(prompt)
    script = program_for(prompt, completion)
    if script is not None:
        return script
    start = prompt.rfind("def execute_command")
    if start >= 0 and "# Query" not in prompt[start:] and "def execute_command" not in completion:
        return extract_program(_join(prompt[start:], completion))
    return extract_program(completion)


def _join(head: str, completion: str) -> str:
    """`head + completion`, unless that cannot compile and a whole-line reading can.

    A policy's completion continues the prompt's last line, but a hand-written action
    (`env.step("    return 'yes'")`) is a line of its own, sometimes without its indent.
    Only a join that compiles is preferred over the literal one; otherwise the literal
    join stands, so the sandbox reports the policy's own syntax error.
    """
    literal = head + completion
    if head.endswith("\n") or completion.startswith("\n") or _compiles(literal):
        return literal
    line = "\n" + completion
    indented = "\n" + "\n".join("    " + t if t.strip() else t for t in completion.split("\n"))
    return next((head + c for c in (line, indented) if _compiles(head + c)), literal)


def _compiles(source: str) -> bool:
    try:
        compile(source, "<program>", "exec")
    except Exception:  # noqa: BLE001 - as the sandbox's check: any failure means "does not compile"
        return False
    return True


MAX_TREE_DEPTH = 400  # what the sandbox's policy allows (envs.execution.rules)


def parse_program(source: str):
    """``(tree, None)`` for a program text, or ``(None, (message, line))`` saying why it has
    no syntax tree a checker may walk. Model text can make the parser raise more than
    SyntaxError (MemoryError and RecursionError on absurd nesting, UnicodeError on a lone
    surrogate, ValueError on a null byte), and a tree nested deeper than the recursive
    checkers can walk is refused the same way: a reward scores such a text as unparsable
    instead of raising for the whole batch."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return None, (exc.msg, exc.lineno)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        return None, (f"the program cannot be parsed ({type(exc).__name__})", None)
    stack = [(tree, 1)]
    while stack:  # iterative: the depth of this tree is the question
        node, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            return None, ("the program is nested too deeply", None)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return tree, None


def program_body(program: str) -> str:
    """The function body of `program`: the lines after its `def execute_command` line.

    A bare body (already indented) is returned as is. The body ends with one newline so
    the next `# Query:` of a prompt starts on its own line.
    """
    text = program.lstrip("\n")
    if text.startswith("def "):
        newline = text.find("\n")
        text = "" if newline < 0 else text[newline + 1:]
    return text.rstrip() + "\n" if text.strip() else ""


def fallback_program(question: str, prompt_family: str = "viper_compact") -> str:
    """The end-to-end fallback as a program: the question asked of the whole image by the
    backend's answering model (`simple_query`, or `ImageObject.answer` for tool_api)."""
    q = repr(question)
    if prompt_family == "tool_api":
        return f"{HEADER}    return ImageObject(image).answer({q})\n"
    return f"{HEADER}    return ImagePatch(image).simple_query({q})\n"
