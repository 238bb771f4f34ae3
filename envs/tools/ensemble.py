"""VLAgent's ensemble of tool models: box fusion, Eq. 1, and a Backend that answers with
the consensus of several member backends (detectors for ``find``, VQA models for
``simple_query``).

Conventions the paper leaves open (VLAgent section 2.2.2 names "consensus based
fusion" and no more):

- **Box fusion** (the pseudo-label B): every member's boxes are clustered greedily, best
  ranked first, by IoU >= ``iou`` with a cluster's fused box; a member adds at most one
  box to a cluster.  A cluster is kept when at least ``vote`` of the members (default
  half, rounded up) put a box in it; its box is the coordinate-wise median of its
  members' boxes; clusters are ranked by support, then by the members' mean rank (our
  backends return boxes best first).
- **Answer fusion** (VQA): the most common normalised answer; a tie goes to the member
  listed first.
- **Eq. 1 on empty lists**: two empty lists agree (IoU 1: both say "nothing there");
  one empty and one not: 0.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from envs.tools.backend import Backend, View


def _grid(*lists):
    xs = sorted({v for boxes in lists for b in boxes for v in (b[0], b[2])})
    ys = sorted({v for boxes in lists for b in boxes for v in (b[1], b[3])})
    return xs, ys


def _cover(boxes, xs, ys) -> np.ndarray:
    cells = np.zeros((max(len(xs) - 1, 0), max(len(ys) - 1, 0)), dtype=bool)
    for left, lower, right, upper in boxes:
        cells[xs.index(left):xs.index(right), ys.index(lower):ys.index(upper)] = True
    return cells


def area_iou(a: list, b: list) -> float:
    """Eq. 1: |Area(a) ∩ Area(b)| / |Area(a) ∪ Area(b)| of the pixel unions of two box
    lists ((left, lower, right, upper)); overlaps within one list count once."""
    a = [tuple(x) for x in a if x[2] > x[0] and x[3] > x[1]]
    b = [tuple(x) for x in b if x[2] > x[0] and x[3] > x[1]]
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    xs, ys = _grid(a, b)
    cell = np.outer(np.diff(xs), np.diff(ys))
    ca, cb = _cover(a, xs, ys), _cover(b, xs, ys)
    union = float(cell[ca | cb].sum())
    return float(cell[ca & cb].sum()) / union if union else 1.0


def box_iou(a, b) -> float:
    ix = min(a[2], b[2]) - max(a[0], b[0])
    iy = min(a[3], b[3]) - max(a[1], b[1])
    if ix <= 0 or iy <= 0:
        return 0.0
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def fuse_boxes(lists: list[list], iou: float = 0.5, vote: float = 0.5) -> list[tuple]:
    """The pseudo-label from several members' ranked box lists (module docstring)."""
    lists = [[tuple(b) for b in boxes] for boxes in lists]
    if not lists:
        return []
    candidates = sorted(((rank, m, box) for m, boxes in enumerate(lists)
                         for rank, box in enumerate(boxes)), key=lambda t: (t[0], t[1]))
    clusters: list[dict] = []
    for rank, member, box in candidates:
        best, best_iou = None, iou
        for c in clusters:
            if member in c["members"]:
                continue
            overlap = box_iou(c["box"], box)
            if overlap >= best_iou:
                best, best_iou = c, overlap
        if best is None:
            clusters.append({"members": {member: (rank, box)}, "box": box})
        else:
            best["members"][member] = (rank, box)
            coords = np.array([b for _, b in best["members"].values()], dtype=float)
            best["box"] = tuple(int(round(v)) for v in np.median(coords, axis=0))
    need = max(1, math.ceil(vote * len(lists) - 1e-9))
    kept = [c for c in clusters if len(c["members"]) >= need]
    kept.sort(key=lambda c: (-len(c["members"]),
                             float(np.mean([r for r, _ in c["members"].values()]))))
    return [c["box"] for c in kept]


_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten".split())}


def normalise_answer(answer) -> str:
    """Lower case, no final period, single spaces, number words as digits."""
    words = str(answer).strip().lower().rstrip(".").split()
    return " ".join(_NUMBER_WORDS.get(w, w) for w in words)


def fuse_answers(answers: list) -> str:
    """The most common normalised answer; ties go to the earliest member."""
    normal = [normalise_answer(a) for a in answers]
    counts = Counter(normal)
    top = max(counts.values())
    return next(a for a in normal if counts[a] == top)


class EnsembleBackend(Backend):
    """``find``: fused boxes of every member; ``simple_query``/``answer``: the vote of the
    members; everything else from the first member (the default tool)."""

    name = "ensemble"

    def __init__(self, members: list, iou: float = 0.5, vote: float = 0.5,
                 vote_answers: bool = True):
        if not members:
            raise ValueError("an ensemble needs at least one member backend")
        self.members = list(members)
        self.iou, self.vote, self.vote_answers = iou, vote, vote_answers

    @property
    def cache_key(self) -> str:
        return "ensemble(" + ",".join(m.cache_key for m in self.members) + \
            f")|{self.iou}|{self.vote}|{self.vote_answers}"

    def _each(self, method: str, views: list, args_list: list) -> list[list]:
        """[member][request] results, batched per member when it can."""
        out = []
        for m in self.members:
            batched = getattr(m, f"batch_{method}", None)
            out.append(batched(views, args_list) if batched else
                       [getattr(m, method)(v, *a) for v, a in zip(views, args_list)])
        return out

    def batch_find(self, views: list, args_list: list) -> list:
        per_member = self._each("find", views, args_list)
        return [tuple(fuse_boxes([member[i] for member in per_member], self.iou, self.vote))
                for i in range(len(views))]

    def find(self, view: View, phrase: str) -> tuple:
        return self.batch_find([view], [(phrase,)])[0]

    def batch_simple_query(self, views: list, args_list: list) -> list:
        if not self.vote_answers:
            return self.members[0].batch_simple_query(views, args_list) \
                if hasattr(self.members[0], "batch_simple_query") else \
                [self.members[0].simple_query(v, *a) for v, a in zip(views, args_list)]
        per_member = self._each("simple_query", views, args_list)
        return [fuse_answers([member[i] for member in per_member]) for i in range(len(views))]

    def simple_query(self, view: View, question: str) -> str:
        return self.batch_simple_query([view], [(question,)])[0]

    def answer(self, view: View, question: str) -> str:
        return self.simple_query(view, question)

    def verify_property(self, view: View, object_name: str, prop: str) -> bool:
        return self.members[0].verify_property(view, object_name, prop)

    def match_score(self, view: View, text: str) -> float:
        return self.members[0].match_score(view, text)

    def describe(self, view: View) -> str:
        return self.members[0].describe(view)

    def llm_query(self, question: str, long_answer: bool = True) -> str:
        return self.members[0].llm_query(question, long_answer)


def make_ensemble(members=("shapes-cv", "shapes-cv/half", "shapes-cv/blur"), **kwargs):
    """Registry factory: ``members`` are backend names or {"backend": name, **kwargs}."""
    from envs.tools.registry import get_backend

    built = [get_backend(m) if isinstance(m, str) else
             get_backend(m["backend"], **{k: v for k, v in m.items() if k != "backend"})
             for m in members]
    return EnsembleBackend(built, **kwargs)
