"""What one execution produces, and how raw return values become answers.

This module is imported by both the parent and the sandbox worker, so it stays
free of heavy imports (numpy is only touched through duck typing).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass

STATUSES = (
    "ok",
    "compile_error",
    "runtime_error",
    "assertion_error",
    "timeout",
    "memory_limit",
    "forbidden",
)

# Caps keep a hostile program from flooding the parent (and the result cache)
# through its answer or its error text.
MAX_ANSWER_CHARS = 1000
MAX_ERROR_CHARS = 2000
TRUNCATION_MARKER = "...[truncated]"


@dataclass
class ExecutionResult:
    status: str
    answer: str | None
    error: str | None
    duration_s: float
    raw_type: str | None
    stdout: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_dict(cls, data: dict) -> "ExecutionResult":
        """Rebuild a result from a worker message, distrusting every field.

        The worker runs untrusted code, so its reply is validated rather than
        believed: unknown statuses and non-string fields become a runtime error.
        """
        status = data.get("status")
        if status not in STATUSES:
            return cls("runtime_error", None, "Error: the sandbox worker sent a malformed reply",
                       0.0, None)

        def text(key, cap):
            value = data.get(key)
            return cap_text(value, cap) if isinstance(value, str) else None

        try:
            duration = float(data.get("duration_s") or 0.0)
        except (TypeError, ValueError):
            duration = 0.0
        return cls(
            status=status,
            answer=text("answer", MAX_ANSWER_CHARS),
            error=text("error", MAX_ERROR_CHARS),
            duration_s=duration if math.isfinite(duration) else 0.0,
            raw_type=text("raw_type", 200),
            stdout=text("stdout", 64 * 1024) or "",
        )


def cap_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(TRUNCATION_MARKER))] + TRUNCATION_MARKER


def format_error(message: str) -> str:
    """Error text in the form re-prompting prompts show it: ``Error: <message>``."""
    return cap_text("Error: " + (message.strip() or "unknown error"), MAX_ERROR_CHARS)


def describe_exception(exc: BaseException, line: int | None = None) -> str:
    """``Error: <Type>: <message> (line N)``.

    ViUniT's re-prompting shows program output as ``Error: <message>``; the
    exception type is added because many messages are meaningless alone (a
    KeyError's message is just the key, SystemExit's just a number), and the
    line number, when known, points a re-prompted model at the failing statement.
    """
    try:
        message = str(exc).strip()
    except Exception:  # a program's own exception class may have a broken __str__
        message = "<unprintable message>"
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    if line is not None:
        text += f" (line {line})"
    return format_error(text)


def to_answer(value) -> str | None:
    """Convert a program's return value to an answer string, as ViperGPT does.

    - list / tuple / 1-d array: its first element (converted again), or "no" when empty;
    - bool (Python or numpy): "yes" / "no";
    - number: its string; an integral float prints as an integer ("3", not "3.0"),
      because answers are compared as text against ground truth like "3";
    - str: stripped and lower-cased;
    - None: None (the program answered nothing);
    - anything else (ImagePatch, ...): ``str(value)``, stripped and lower-cased.
    """
    if value is None:
        return None
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        # numpy scalars and arrays: normalise to Python objects first.
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return to_answer(value[0]) if value else "no"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number) and number == int(number) and abs(number) < 1e15:
            return str(int(number))
        return str(number).lower()
    text = value if isinstance(value, str) else str(value)
    return cap_text(text.strip().lower(), MAX_ANSWER_CHARS)
