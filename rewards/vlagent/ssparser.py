"""VLAgent's SS-parser for planning scripts: the Script Parser and the Script Auditor.

``check_script(script, question)`` returns one ``Violation`` per problem, in line order.
It never runs anything; a script takes about a millisecond.  The rules, by id:

Script Parser (the script alone)
- ``syntax``: a line is not ``OUT=MODULE(arg=value,...)`` (read with the tokenizer of
  ``envs.visprog.language``; a generation cut off mid-line lands here).
- ``unquoted_text``: a text value without quotes (``object=dog``).
- ``unknown_module``: a module the library does not have (``CROP_LARGER``).
- ``unknown_argument``: an argument the module does not take (``LOC(obj=...)``).
- ``missing_argument``: a required argument is absent.
- ``duplicate_argument``: the same argument twice in one call.
- ``argument_type``: a variable of the wrong kind (``CROP(box=IMAGE0)``), a literal where a
  variable belongs or the other way round, or a literal of the wrong type (``k='two'``).
- ``undefined_variable``: a variable read before any line defines it (use before
  definition), in an argument or inside an EVAL expression.
- ``reserved_name``: a step assigns the input ``IMAGE`` or a module's name.
- ``malformed_eval``: EVAL's expression does not parse or leaves the evaluator's
  allow-list (``envs.visprog.evaluator``).
- ``redundant_step``: a step repeats an earlier one exactly (runaway generation).
- ``missing_result``: no ``RESULT`` line.
- ``result_kind``: ``RESULT`` returns boxes or images instead of an answer.

Script Auditor (the script against the question; silent without one)
- ``multi_instance``: the question is about several instances of one class ("Do both
  squares ...", "Is each circle ...") but the script crops only the first box LOC found
  (``CROP`` takes the first box) and so asks about one instance (VLAgent Figure 4).
- ``loc_argument``: LOC's object is a question or a sentence rather than an object name.
- ``loc_grounding``: LOC looks for something the question never mentions (its content
  words are not all in the question).
- ``spatial_crop``: a ``CROP_LEFTOF/RIGHTOF/ABOVE/BELOW`` the question's relations do not
  call for.
"""
from __future__ import annotations

from dataclasses import dataclass

from envs.visprog.evaluator import EvalError, compile_expression, expression_variables
from envs.visprog.language import (ANY, ARRAY_RETURNS, BOXES, HALVES, IMAGE,
                                   IMAGES, INPUT, MODULES, Script, Step, parse_script)
from rewards.vlagent import questions as Q

PARSER_RULES = ("syntax", "unquoted_text", "unknown_module", "unknown_argument",
                "missing_argument", "duplicate_argument", "argument_type",
                "undefined_variable", "reserved_name", "malformed_eval", "redundant_step",
                "missing_result", "result_kind")
AUDITOR_RULES = ("multi_instance", "loc_argument", "loc_grounding", "spatial_crop")
RULES = PARSER_RULES + AUDITOR_RULES


@dataclass(frozen=True)
class Violation:
    rule: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.message} [{self.rule}]"


def step_kind(step: Step, kinds: dict) -> str:
    """The kind of value a step's output holds, given the kinds defined before it."""
    module = MODULES.get(step.module)
    if module is None:
        return ANY
    if step.module == "RESULT":
        var = step.get("var")
        return kinds.get(var.value, ANY) if var is not None and var.kind == "var" else ANY
    image = step.get("image")
    if step.module in ARRAY_RETURNS and image is not None and kinds.get(image.value) == IMAGES:
        return ARRAY_RETURNS[step.module]
    return module.returns


def kinds_before(steps: list[Step]) -> list[dict]:
    """For each step, the variables (and their kinds) defined before it."""
    kinds, out = {INPUT: IMAGE}, []
    for step in steps:
        out.append(dict(kinds))
        kinds[step.out] = step_kind(step, kinds)
    out.append(dict(kinds))
    return out


def _arg_problems(step: Step, kinds: dict) -> list[Violation]:
    out, module, seen = [], MODULES[step.module], set()
    say = lambda rule, msg: out.append(Violation(rule, step.line, msg))  # noqa: E731
    for name, value in step.args:
        if name in seen:
            say("duplicate_argument", f"{step.module} gets {name}= twice")
            continue
        seen.add(name)
        arg = module.arg(name)
        if arg is None:
            say("unknown_argument", f"{step.module} has no argument {name!r}; it takes "
                f"{', '.join(a.name for a in module.args)}")
        elif value.kind == "word":
            say("unquoted_text", f"{name}={value.value} needs quotes: {name}='{value.value}'")
        elif value.kind == "var":
            if value.value not in kinds:
                say("undefined_variable", f"{value.value} is used before it is defined")
            elif not arg.kinds:
                say("argument_type", f"{step.module}'s {name} is a literal, not a variable")
            elif ANY not in arg.kinds and kinds[value.value] not in (*arg.kinds, ANY):
                say("argument_type", f"{step.module}'s {name} takes {' or '.join(arg.kinds)}, "
                    f"but {value.value} holds {kinds[value.value]}")
        elif arg.literal is None:
            say("argument_type", f"{step.module}'s {name} takes a variable, not {value.render()}")
        elif (arg.literal == "str") != (value.kind == "str"):
            say("argument_type", f"{step.module}'s {name} takes a "
                f"{'text' if arg.literal == 'str' else 'whole number'}, not {value.render()}")
    for arg in module.args:
        if arg.required and arg.name not in seen:
            say("missing_argument", f"{step.module} needs {arg.name}=")
    return out


