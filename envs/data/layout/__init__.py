"""Captions <-> layouts in the shapes world: the image generator M of ViUniT §3.2.3.

A visual unit test is a caption and an expected answer; before a program can run on it
the caption has to become an image.  In the shapes world the image is a pure function
of a scene graph, so M only has to turn a caption into a ``Scene``:

* ``caption_scene`` writes the canonical caption of a scene.  Positions use a coarse
  3x3 grid (top/middle/bottom x left/center/right), so a scene whose objects sit on cell
  centres, one per cell, is described exactly: any question spec has the same answer on
  the scene and on ``parse_caption`` of its caption.
* ``parse_caption`` is a closed-vocabulary rule parser: it understands the canonical
  captions and the plain captions an LLM writes about shapes (counts, sizes, colours,
  grid positions, pairwise relations, negation).  Any word it does not know makes it
  give up (None) rather than guess, because a wrong layout is a wrong unit test.
* ``LLMLayout`` covers what the rules refuse: an LLM writes the layout as JSON boxes,
  as in LM-guided layout-to-image generation.

This module only re-exports the public names; the code lives in

* ``grid``: the 3x3 grid (``ROWS``, ``COLS``, ``CELL_PHRASES``, ``cell_center``,
  ``cell_of``, ``on_grid``) and ``caption_scene``;
* ``lexicon``: the parser's closed vocabulary and tokenizer;
* ``parser``: the rule parser and ``parse_caption``;
* ``placement``: choosing attributes and grid cells for a parsed caption;
* ``llm``: ``LAYOUT_PROMPT``, ``layout_prompt``, ``parse_layout_json``,
  ``LLMLayout``, ``captions_to_scenes`` and ``caption_to_scene``.
"""
from __future__ import annotations

from envs.data.layout.grid import (
    CELL_PHRASES, COLS, ROWS, caption_scene, cell_center, cell_of, on_grid)
from envs.data.layout.llm import (
    LAYOUT_PROMPT, LLMLayout, caption_to_scene, captions_to_scenes, layout_prompt,
    parse_layout_json)
from envs.data.layout.parser import parse_caption

__all__ = ["ROWS", "COLS", "CELL_PHRASES", "cell_center", "cell_of", "on_grid", "caption_scene",
           "parse_caption", "LAYOUT_PROMPT", "layout_prompt", "parse_layout_json", "LLMLayout",
           "caption_to_scene", "captions_to_scenes"]
