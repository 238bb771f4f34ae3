"""VLAgent's checks as rewards (TRL signature; none reads a label or the ``spec`` column).

- ``parse``: 1 for a script or program the SS-parser finds valid, minus ``penalty`` per
  violation (floored at 0).  Reads the question (for the auditor's rules) and nothing else.
- ``caption_agreement``: 1 when the program's answer agrees with the answer an LLM judge
  reads off the backend's caption of the image, 0 when it disagrees, None (masked) when
  the judge finds no explicit clue in the caption.  Reads the image and the question.
- ``ensemble_iou``: the mean Eq. 1 IoU between the boxes the program's localisation
  calls got from the default detector and the ensemble's pseudo-label for the same calls
  (LOC lines / ``find`` calls with a literal phrase on the whole image); calls where both
  find nothing carry no evidence and are skipped; None when no call is left.
"""
from __future__ import annotations

import ast
import functools
from collections import Counter

from policies import DEFAULT_MODEL
from policies.programs import parse_program, program_from
from rewards.registry import Reward


def violations(prompt, completion, question=None) -> list:
    """The SS-parser's violations of one completion (script or Python program)."""
    from envs.visprog.compile import script_of
    from rewards.vlagent.pychecks import program_violations
    from rewards.vlagent.ssparser import check_script

    program = program_from(prompt, completion)
    script = script_of(program)
    return check_script(script, question) if script is not None else program_violations(program, question)


class ParseReward(Reward):
    """`parse`: 1 - penalty x (number of SS-parser violations), at least 0. Each instance
    counts what it scored (valid share, and the share breaking each rule)."""

    name = "parse"
    uses_labels = False

    def __init__(self):
        super().__init__()
        self.counts: Counter = Counter()

    def __call__(self, prompts, completions, question=None, penalty: float = 0.25, **_):
        out = []
        for i, (p, c) in enumerate(zip(prompts, completions)):
            found = violations(p, c, question[i] if question is not None else None)
            self.counts["programs"] += 1
            self.counts["valid"] += not found
            for rule in {v.rule for v in found}:
                self.counts[f"rule/{rule}"] += 1
            out.append(max(0.0, 1.0 - penalty * len(found)))
        return out

    def check_kwargs(self, kwargs: dict) -> None:
        unknown = set(kwargs) - {"penalty"}
        if unknown:
            raise ValueError(f"parse: unknown options {sorted(unknown)}; it takes penalty")
        if not 0 < float(kwargs.get("penalty", 0.25)) <= 1:
            raise ValueError("parse: penalty must be in (0, 1]")

    def metrics(self) -> dict:
        """Share of scored completions that were valid, and that broke each rule (so far)."""
        n = self.counts["programs"]
        return {k if k != "valid" else "valid_share": v / n for k, v in self.counts.items()
                if k != "programs"} if n else {}


@functools.lru_cache(maxsize=None)
def judge_for(name: str):
    """A text LLM judge by model name, loaded once per process (a model, not state)."""
    from policies.text_lm import TextLM

    return TextLM(name, short_tokens=8)


def caption_agreement(prompts, completions, image=None, question=None,
                      judge: str = DEFAULT_MODEL, executor=None, results=None, **_):
    """Agreement with the caption-derived answer; None where the caption gives no clue.
    `executor` and the programs' `results` are the caller's (the reward context); under
    TRL the programs run here, on the process-wide executor, which also runs the captions."""
    from rewards.execution import executor_or_shared, program_results
    from rewards.vlagent.caption import CaptionVerifier, captions_for, same_answer

    if image is None or question is None:
        return [None] * len(completions)
    executor = executor_or_shared(executor)
    answers = [r.answer if r.status == "ok" else None
               for r in program_results(prompts, completions, image, executor, results)]
    verdicts = CaptionVerifier(judge_for(judge)).verify(list(question), captions_for(executor, list(image)),
                                                        answers)
    return [None if not v.clue else float(same_answer(a, v.caption_answer))
            for a, v in zip(answers, verdicts)]


def located_phrases(program: str) -> list[str]:
    """Literal phrases a program localises on the whole image: LOC(image=IMAGE, object=...)
    lines of a script, ``<patch of image>.find("...")`` calls of a Python program."""
    from envs.visprog.compile import script_of
    from envs.visprog.language import HALVES, INPUT, parse_script

    script = script_of(program)
    if script is not None:
        out = []
        for s in parse_script(script).steps:
            img, obj = s.get("image"), s.get("object")
            if s.module == "LOC" and img is not None and img.value == INPUT and obj is not None \
                    and obj.kind == "str" and str(obj.value).upper() not in HALVES:
                out.append(str(obj.value))
        return out
    tree, _ = parse_program(program)
    if tree is None:
        return []
    whole = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
             and isinstance(n.value.func, ast.Name) and n.value.func.id == "ImagePatch"
             and n.value.args and isinstance(n.value.args[0], ast.Name) and n.value.args[0].id == "image"
             for t in n.targets if isinstance(t, ast.Name)}
    return [n.args[0].value for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "find"
            and isinstance(n.func.value, ast.Name) and n.func.value.id in whole and n.args
            and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)]


def boxes_by_detector(detectors: list[str], images: list, phrases: list[list[str]]) -> dict:
    """{detector: [[boxes of each phrase] per image]} with each detector's own find."""
    import numpy as np

    from envs.tools import build_namespace

    out = {}
    for name in detectors:
        patch_cls = build_namespace(name)["ImagePatch"]
        out[name] = []
        for img, wanted in zip(images, phrases):
            patch = patch_cls(np.asarray(img.convert("RGB")) if hasattr(img, "convert") else img)
            out[name].append([[(p.left, p.lower, p.right, p.upper) for p in patch.find(ph)]
                              for ph in wanted])
    return out


class EnsembleIoUReward(Reward):
    """`ensemble_iou`: mean Eq. 1 IoU of the default detector's boxes for the program's
    localisation calls against the ensemble's pseudo-label (module docstring)."""

    name = "ensemble_iou"
    uses_labels = False

    def __call__(self, prompts, completions, image=None, default: str = "shapes-cv",
                 detectors=("shapes-cv", "shapes-cv/half", "shapes-cv/blur"),
                 iou: float = 0.5, vote: float = 0.5, **_):
        from envs.tools.ensemble import area_iou, fuse_boxes

        if image is None:
            return [None] * len(completions)
        phrases = [located_phrases(program_from(p, c)) for p, c in zip(prompts, completions)]
        names = list(dict.fromkeys([default, *detectors]))
        found = boxes_by_detector(names, list(image), phrases)
        out = []
        for i, wanted in enumerate(phrases):
            scores = []
            for k in range(len(wanted)):
                own = found[default][i][k]
                pseudo = fuse_boxes([found[d][i][k] for d in detectors], iou, vote)
                if own or pseudo:
                    scores.append(area_iou(own, pseudo))
            out.append(sum(scores) / len(scores) if scores else None)
        return out

    def check_kwargs(self, kwargs: dict) -> None:
        from envs.tools.registry import available_backends

        for name in [kwargs.get("default", "shapes-cv"), *kwargs.get("detectors", ())]:
            if name not in available_backends():
                raise ValueError(f"ensemble_iou: unknown detector backend {name!r}; available: "
                                 f"{', '.join(available_backends())}")
