"""VLAgent's caption verifier: check a program's answer against an image caption.

The caption comes from the tool backend (``CAP``: shapes-cv lists the objects it sees in
the pixels; hf asks its captioning/VQA model to describe the image), so it runs in the
sandbox like any program.  An LLM judge (the policy or any configured model, through
``policies.text_lm.TextLM``) is asked VLAgent's three questions (section 2.2.2):

1. does the caption explicitly mention what the question needs?  (``clue``)
2. which answer is best, the caption-derived one or the program's?  (asked only when the
   two differ; the caption-derived answer is the judge's reply to the question from the
   caption alone)
3. the final answer, stated succinctly: the chosen answer, normalised.

The decision rule (``decide``): no clue -> keep the program's answer; a clue and the two
agree -> keep it (high confidence); a clue and they differ -> switch to the caption's
answer only when the judge prefers it; a program that gave no answer takes the caption's
answer when there is a clue.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from envs.tools.ensemble import normalise_answer

CAPTION_SCRIPT = "ANSWER0=CAP(image=IMAGE)\nFINAL_RESULT=RESULT(var=ANSWER0)"
MAX_WORDS = 5
_NUMBERS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight "
                                             "nine ten".split())}


def succinct(text) -> str | None:
    """The first line of a reply, without punctuation or a leading article, at most
    MAX_WORDS words; number words as digits."""
    if text is None:
        return None
    line = next((s for s in str(text).strip().splitlines() if s.strip()), "")
    words = re.findall(r"[a-z0-9]+", line.lower())
    if words and words[0] in ("a", "an", "the"):
        words = words[1:]
    if words and words[0] in ("yes", "no"):
        return words[0]  # "Yes, there is one." answers yes
    words = [_NUMBERS.get(w, w) for w in words[:MAX_WORDS]]
    return " ".join(words) or None


def _yes(reply) -> bool | None:
    first = re.findall(r"[a-z]+", str(reply).lower())[:1]
    return {"yes": True, "no": False}.get(first[0]) if first else None


def _choice(reply) -> str | None:
    m = re.search(r"\b([ab])\b", str(reply).lower())
    return m.group(1) if m else None


def same_answer(a, b) -> bool:
    return a is not None and b is not None and normalise_answer(succinct(a) or "") == \
        normalise_answer(succinct(b) or "")


def decide(program_answer, clue: bool, caption_answer, prefers_caption: bool
           ) -> tuple[str | None, bool]:
    """(final answer, switched): VLAgent's decision table (module docstring)."""
    if not clue or caption_answer is None:
        return program_answer, False
    if program_answer is None:
        return caption_answer, True
    if same_answer(program_answer, caption_answer):
        return program_answer, False
    return (caption_answer, True) if prefers_caption else (program_answer, False)


@dataclass
class Verdict:
    caption: str | None
    clue: bool
    caption_answer: str | None
    prefers_caption: bool
    final: str | None
    switched: bool


def clue_prompt(question, caption) -> str:
    return (f"Image caption: {caption}\nQuestion: {question}\nDoes the caption explicitly "
            "mention the information needed to answer the question? Answer yes or no.")


def answer_prompt(question, caption) -> str:
    return f"Image caption: {caption}\nQuestion: {question}\nAnswer the question using only the caption."


def choice_prompt(question, caption, caption_answer, program_answer) -> str:
    return (f"Image caption: {caption}\nQuestion: {question}\nAnswer A: {caption_answer}\n"
            f"Answer B: {program_answer}\nWhich answer does the caption support? Answer A or B.")


class CaptionVerifier:
    """``llm``: an object with ``batch(questions, long_answers) -> replies`` (TextLM)."""

    def __init__(self, llm):
        self.llm = llm
        self._memo: dict = {}

    def _ask(self, prompts: list[str]) -> list[str]:
        todo = [p for p in dict.fromkeys(prompts) if p not in self._memo]
        if todo:
            for p, reply in zip(todo, self.llm.batch(todo, [False] * len(todo))):
                self._memo[p] = reply
        return [self._memo[p] for p in prompts]

    def verify(self, questions: list, captions: list, answers: list) -> list[Verdict]:
        """One Verdict per (question, caption, program answer); a missing caption keeps the
        program's answer."""
        live = [i for i, c in enumerate(captions) if c]
        clues = dict(zip(live, self._ask([clue_prompt(questions[i], captions[i]) for i in live])))
        derived = dict(zip(live, self._ask([answer_prompt(questions[i], captions[i]) for i in live])))
        clue = {i: bool(_yes(clues[i])) and succinct(derived[i]) is not None for i in live}
        disputed = [i for i in live if clue[i] and answers[i] is not None
                    and not same_answer(answers[i], derived[i])]
        picks = dict(zip(disputed, self._ask([choice_prompt(questions[i], captions[i],
                                                            succinct(derived[i]), answers[i])
                                              for i in disputed])))
        out = []
        for i, (caption, answer) in enumerate(zip(captions, answers)):
            if i not in clues:
                out.append(Verdict(caption, False, None, False, answer, False))
                continue
            mine = succinct(derived[i])
            prefers = i not in picks or _choice(picks[i]) == "a"
            final, switched = decide(answer, clue[i], mine, prefers)
            out.append(Verdict(caption, clue[i], mine, prefers, final, switched))
        return out


def captions_for(executor, images: list) -> list[str | None]:
    """The backend's caption of each image, run in the sandbox as a one-step script."""
    from envs.visprog.compile import script_program

    program = script_program(CAPTION_SCRIPT)
    return [r.answer if r.status == "ok" else None
            for r in executor.run([program] * len(images), list(images))]
