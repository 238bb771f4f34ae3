"""VLAgent's Script Repair: rewrite what the SS-parser flags, where a fix is unambiguous.

``repair_script(script, question)`` returns a ``Repair``: the new text, the violations
before and after.  A script without violations comes back unchanged (the same text); so
does one whose violations have no fix.  Repairs run to a fixed point, so repairing a
repaired script changes nothing (idempotent).  What each rule's repair does:

- ``syntax``: close a missing ``)`` or drop text after the call; a line that still does not
  parse is dropped (a cut-off last line usually);
- ``unquoted_text``: quote it; ``duplicate_argument``: keep the first;
- ``unknown_module``: a synonym (FIND->LOC, QUERY->VQA, RETURN->RESULT, ...), an unknown
  ``CROP_*`` -> the side crop its name points to or plain CROP, else a close name;
- ``unknown_argument``: a synonym (obj->object, bbox->box, query->question, ...), else drop;
- ``argument_type`` / ``undefined_variable``: the latest variable defined before the step
  that holds the kind the argument needs (IMAGE for images when nothing else);
  EVAL names: the latest defined variable with the same name stem (ANSWER3 -> ANSWER1);
- ``missing_argument``: image -> IMAGE (or the latest crop for VQA), box -> the latest
  boxes, question -> the user's question, var -> the latest answer;
- ``reserved_name``: a fresh output name, and later reads follow it;
- ``malformed_eval``: ``=`` -> ``==``, ``&&``/``||``/``!`` -> and/or/not, true/false -> True/False;
- ``redundant_step``: drop the repeat; later reads use the first step's output;
- ``spatial_crop``: the crop of the one relation the question names, else plain CROP;
- ``loc_argument`` / ``loc_grounding``: the question's noun phrase that shares most words;
- ``multi_instance``: CROP -> ``CROP_EACH`` (k=2 for "both"), the VQA asked per crop, and an
  EVAL that compares the answers ("same": all equal; a yes/no question: all yes);
- ``result_kind``: images -> VQA the user's question on them; boxes -> COUNT (and > 0 for a
  yes/no question); ``missing_result``: RESULT of the latest answer.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace

from envs.common.questions import is_yes_no
from envs.visprog.evaluator import EvalError, compile_expression, expression_variables
from envs.visprog.language import (ANSWER, ANSWERS, ANY, BOXES, HALVES, IMAGE, IMAGES, INPUT,
                                   MODULES, NUMBER, TEXT, Script, ScriptSyntaxError, Step, Value,
                                   parse_line, parse_script)
from rewards.vlagent import questions as Q
from rewards.vlagent.ssparser import (Violation, check_script, multi_instance_crops,
                                      step_kind)

MODULE_SYNONYMS = {"FIND": "LOC", "DETECT": "LOC", "LOCATE": "LOC", "LOCALIZE": "LOC",
                   "QUERY": "VQA", "ASK": "VQA", "ANSWER": "VQA", "QA": "VQA",
                   "CAPTION": "CAP", "DESCRIBE": "CAP", "RETURN": "RESULT", "OUTPUT": "RESULT",
                   "FINAL": "RESULT", "COMPUTE": "EVAL", "CALC": "EVAL", "CROP_ALL": "CROP_EACH",
                   "CROPS": "CROP_EACH"}
ARG_SYNONYMS = {"img": "image", "images": "image", "obj": "object", "name": "object",
                "object_name": "object", "label": "object", "category": "object", "boxes": "box",
                "bbox": "box", "bboxes": "box", "query": "question", "text": "question",
                "prompt": "question", "q": "question", "expression": "expr", "exp": "expr",
                "value": "var", "variable": "var", "output": "var", "result": "var", "n": "k",
                "top": "k"}
_SIDE_CUES = {"LEFTOF": ("LEFT",), "RIGHTOF": ("RIGHT",), "ABOVE": ("ABOVE", "TOP", "UP", "OVER"),
              "BELOW": ("BELOW", "BOTTOM", "DOWN", "UNDER")}
_PREFIX = {BOXES: "BOX", IMAGE: "IMAGE", IMAGES: "IMAGE_ARRAY", ANSWERS: "ANSWER_ARRAY"}
MAX_PASSES = 6


@dataclass
class Repair:
    text: str
    before: list[Violation]
    after: list[Violation]
    changed: bool = False

    @property
    def valid(self) -> bool:
        return not self.after


def _stem(name: str) -> str:
    return re.sub(r"\d+$", "", name)


class _Scope:
    """Variables in definition order with their kinds, for "the latest X" lookups."""

    def __init__(self):
        self.kinds = {INPUT: IMAGE}
        self.order = [INPUT]

    def define(self, name, kind):
        if name in self.order:
            self.order.remove(name)
        self.order.append(name)
        self.kinds[name] = kind

    def latest(self, kinds) -> str | None:
        return next((v for v in reversed(self.order) if self.kinds[v] in kinds), None)

    def latest_stem(self, name) -> str | None:
        return next((v for v in reversed(self.order) if _stem(v) == _stem(name)), None)


def _fresh(kind: str, taken: set) -> str:
    prefix = _PREFIX.get(kind, "ANSWER")
    i = 0
    while f"{prefix}{i}" in taken:
        i += 1
    taken.add(f"{prefix}{i}")
    return f"{prefix}{i}"


def _module_fix(name: str, args: list) -> str | None:
    if name in MODULE_SYNONYMS:
        return MODULE_SYNONYMS[name]
    if name.startswith("CROP"):
        for side, cues in _SIDE_CUES.items():
            if any(cue in name[4:] for cue in cues):
                return f"CROP_{side}"
        return "CROP"
    close = difflib.get_close_matches(name, list(MODULES), n=1, cutoff=0.8)
    return close[0] if close else None


def _fix_expr(expr: str) -> str:
    fixed = re.sub(r"(?<![=!<>])=(?!=)", "==", expr)
    fixed = fixed.replace("&&", " and ").replace("||", " or ")
    fixed = re.sub(r"!(?!=)", " not ", fixed)
    return re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", fixed))


def _fix_eval(step: Step, scope: _Scope) -> Step:
    expr = step.get("expr")
    if expr is None or expr.kind != "str":
        return step
    text = str(expr.value)
    try:
        compile_expression(text)
    except EvalError:
        text = _fix_expr(text)
    for name in expression_variables(text):
        if name not in scope.kinds:
            new = scope.latest_stem(name) or scope.latest((ANSWER, NUMBER, TEXT, ANSWERS))
            if new:
                text = re.sub(rf"(?<![\w]){name}(?![\w])", new, text)
    args = [(n, Value("str", text) if n == "expr" else v) for n, v in step.args]
    return replace(step, args=args)


def _fix_args(step: Step, scope: _Scope, question: str | None) -> Step:
    module, args, seen = MODULES[step.module], [], set()
    for name, value in step.args:
        name = name if module.arg(name) else ARG_SYNONYMS.get(name, name)
        arg = module.arg(name)
        if arg is None or name in seen:
            continue  # unknown or duplicate: dropped
        seen.add(name)
        if value.kind == "word":
            value = Value("str", value.value)
        if arg.kinds and value.kind == "str" and str(value.value) in scope.kinds:
            value = Value("var", str(value.value))  # image='IMAGE0'
        if arg.literal == "int" and value.kind in ("str", "float"):
            digits = re.fullmatch(r"\s*(\d+)(?:\.0*)?\s*", str(value.value))
            value = Value("int", int(digits.group(1))) if digits else value
        elif arg.literal == "str" and value.kind in ("int", "float"):
            value = Value("str", str(value.value))
        if arg.kinds and ANY not in arg.kinds and (value.kind != "var" or scope.kinds.get(
                value.value) not in (*arg.kinds, ANY)):
            wanted = arg.kinds if name != "image" or step.module != "VQA" else (IMAGE, IMAGES)
            new = scope.latest(wanted) if value.kind == "var" else None
            value = Value("var", new) if new else value
        elif arg.kinds and value.kind == "var" and value.value not in scope.kinds:
            new = scope.latest((ANSWER, NUMBER, TEXT, ANSWERS, BOXES, IMAGE, IMAGES))
            value = Value("var", new) if new else value
        args.append((name, value))
    for arg in module.args:
        if arg.required and arg.name not in seen:
            value = {"image": scope.latest((IMAGE,)) if step.module == "VQA" else INPUT,
                     "box": scope.latest((BOXES,)),
                     "question": question, "var": scope.latest((ANSWER, NUMBER, TEXT, ANSWERS))
                     }.get(arg.name)
            if value:
                args.append((arg.name, Value("str" if arg.name == "question" else "var", value)))
    return replace(step, args=args)


def _per_step(steps: list[Step], question: str | None) -> list[Step]:
    scope, rename, seen, out = _Scope(), {}, {}, []
    taken = {s.out for s in steps} | {INPUT}
    for step in steps:
        step = replace(step, args=[(n, Value("var", rename.get(v.value, v.value))
                                    if v.kind == "var" else v) for n, v in step.args])
        if step.module == "EVAL" and rename:
            expr = step.get("expr")
            if expr is not None and expr.kind == "str":
                text = str(expr.value)
                for old, new in rename.items():
                    text = re.sub(rf"(?<![\w]){old}(?![\w])", new, text)
                step = replace(step, args=[(n, Value("str", text) if n == "expr" else v)
                                           for n, v in step.args])
        if step.module not in MODULES:
            fixed = _module_fix(step.module, step.args)
            step = replace(step, module=fixed) if fixed else step
        if step.module in MODULES:
            step = _fix_args(step, scope, question)
            if step.module == "EVAL":
                step = _fix_eval(step, scope)
        rename.pop(step.out, None)
        if step.out == INPUT or step.out in MODULES:
            new = _fresh(step_kind(step, scope.kinds), taken)
            rename[step.out] = new
            step = replace(step, out=new)
        key = step.render().split("=", 1)[1]
        if key in seen and step.module != "RESULT":
            rename[step.out] = seen[key]
            continue
        seen.setdefault(key, step.out)
        scope.define(step.out, step_kind(step, scope.kinds))
        out.append(step)
    return out


def _best_phrase(text: str, question: str, used: set) -> str | None:
    phrases = Q.noun_phrases(question)
    if not phrases:
        return None
    want = Q.content(text)
    score = lambda p: (len(want & Q.content(p)), p not in used)  # noqa: E731
    return max(phrases, key=score)


def _semantic(steps: list[Step], question: str) -> list[Step]:
    sides, asked = Q.relations(question), Q.content(question)
    used = {str(s.get("object").value) for s in steps
            if s.module == "LOC" and s.get("object") is not None}
    out = []
    for step in steps:
        side = step.module[len("CROP_"):] if step.module.startswith("CROP_") else None
        if side in Q.RELATIONS and side not in sides:
            step = replace(step, module=f"CROP_{sides[0]}" if len(sides) == 1 else "CROP")
        obj = step.get("object") if step.module == "LOC" else None
        if obj is not None and obj.kind == "str" and str(obj.value).upper() not in HALVES:
            text = str(obj.value)
            sentence = "?" in text or len(Q.words(text)) > 5 or (
                Q.words(text) and Q.words(text)[0] in Q.QUESTION_WORDS)
            if sentence or not Q.content(text) <= asked:
                better = _best_phrase(text, question, used - {text})
                if better and better != text:
                    used.add(better)
                    step = replace(step, args=[(n, Value("str", better) if n == "object" else v)
                                               for n, v in step.args])
        out.append(step)
    return _multi_instance(out, question)


def _dependents(steps: list[Step], root: str) -> set[int]:
    reach, found = {root}, set()
    for i, step in enumerate(steps):
        if set(step.inputs()) & reach:
            found.add(i)
            reach.add(step.out)
    return found


def _multi_instance(steps: list[Step], question: str) -> list[Step]:
    pairs = multi_instance_crops(Script([], steps), question)
    if not pairs:
        return steps
    (loc, crop), (noun, count) = pairs[0], Q.multi_instance(question)
    deps = _dependents(steps, crop.out)
    vqa = next((i for i in sorted(deps) if steps[i].module == "VQA"
                and steps[i].get("image") is not None and steps[i].get("image").value == crop.out), None)
    if vqa is None:
        return steps
    taken = {s.out for s in steps} | {INPUT}
    images, answers, verdict = _fresh(IMAGES, taken), _fresh(ANSWERS, taken), _fresh(ANSWER, taken)
    each = [("image", crop.get("image")), ("box", crop.get("box"))]
    if count:
        each.append(("k", Value("int", count)))
    attribute = re.search(r"\bsame (\w+)", " ".join(Q.words(question)))
    asked = (f"What {attribute.group(1)} is the {noun}?" if attribute
             else str(steps[vqa].get("question").value))
    if Q.asks_same(question):
        test = "> 1" if "different" in Q.words(question) else "== 1"
        expr = f"'yes' if len(set({{{answers}}})) {test} else 'no'"
    elif is_yes_no(asked) or is_yes_no(question):
        expr = f"'yes' if all({{{answers}}}) else 'no'"
    else:
        expr = f"{{{answers}}}[0]"
    out, had_result = [], any(s.module == "RESULT" for s in steps)
    for i, step in enumerate(steps):
        if step is crop:
            out.append(replace(step, out=images, module="CROP_EACH", args=each))
        elif i == vqa:
            out.append(replace(step, out=answers, args=[("image", Value("var", images)),
                                                         ("question", Value("str", asked))]))
            out.append(Step(step.line, verdict, "EVAL", [("expr", Value("str", expr))]))
        elif i not in deps:
            out.append(step)
    if had_result and not any(s.module == "RESULT" for s in out):
        out.append(Step(0, "FINAL_RESULT", "RESULT", [("var", Value("var", verdict))]))
    return out


def _results(steps: list[Step], question: str | None) -> list[Step]:
    scope = _Scope()
    for step in steps:
        scope.define(step.out, step_kind(step, scope.kinds))
    taken = {s.out for s in steps} | {INPUT}
    results = [s for s in steps if s.module == "RESULT"]
    if not results:
        var = scope.latest((ANSWER, NUMBER, TEXT, ANSWERS))
        if var is None or not steps:
            return steps
        return steps + [Step(0, "FINAL_RESULT" if "FINAL_RESULT" not in taken else
                             _fresh(ANSWER, taken), "RESULT", [("var", Value("var", var))])]
    last = results[-1]
    var = last.get("var")
    held = scope.kinds.get(var.value) if var is not None and var.kind == "var" else None
    if held not in (IMAGE, IMAGES, BOXES) or (held != BOXES and not question):
        return steps
    extra, new = [], _fresh(ANSWER, taken)
    if held == BOXES:
        extra.append(Step(0, new, "COUNT", [("box", var)]))
        if question and is_yes_no(question):
            count, new = new, _fresh(ANSWER, taken)
            extra.append(Step(0, new, "EVAL", [("expr", Value("str",
                                                             f"'yes' if {{{count}}} > 0 else 'no'"))]))
    else:
        extra.append(Step(0, new, "VQA", [("image", var), ("question", Value("str", question))]))
    i = steps.index(last)
    return steps[:i] + extra + [replace(last, args=[("var", Value("var", new))])] + steps[i + 1:]


def _from_syntax(script: Script) -> list[Step]:
    """Steps of the script, bad lines closed or trimmed where that parses, else dropped."""
    bad, steps = {i.line for i in script.syntax}, list(script.steps)
    for number in sorted(bad):
        raw = script.lines[number - 1].strip()
        cut = raw[:raw.rfind(")") + 1] if ")" in raw else raw
        for candidate in (raw + ")", cut, cut + ")"):
            try:
                steps.append(parse_line(candidate, number))
                break
            except ScriptSyntaxError:
                continue
    return sorted(steps, key=lambda s: s.line)


def _render(steps: list[Step]) -> str:
    return "\n".join(s.render() for s in steps)


def repair_script(script: str, question: str | None = None) -> Repair:
    """Repair ``script`` (see the module docstring); idempotent."""
    before = check_script(script, question)
    if not before:
        return Repair(script, before, before)
    steps = _from_syntax(parse_script(script))
    for _ in range(MAX_PASSES):
        previous = _render(steps)
        steps = _per_step(steps, question)
        if question:
            steps = _semantic(steps, question)
        steps = _results(steps, question)
        if _render(steps) == previous:
            break
    text = _render(steps)
    after = check_script(text, question)
    if text == parse_script(script).render() or (after and len(after) >= len(before)):
        return Repair(script, before, before)  # nothing fixed: leave the script as written
    return Repair(text, before, after, changed=True)