def _eval_problems(step: Step, kinds: dict) -> list[Violation]:
    expr = step.get("expr")
    if expr is None or expr.kind != "str":
        return []
    out = []
    try:
        compile_expression(str(expr.value))
    except EvalError as exc:
        out.append(Violation("malformed_eval", step.line, str(exc)))
    for name in expression_variables(str(expr.value)):
        if name not in kinds:
            out.append(Violation("undefined_variable", step.line,
                                 f"EVAL reads {name}, which is not defined before it"))
    return out


def parser_violations(script: Script) -> list[Violation]:
    out = [Violation("syntax", i.line, i.message) for i in script.syntax]
    seen: dict[str, str] = {}
    for step, kinds in zip(script.steps, kinds_before(script.steps)):
        if step.out == INPUT or step.out in MODULES:
            out.append(Violation("reserved_name", step.line,
                                 f"{step.out} is {'the input image' if step.out == INPUT else 'a module'}"
                                 "; give the step its own output variable"))
        if step.module not in MODULES:
            out.append(Violation("unknown_module", step.line, f"there is no module "
                                 f"{step.module}; modules: {', '.join(MODULES)}"))
            out += [Violation("undefined_variable", step.line, f"{v} is used before it is defined")
                    for v in step.inputs() if v not in kinds]
            continue
        out += _arg_problems(step, kinds)
        if step.module == "EVAL":
            out += _eval_problems(step, kinds)
        key = step.render().split("=", 1)[1]
        if key in seen and step.module != "RESULT":
            out.append(Violation("redundant_step", step.line, f"repeats {seen[key]}'s step"))
        seen.setdefault(key, step.out)
    results = [s for s in script.steps if s.module == "RESULT"]
    if not results:
        out.append(Violation("missing_result", None, "the script has no RESULT line"))
    else:
        kinds = kinds_before(script.steps)[-1]
        last = results[-1]
        var = last.get("var")
        held = kinds.get(var.value) if var is not None and var.kind == "var" else None
        if held in (IMAGE, IMAGES, BOXES):
            out.append(Violation("result_kind", last.line, f"RESULT returns {var.value}, which "
                                 f"holds {held}, not an answer"))
    return out


def multi_instance_crops(script: Script, question: str) -> list[tuple[Step, Step]]:
    """(LOC step, CROP step) pairs that crop only the first of several asked-about instances."""
    found = Q.multi_instance(question)
    if found is None:
        return []
    asked = Q.content(found[0])

    def names_class(step) -> bool:  # its object's noun is the quantified class
        obj = step.get("object")
        ws = Q.words(obj.value) if obj is not None and obj.kind == "str" else []
        return bool(ws) and Q.singular(ws[-1]) in asked

    locs = {s.out: s for s in script.steps if s.module == "LOC" and names_class(s)}
    eachs = {s.get("box").value for s in script.steps if s.module == "CROP_EACH"
             and s.get("box") is not None}
    return [(locs[s.get("box").value], s) for s in script.steps
            if s.module == "CROP" and s.get("box") is not None
            and s.get("box").value in locs and s.get("box").value not in eachs]


def _is_sentence(text: str) -> bool:
    ws = Q.words(text)
    return "?" in text or (bool(ws) and ws[0] in Q.QUESTION_WORDS) or len(ws) > 5


def auditor_violations(script: Script, question: str | None) -> list[Violation]:
    if not question:
        return []
    out = [Violation("multi_instance", crop.line, f"the question is about several "
                     f"{Q.multi_instance(question)[0]}s but CROP keeps only the first box of "
                     f"{loc.out}; crop each box with CROP_EACH and compare the answers")
           for loc, crop in multi_instance_crops(script, question)]
    asked, sides = Q.content(question), Q.relations(question)
    for step in script.steps:
        obj = step.get("object") if step.module == "LOC" else None
        if obj is not None and obj.kind == "str" and str(obj.value).upper() not in HALVES:
            text = str(obj.value)
            if _is_sentence(text):
                out.append(Violation("loc_argument", step.line, f"LOC's object {text!r} is a "
                                     "question or sentence; name the object to find"))
            elif not Q.content(text) <= asked:
                missing = ", ".join(sorted(Q.content(text) - asked))
                out.append(Violation("loc_grounding", step.line, f"LOC looks for {text!r} but "
                                     f"the question never mentions {missing}"))
        side = step.module[len("CROP_"):] if step.module.startswith("CROP_") else None
        if side in Q.RELATIONS and side not in sides:
            out.append(Violation("spatial_crop", step.line, f"{step.module} but the question "
                                 f"asks about {' or '.join(sides).lower() or 'no spatial relation'}"))
    return out


def check_script(script: str | Script, question: str | None = None) -> list[Violation]:
    """Every violation of every rule (see the module docstring), in line order."""
    parsed = parse_script(script) if isinstance(script, str) else script
    found = parser_violations(parsed) + auditor_violations(parsed, question)
    return sorted(found, key=lambda v: (v.line is None, v.line or 0))
