"""Random search: a seeded permutation of the space, without repetition; it ignores what it is told.

>>> from kernelgen.tune import random_search
>>> s = random_search.Search(list(range(10)), seed=1)
>>> a, b = s.ask(3), s.ask(100)
>>> len(a), len(b), sorted(a + b) == list(range(10)), s.ask(1)
(3, 7, True, [])
"""
from __future__ import annotations

import random

from .space import Candidate


class Search:
    def __init__(self, space: list[Candidate], seed: int = 0):
        self.order = list(space)
        random.Random(seed).shuffle(self.order)
        self.next = 0

    def ask(self, n: int) -> list[Candidate]:
        out = self.order[self.next:self.next + n]
        self.next += len(out)
        return out

    def tell(self, results) -> None:
        pass
