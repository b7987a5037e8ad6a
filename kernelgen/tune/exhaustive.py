"""Exhaustive search: every point of the space, in the op's order; it ignores what it is told.

>>> from kernelgen.tune import exhaustive
>>> s = exhaustive.Search(["a", "b", "c"], seed=0)
>>> s.ask(2), s.ask(2), s.ask(2)
(['a', 'b'], ['c'], [])
"""
from __future__ import annotations

from .space import Candidate


class Search:
    def __init__(self, space: list[Candidate], seed: int = 0):
        self.space, self.next = space, 0

    def ask(self, n: int) -> list[Candidate]:
        out = self.space[self.next:self.next + n]
        self.next += len(out)
        return out

    def tell(self, results) -> None:
        pass
