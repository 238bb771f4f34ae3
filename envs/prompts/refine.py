"""Self-refinement prompts: the failed program and what went wrong, then a fresh header.

ViUniT (Listings 10-11) and seed 002 (Appendix B.3) re-prompt with the query, the
incorrect program and its error, and ask for a corrected program. We keep that order
but write it in the family's own comment style, and end the prompt with the family's
`program_prefix` like every first-turn prompt, so a completion is read the same way on
every turn (`policies.programs.program_from` takes the last header in the prompt).
"""

from __future__ import annotations

from envs.prompts.viper import PromptFamily

def error_text(result) -> str:
    """What went wrong in a failed run, as every refinement and re-prompt shows it (the
    env's feedback, self-refinement, ViUniT's re-prompting): the sandbox's `Error: ...`
    message, else the status."""
    error = getattr(result, "error", None)
    if not error:
        return f"Error: the program stopped with status {getattr(result, 'status', 'unknown')}"
    return error if error.startswith("Error") else f"Error: {error}"


# A runaway program (thousands of repeated lines) must not crowd out the API text.
MAX_PROGRAM_CHARS = 4000


def refinement_block(question: str, program: str, feedback: str) -> str:
    """The query line's text for a refinement turn: question, failed program, feedback."""
    shown = program.rstrip("\n")
    if len(shown) > MAX_PROGRAM_CHARS:
        shown = shown[:MAX_PROGRAM_CHARS] + "\n    # ... (program truncated)"
    notes = "\n".join(f"# {line}".rstrip() for line in (feedback.strip() or "Error").splitlines())
    return f"{question}\n# Incorrect program:\n{shown}\n{notes}\n# Corrected program:"


def render_refinement(family: PromptFamily, tokenizer, question: str, program: str,
                      feedback: str, shots=None) -> str:
    """A refinement prompt for `family`; `tokenizer` is only used by chat families."""
    # The block takes the question's place, so the family's own render (plain or chat)
    # lays out the API, the shots and the header exactly as on the first turn.
    return family.render(tokenizer, refinement_block(question, family.display(program), feedback),
                         shots)
