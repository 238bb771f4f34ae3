"""The config reference that `vprl train --help` prints, generated from the dataclasses.

Each key is listed with its type, its allowed values or range, its default and the
comment written after the field in train/config.py, so a new field documents itself.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import tokenize
import types
import typing
from typing import Annotated, Literal

import yaml

from train.config import Config, OneOf, field_types


def field_comments(cls) -> dict[str, str]:
    """The `# ...` comment that ends each field's line in the class body."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    comments, name, depth = {}, None, 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NL or tok.type == tokenize.NEWLINE:
            name = None
        elif tok.type == tokenize.NAME and name is None and tok.start[1] == 4 and depth == 0:
            name = tok.string
        elif tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.COMMENT and name:
            comments[name] = tok.string.lstrip("#").strip()
    return comments


def describe_type(tp) -> str:
    """`float > 0`, `mean | sum`, `list of str, non-empty`, `str, one of a, b`."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *rules = typing.get_args(tp)
        text = describe_type(base)
        for rule in rules:
            if isinstance(rule, OneOf):
                text += ", " + rule.describe()
            elif hasattr(rule, "describe"):
                text += (" " if rule.describe()[0] in "<>" else ", ") + rule.describe()
        return text
    if origin is Literal:
        return " | ".join(map(str, typing.get_args(tp)))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        text = " or ".join(describe_type(a) for a in args)
        return text + " or null" if len(args) < len(typing.get_args(tp)) else text
    if origin is list:
        (item,) = typing.get_args(tp) or (typing.Any,)
        return f"list of {describe_type(item)}"
    if origin is dict or tp is dict:
        return "mapping"
    if dataclasses.is_dataclass(tp):
        return "{" + ", ".join(f.name for f in dataclasses.fields(tp)) + "}"
    return getattr(tp, "__name__", str(tp))


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _flow(value) -> str:
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    elif isinstance(value, list):
        value = [dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v for v in value]
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _section_item(tp):
    """The dataclass a field holds directly or as list items (None for plain values)."""
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    if dataclasses.is_dataclass(tp):
        return tp, ""
    if typing.get_origin(tp) is list:
        (item,) = typing.get_args(tp) or (None,)
        if dataclasses.is_dataclass(item):
            return item, "[]"
    return None, ""


def config_reference(cls=Config, prefix: str = "") -> list[str]:
    """One line per key (`key: type = default`), its comment indented below; sections last."""
    lines, sections = [], []
    hints, comments = field_types(cls), field_comments(cls)
    for f in dataclasses.fields(cls):
        key = prefix + f.name
        item, suffix = _section_item(hints[f.name])
        if item is not None and not suffix:
            sections.append((key, item))
            continue
        default = _default(f)
        line = f"  {key}: {describe_type(hints[f.name])}"
        if default is not dataclasses.MISSING:
            line += f" = {_flow(default)}"
        lines.append(line)
        if comments.get(f.name):
            lines.append(f"      {comments[f.name]}")
        if item is not None:  # a list of records (rewards): their keys too
            lines += config_reference(item, f"{key}{suffix}.")
    for key, item in sections:
        lines += ["", f"{key}:"] + config_reference(item, f"{key}.")
    return lines


def config_help() -> str:
    return "\n".join([
        "config keys (set them in the --config YAML file, or as key=value; dotted for sections,",
        "e.g. optim.lr=1e-4; lists in YAML flow style, e.g. 'rewards=[correctness, format]'):",
        "",
        *config_reference(),
    ])
