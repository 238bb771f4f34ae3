"""Prompt families: how a question (and optional in-context shots) becomes a prompt.

- ``viper_compact`` (default): the condensed ViperGPT ImagePatch API with VQA examples.
- ``viper_itm``: the same API with image-text matching examples (ViUniT Listing 2).
- ``pot``: visual program-of-thought, values read off the image into code (seed 002).
- ``tool_api``: an ``ImageObject`` with ``answer``/``describe`` to orchestrate (seed 002).
- ``proptest``: each query shown with its property tests (PropTest Figure 9); ``proptest_baseline``
  is the same prompt and examples without tests.
- ``visprog`` / ``visprog_gqa``: VLAgent's planner prompt; completions are line-based
  planning scripts (``envs.visprog``), for shapes scenes or natural images.

``render_refinement`` builds the self-refinement prompt of any family.
"""

from envs.prompts.itm import VIPER_ITM
from envs.prompts.pot import POT
from envs.prompts.proptest import PROPTEST, PROPTEST_BASELINE
from envs.prompts.refine import error_text, render_refinement
from envs.prompts.toolapi import TOOL_API
from envs.prompts.viper import HEADER, VIPER_COMPACT, PromptFamily
from envs.prompts.viper_full import VIPER_FULL, VIPER_FULL_ITM
from envs.prompts.visprog import VISPROG, VISPROG_GQA

DEFAULT_FAMILY = VIPER_COMPACT.name
FAMILIES: dict[str, PromptFamily] = {
    f.name: f for f in (VIPER_COMPACT, VIPER_ITM, POT, TOOL_API, VIPER_FULL, VIPER_FULL_ITM, PROPTEST,
                        PROPTEST_BASELINE, VISPROG, VISPROG_GQA)
}


def get_family(name: str) -> PromptFamily:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown prompt family {name!r}; known: {', '.join(sorted(FAMILIES))}") from None


__all__ = ["DEFAULT_FAMILY", "FAMILIES", "HEADER", "PromptFamily", "get_family",
           "error_text", "render_refinement"]
