"""Labelled count-comparison scenes ("Are there more A than B?"): one template, many
questions, for the code that proves or tests a program on the questions of its template."""

from envs.data.render import render
from envs.data.scene import Obj, Scene


def comparison_rows(n: int, seed: int = 0) -> list[dict]:
    """`n` scenes asking "Are there more A than B?" of varying colours and shapes, labelled."""
    import random

    rng = random.Random(seed)
    cells = [(x, y) for x in (40, 100, 160, 220) for y in (40, 110, 180)]
    out = []
    for i in range(n):
        (ca, sa), (cb, sb) = rng.sample([(c, s) for c in ("red", "blue", "green") for s in ("circle", "square")], 2)
        na, nb = rng.sample(range(4), 2)
        places = rng.sample(cells, na + nb)
        objects = [Obj(sa, ca, "small", *places[k]) for k in range(na)] + [
            Obj(sb, cb, "small", *places[na + k]) for k in range(nb)]
        out.append({"id": f"cmp{i}", "image": render(Scene(objects)), "answer": "yes" if na > nb else "no",
                    "question": f"Are there more {ca} {sa}s than {cb} {sb}s?"})
    return out
