"""The ``visprog`` family: VLAgent's planner prompt for line-based planning scripts.

VLAgent (section 2.1) prompts its planner with a chain-of-thought line ("think step by
step to answer the question"), then K (question, planning script) examples that the
Task Dispatcher fetches from the Task Repository for the task at hand, then the user's
question.  The modules are learnt from the examples alone (no API text), so the prompt
is short.  Here a task is a kind of data: ``shapes`` (the synthetic scenes) and ``gqa``
(natural images); the examples are fixed per task, so every prompt of a batch shares
the whole prefix up to the question (one KV prefill on the CPU path).

The completion is the script; ``policies.programs.program_from`` turns it into the
program the sandbox runs (``envs.visprog.script_program``).  Generation stops at the
first line that does not start with an upper-case letter (a blank line ends a script).
"""
from __future__ import annotations

from dataclasses import dataclass

from envs.prompts.viper import PromptFamily

COT = "Think step by step to answer the question."
SCRIPT_STOP = r"\n[^A-Z]"

_YES_IF_ANY = "ANSWER1=EVAL(expr=\"'yes' if {ANSWER0} > 0 else 'no'\")"

# (task, question, script): written for vprl, in VisProg's module conventions.
REPOSITORY: dict[str, list[tuple[str, str]]] = {
    "shapes": [
        ("Is there a red circle?",
         "BOX0=LOC(image=IMAGE,object='red circle')\nANSWER0=COUNT(box=BOX0)\n"
         f"{_YES_IF_ANY}\nFINAL_RESULT=RESULT(var=ANSWER1)"),
        ("How many small squares are there?",
         "BOX0=LOC(image=IMAGE,object='small square')\nANSWER0=COUNT(box=BOX0)\n"
         "FINAL_RESULT=RESULT(var=ANSWER0)"),
        ("What color is the large triangle?",
         "BOX0=LOC(image=IMAGE,object='large triangle')\nIMAGE0=CROP(image=IMAGE,box=BOX0)\n"
         "ANSWER0=VQA(image=IMAGE0,question='What color is the large triangle?')\n"
         "FINAL_RESULT=RESULT(var=ANSWER0)"),
        ("Is the yellow circle above the blue triangle?",
         "BOX0=LOC(image=IMAGE,object='blue triangle')\nIMAGE0=CROP_ABOVE(image=IMAGE,box=BOX0)\n"
         "BOX1=LOC(image=IMAGE0,object='yellow circle')\nANSWER0=COUNT(box=BOX1)\n"
         f"{_YES_IF_ANY}\nFINAL_RESULT=RESULT(var=ANSWER1)"),
        ("What shape is the green object to the left of the gray square?",
         "BOX0=LOC(image=IMAGE,object='gray square')\nIMAGE0=CROP_LEFTOF(image=IMAGE,box=BOX0)\n"
         "BOX1=LOC(image=IMAGE0,object='green object')\nIMAGE1=CROP(image=IMAGE0,box=BOX1)\n"
         "ANSWER0=VQA(image=IMAGE1,question='What shape is the green object?')\n"
         "FINAL_RESULT=RESULT(var=ANSWER0)"),
        ("Are there more circles than triangles?",
         "BOX0=LOC(image=IMAGE,object='circle')\nBOX1=LOC(image=IMAGE,object='triangle')\n"
         "ANSWER0=COUNT(box=BOX0)\nANSWER1=COUNT(box=BOX1)\n"
         "ANSWER2=EVAL(expr=\"'yes' if {ANSWER0} > {ANSWER1} else 'no'\")\n"
         "FINAL_RESULT=RESULT(var=ANSWER2)"),
        ("Do both squares have the same color?",
         "BOX0=LOC(image=IMAGE,object='square')\nIMAGE_ARRAY0=CROP_EACH(image=IMAGE,box=BOX0,k=2)\n"
         "ANSWER0=VQA(image=IMAGE_ARRAY0,question='What color is the square?')\n"
         "ANSWER1=EVAL(expr=\"'yes' if {ANSWER0}[0] == {ANSWER0}[1] else 'no'\")\n"
         "FINAL_RESULT=RESULT(var=ANSWER1)"),
        ("Is there either a purple square or an orange circle?",
         "BOX0=LOC(image=IMAGE,object='purple square')\nBOX1=LOC(image=IMAGE,object='orange circle')\n"
         "ANSWER0=COUNT(box=BOX0)\nANSWER1=COUNT(box=BOX1)\n"
         "ANSWER2=EVAL(expr=\"'yes' if {ANSWER0} > 0 or {ANSWER1} > 0 else 'no'\")\n"
         "FINAL_RESULT=RESULT(var=ANSWER2)"),
    ],
    "gqa": [
        ("Is the vehicle in the top of the image?",
         "BOX0=LOC(image=IMAGE,object='TOP')\nIMAGE0=CROP(image=IMAGE,box=BOX0)\n"
         "BOX1=LOC(image=IMAGE0,object='vehicle')\nANSWER0=COUNT(box=BOX1)\n"
         f"{_YES_IF_ANY}\nFINAL_RESULT=RESULT(var=ANSWER1)"),
        ("What color is the cup on the table?",
         "BOX0=LOC(image=IMAGE,object='table')\nIMAGE0=CROP_ABOVE(image=IMAGE,box=BOX0)\n"
         "BOX1=LOC(image=IMAGE0,object='cup')\nIMAGE1=CROP(image=IMAGE0,box=BOX1)\n"
         "ANSWER0=VQA(image=IMAGE1,question='What color is the cup?')\n"
         "FINAL_RESULT=RESULT(var=ANSWER0)"),
        ("Who is wearing the hat, the man or the woman?",
         "BOX0=LOC(image=IMAGE,object='hat')\nIMAGE0=CROP(image=IMAGE,box=BOX0)\n"
         "ANSWER0=VQA(image=IMAGE0,question='Who is wearing the hat, the man or the woman?')\n"
         "FINAL_RESULT=RESULT(var=ANSWER0)"),
        ("Do both people have the same gender?",
         "BOX0=LOC(image=IMAGE,object='person')\nIMAGE_ARRAY0=CROP_EACH(image=IMAGE,box=BOX0,k=2)\n"
         "ANSWER0=VQA(image=IMAGE_ARRAY0,question='What is the gender of the person?')\n"
         "ANSWER1=EVAL(expr=\"'yes' if {ANSWER0}[0] == {ANSWER0}[1] else 'no'\")\n"
         "FINAL_RESULT=RESULT(var=ANSWER1)"),
        ("Are there more dogs than cats?",
         "BOX0=LOC(image=IMAGE,object='dog')\nBOX1=LOC(image=IMAGE,object='cat')\n"
         "ANSWER0=COUNT(box=BOX0)\nANSWER1=COUNT(box=BOX1)\n"
         "ANSWER2=EVAL(expr=\"'yes' if {ANSWER0} > {ANSWER1} else 'no'\")\n"
         "FINAL_RESULT=RESULT(var=ANSWER2)"),
        ("What is the animal to the left of the fence doing?",
         "BOX0=LOC(image=IMAGE,object='fence')\nIMAGE0=CROP_LEFTOF(image=IMAGE,box=BOX0)\n"
         "BOX1=LOC(image=IMAGE0,object='animal')\nIMAGE1=CROP(image=IMAGE0,box=BOX1)\n"
         "ANSWER0=VQA(image=IMAGE1,question='What is the animal doing?')\n"
         "FINAL_RESULT=RESULT(var=ANSWER0)"),
    ],
}


