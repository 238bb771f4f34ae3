"""The held-out set: balanced question families and answers, and its constant-answer baseline.

A held-out score only measures the programs when guessing cannot reach it. Drawn
freely, shapes questions are 5/9 yes/no and some answers ("yes", "small", "1") recur,
so an accuracy of 0.5 can be mostly the answer prior. Validation and test splits are
therefore built with a quota: the families take turns, and within a family no answer
may fill more than half (yes/no) or a quarter (any other answer) of its questions.
The best constant answer then scores at most about 0.28 on the default nine
families; `train.heldout.constant_baseline` reports it beside every accuracy.
"""
from __future__ import annotations

import math
from collections import Counter

YES_NO = ("yes", "no")
OTHER_SHARE = 0.25  # the most any non-yes/no answer may take of its family's questions


class Quota:
    """Which family row i must be, and whether a sampled answer still fits its family.

    families: the families in turn order; row i belongs to ``families[i % len]``.
    """

    # After this many refusals in a row the next answer is taken anyway: a family
    # restricted to fewer answers than the caps assume must not loop forever.
    PATIENCE = 500

    def __init__(self, families):
        self.families = list(families)
        self.counts: dict[str, Counter] = {f: Counter() for f in self.families}
        self.refused = 0

    def family(self, i: int) -> str:
        return self.families[i % len(self.families)]

    def cap(self, family: str, answer: str) -> int:
        """How many times `answer` may appear among the family's questions, this one included."""
        share = 0.5 if answer in YES_NO else OTHER_SHARE
        return max(1, math.ceil((sum(self.counts[family].values()) + 1) * share))

    def take(self, family: str, answer: str) -> bool:
        """Count the answer and return True when it fits its family's cap, else False."""
        if self.counts[family][answer] >= self.cap(family, answer) and self.refused < self.PATIENCE:
            self.refused += 1
            return False
        self.refused = 0
        self.counts[family][answer] += 1
        return True
