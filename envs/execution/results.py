"""What one execution produces, and how raw return values become answers.

This module is imported by both the parent and the sandbox worker.
"""
from __future__ import annotations

import decimal
import fractions
import math
from dataclasses import asdict, dataclass

import numpy as _np

STATUSES = (
    "ok",
    "compile_error",
    "runtime_error",
    "assertion_error",
    "timeout",
    "memory_limit",
    "forbidden",
    "protocol_error",  # the worker broke the protocol (forged, malformed or oversized reply)
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
    def from_reply(cls, data) -> "ExecutionResult | None":
        """Rebuild a result from a worker's reply, or None when the reply is malformed.

        The worker runs untrusted code, so every field is checked for its exact type
        (a ``str`` subclass or a float-like object is refused, not converted), text is
        capped and made encodable (lone surrogates replaced), and an unknown key or status
        makes the whole reply invalid. The caller turns None into ``protocol_error``.
        """
        if type(data) is not dict or set(data) != REPLY_KEYS:
            return None
        status, duration = data["status"], data["duration_s"]
        if type(status) is not str or status not in STATUSES or status == "protocol_error":
            return None
        if type(duration) not in (int, float) or not math.isfinite(duration) or duration < 0:
            return None
        fields = {}
        for key, cap in (("answer", MAX_ANSWER_CHARS), ("error", MAX_ERROR_CHARS),
                         ("raw_type", 200), ("stdout", MAX_STDOUT_CHARS)):
            value = data[key]
            if value is None and key != "stdout":
                fields[key] = None
            elif type(value) is str:
                fields[key] = clean_text(value, cap)
            else:
                return None
        return cls(status=status, duration_s=float(duration), **fields)


# What a worker's reply to one program holds, besides the request id.
REPLY_KEYS = frozenset({"status", "answer", "error", "duration_s", "raw_type", "stdout"})
MAX_STDOUT_CHARS = 4096 + 100


def clean_text(text: str, limit: int) -> str:
    """``text`` capped at ``limit`` characters, with anything UTF-8 cannot encode (lone
    surrogates) replaced, so the result can be written to JSON, W&B or a terminal."""
    text = cap_text(text, limit)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def cap_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(TRUNCATION_MARKER))] + TRUNCATION_MARKER


def format_error(message: str) -> str:
    """Error text in the form re-prompting prompts show it: ``Error: <message>``."""
    return cap_text("Error: " + (message.strip() or "unknown error"), MAX_ERROR_CHARS)


def exact_str(text) -> str:
    """An exact ``str`` copy of a ``str`` (subclass) instance: methods of a subclass a
    program defined (``strip``, ``lower``, ``__eq__``, ``__hash__``) may lie; the copy cannot."""
    return text if type(text) is str else str.__str__(text)


def type_name(obj) -> str:
    """The name of ``obj``'s class, read from the type object itself (a metaclass the
    program wrote cannot substitute another name)."""
    return exact_str(_TYPE_NAME.__get__(type(obj)))


_TYPE_NAME = type.__dict__["__name__"]


def describe_exception(exc: BaseException, line: int | None = None) -> str:
    """``Error: <Type>: <message> (line N)``.

    ViUniT's re-prompting shows program output as ``Error: <message>``; the
    exception type is added because many messages are meaningless alone (a
    KeyError's message is just the key, SystemExit's just a number), and the
    line number, when known, points a re-prompted model at the failing statement.
    The worker calls this while the program's timer still runs: ``str(exc)`` runs
    the program's own ``__str__``, which may loop or raise.
    """
    try:
        message = exact_str(str(exc)).strip()
    except Exception:  # a program's own exception class may have a broken __str__
        message = "<unprintable message>"
    name = type_name(exc)
    text = f"{name}: {message}" if message else name
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

    Types are tested exactly (``type(x) is ...``), never with isinstance: a program's
    own class can register itself as a number or subclass ``str`` and lie. Such
    objects go through ``str()``, whose result is copied to an exact ``str``. The worker
    runs this inside the program's time limit.
    """
    kind = type(value)
    if value is None:
        return None
    if isinstance(value, (_np.ndarray, _np.generic)):
        value = value.tolist()  # numpy scalars and arrays: normalise to Python objects
        kind = type(value)
    if kind is list or kind is tuple:
        return to_answer(value[0]) if value else "no"
    if kind is bool:
        return "yes" if value else "no"
    if kind is int:
        return str(value)
    if kind is float:
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return str(value).lower()
    if kind in _OTHER_NUMBERS:  # Fraction, Decimal: real numbers of the standard library
        return to_answer(float(value))
    text = exact_str(value if kind is str else str(value))
    return cap_text(text.strip().lower(), MAX_ANSWER_CHARS)


_OTHER_NUMBERS = frozenset({fractions.Fraction, decimal.Decimal})
