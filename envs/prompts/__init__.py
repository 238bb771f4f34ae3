"""Prompt families: how a question (and optional in-context shots) becomes a prompt."""

from envs.prompts.viper import HEADER, VIPER_COMPACT, PromptFamily

FAMILIES: dict[str, PromptFamily] = {VIPER_COMPACT.name: VIPER_COMPACT}


def get_family(name: str) -> PromptFamily:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown prompt family {name!r}; known: {', '.join(sorted(FAMILIES))}") from None


__all__ = ["FAMILIES", "HEADER", "PromptFamily", "get_family"]
