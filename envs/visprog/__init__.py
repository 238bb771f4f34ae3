"""Planning scripts (VisProg's language, as VLAgent plans with it).

- ``language``: the module table, the tokenizer and the line grammar (``parse_script``);
- ``evaluator``: EVAL's expression evaluator over an AST allow-list (never ``eval``);
- ``modules``: LOC, CROP, VQA, ... on the ImagePatch API of any tool backend;
- ``compile``: a script as a sandbox program (``script_program``), and back (``script_of``).

The SS-parser that checks and repairs scripts lives in ``rewards.vlagent``.
"""
from envs.visprog.compile import is_script_prompt, program_for, script_of, script_program
from envs.visprog.evaluator import EvalError, evaluate
from envs.visprog.language import (MODULES, Script, Step, extract_script, looks_like_script,
                                   parse_script)

__all__ = ["MODULES", "Script", "Step", "parse_script", "extract_script", "looks_like_script",
           "script_program", "script_of", "program_for", "is_script_prompt", "evaluate",
           "EvalError"]
