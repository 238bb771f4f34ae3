"""Scripts to executable programs (VLAgent's Script Executor: one code line per step).

``script_program(script)`` writes a Python ``execute_command(IMAGE)`` whose body holds one
call per script line, on the same line number plus one (the header is line 1, as for
Python programs), so the sandbox runs a script like any program: same statuses, same
error text, ``(line N)`` pointing at script line N-1.  The module functions (LOC, CROP,
VQA, ...) are in every tools namespace (``envs.visprog.modules``).

- a line that is not ``OUT=MODULE(arg=value,...)``, or passes unquoted text, becomes a
  line Python cannot parse, so the script gets ``compile_error`` at that line;
- ``EVAL`` receives the variables its expression reads as keyword arguments;
- the function returns the last ``RESULT``'s variable, else the last step's output
  (VisProg returns the last step's output);
- the original script follows the function as a comment block, so ``script_of``
  gives it back (refinement prompts show the script, not the generated code).
"""
from __future__ import annotations

from envs.visprog.language import extract_script, looks_like_script, parse_script

HEADER = "def execute_command(IMAGE):"
PROMPT_END = "Program:"
SCRIPT_MARK = "# script:"
_INVALID = "<script syntax error>"


def python_line(step) -> str:
    args = [f"{name}={value.render()}" for name, value in step.args]
    if step.module == "EVAL":
        given = {name for name, _ in step.args}
        args += [f"{v}={v}" for v in step.inputs() if v not in given]
    return f"{step.out} = {step.module}({', '.join(args)})"


def unrunnable(step) -> str | None:
    """Why a well-formed line still cannot run as written (unquoted text)."""
    words = [f"{name}={value.value}" for name, value in step.args if value.kind == "word"]
    if words:
        return f"text values must be quoted: {words[0]!r} needs quotes, e.g. object='dog'"
    return None


def script_program(script: str) -> str:
    """The Python program that runs ``script`` (see the module docstring)."""
    parsed = parse_script(script)
    issues = {i.line: i.message for i in parsed.syntax}
    body = []
    for number, raw in enumerate(parsed.lines, 1):
        step = parsed.step_at(number)
        reason = issues.get(number) or (unrunnable(step) if step is not None else None)
        if reason:
            body.append(f"    {_INVALID} {reason}")
        elif step is not None:
            body.append("    " + python_line(step))
        else:  # a blank or comment line keeps its place
            body.append(f"    {raw.strip()}" if raw.strip() else "")
    if not parsed.steps and not parsed.syntax:
        body.append(f"    {_INVALID} the script has no steps")
    results = [s for s in parsed.steps if s.module == "RESULT"]
    final = (results or parsed.steps)[-1].out if parsed.steps else "None"
    body.append(f"    return {final}")
    shown = [f"# {line}".rstrip() for line in parsed.lines]
    return "\n".join([HEADER, *body, SCRIPT_MARK, *shown]) + "\n"


def script_of(program: str) -> str | None:
    """The script a program was made from by script_program, else None."""
    if not program.startswith(HEADER):
        return None
    lines = program.split("\n")
    try:
        start = lines.index(SCRIPT_MARK)
    except ValueError:
        return None
    return "\n".join(line[2:] if line.startswith("# ") else line[1:]
                     for line in lines[start + 1:]).strip("\n")


def is_script_prompt(prompt: str) -> bool:
    """True for prompts of the visprog family: they end asking for the ``Program:``."""
    return prompt.rstrip().endswith(PROMPT_END)


def program_for(prompt: str, completion: str) -> str | None:
    """The program for a script completion, or None when the pair is not a script."""
    if is_script_prompt(prompt) or ("def execute_command" not in prompt + completion
                                    and looks_like_script(completion)):
        return script_program(extract_script(completion))
    return None