def dispatch(task: str, k: int) -> list[tuple[str, str]]:
    """The Task Dispatcher: the first k examples of the task's repository."""
    if task not in REPOSITORY:
        raise ValueError(f"no planning examples for task {task!r}; known: "
                         f"{', '.join(sorted(REPOSITORY))}")
    return REPOSITORY[task][:k]


@dataclass
class ScriptFamily(PromptFamily):
    """A PromptFamily whose completions are planning scripts, not Python bodies."""

    task: str = "shapes"
    k: int = 6
    stop: str = SCRIPT_STOP

    def user_text(self, question: str, shots=None) -> str:
        from envs.visprog.compile import script_of

        parts = [self.system]
        for q, body in list(self.examples) + list(shots or []):
            parts.append(f"Question: {q}\nProgram:\n{(script_of(body) or body).strip()}\n")
        parts.append(f"Question: {question}\nProgram:")
        return "\n".join(parts)

    def render(self, tokenizer, question: str, shots=None) -> str:
        return self.user_text(question, shots) + "\n"

    @property
    def program_prefix(self) -> str:
        return ""

    def display(self, program: str) -> str:
        """How a program is shown back to the planner (refinement): as its script."""
        from envs.visprog.compile import script_of

        return script_of(program) or program


def script_family(name: str, task: str, k: int = 6) -> ScriptFamily:
    return ScriptFamily(name, COT, "", dispatch(task, k), header="", body_start="",
                        task=task, k=k)


VISPROG = script_family("visprog", "shapes")
VISPROG_GQA = script_family("visprog_gqa", "gqa")
