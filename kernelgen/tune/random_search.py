"""Random search: a seeded permutation of the space, without repetition; it ignores what it is told.

>>> from kernelgen.tune import random_search
>>> s = random_search.Search(list(range(10)), seed=1)
>>> a, b = s.ask(3), s.ask(100)
>>> len(a), len(b), sorted(a + b) == list(range(10)), s.ask(1)
(3, 7, True, [])
"""
from __future__ import annotations

import random

from . import exhaustive
from .space import Candidate


class Search(exhaustive.Search):
    """Exhaustive search over a seeded permutation of the space."""

    def __init__(self, space: list[Candidate], seed: int = 0):
        order = list(space)
        random.Random(seed).shuffle(order)
        super().__init__(order, seed)
