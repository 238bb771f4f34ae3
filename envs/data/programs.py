"""Reference programs: a correct ViperGPT-style program for any shapes question spec.

They show that every question family is solvable with the ImagePatch API on shapes-cv,
serve as known-good programs in tests of the sandbox, rewards and environments, and as
a ceiling for what a policy can reach on the synthetic set.
"""
from __future__ import annotations

from envs.data.questions import phrase
from policies.programs import HEADER

_HEADER = HEADER + "    image_patch = ImagePatch(image)\n"

_REL = {"left": "{a}.horizontal_center < {b}.horizontal_center",
        "right": "{a}.horizontal_center > {b}.horizontal_center",
        "above": "{a}.vertical_center > {b}.vertical_center",
        "below": "{a}.vertical_center < {b}.vertical_center"}


def _rel(rel: str, a: str, b: str) -> str:
    return _REL[rel].format(a=a, b=b)


def _body(spec: dict) -> str:
    f = spec["family"]
    if f == "existence":
        return f'return bool_to_yesno(image_patch.exists("{phrase(spec["obj"])}"))'
    if f == "counting":
        return f'return str(len(image_patch.find("{phrase(spec["obj"])}")))'
    if f == "attribute":
        return (f'patches = image_patch.find("{phrase(spec["obj"])}")\n'
                f'return patches[0].simple_query("What {spec["attr"]} is this?")')
    if f == "choose":
        o1, o2 = spec["options"]
        return (f'patch = image_patch.find("{phrase(spec["obj"])}")[0]\n'
                f'return "{o1}" if patch.verify_property("object", "{o1}") else "{o2}"')
    if f == "spatial_verify":
        return (f'a = image_patch.find("{phrase(spec["a"])}")[0]\n'
                f'b = image_patch.find("{phrase(spec["b"])}")[0]\n'
                f'return bool_to_yesno({_rel(spec["rel"], "a", "b")})')
    if f == "spatial_query":
        return (f'b = image_patch.find("{phrase(spec["b"])}")[0]\n'
                f'found = [a for a in image_patch.find("{phrase(spec["a"])}")\n'
                f'         if {_rel(spec["rel"], "a", "b")}]\n'
                f'return found[0].simple_query("What {spec["attr"]} is this?")')
    if f == "count_compare":
        op = {"more": ">", "fewer": "<", "same": "=="}[spec["op"]]
        return (f'n_a = len(image_patch.find("{phrase(spec["a"])}"))\n'
                f'n_b = len(image_patch.find("{phrase(spec["b"])}"))\n'
                f'return bool_to_yesno(n_a {op} n_b)')
    if f == "logic":
        return (f'return bool_to_yesno(image_patch.exists("{phrase(spec["a"])}") {spec["op"]} '
                f'image_patch.exists("{phrase(spec["b"])}"))')
    if f == "itm":
        lines, names = [], []
        for i, c in enumerate(spec["claims"]):
            name = f"claim_{i}"
            names.append(name)
            if c["kind"] == "exist":
                lines.append(f'{name} = image_patch.exists("{phrase(c["obj"])}")')
            elif c["kind"] == "count":
                lines.append(f'{name} = len(image_patch.find("{phrase(c["obj"])}")) == {c["n"]}')
            else:
                lines.append(f'{name} = any(\n    {_rel(c["rel"], "a", "b")}\n'
                             f'    for a in image_patch.find("{phrase(c["a"])}")\n'
                             f'    for b in image_patch.find("{phrase(c["b"])}")\n'
                             f'    if distance(a, b) != -1\n)')
        return "\n".join(lines) + f"\nreturn bool_to_yesno({' and '.join(names)})"
    raise ValueError(f"no reference program for family {f!r}")


def reference_program(spec: dict) -> str:
    """Source of ``execute_command(image)`` answering ``spec`` through the tools."""
    body = _body(spec).replace("\n", "\n    ")
    return _HEADER + "    " + body + "\n"
