"""Random search: a seeded sample of the space without repetition, `budget` points at most.

>>> from kernelgen.tune import random_search
>>> pts = list(random_search.candidates([{"a": i} for i in range(10)], budget=3, seed=1))
>>> len(pts), len({p["a"] for p in pts})
(3, 3)
"""
from __future__ import annotations

import random
from typing import Iterator


def candidates(space: list[dict], budget: int | None, seed: int) -> Iterator[dict]:
    order = list(range(len(space)))
    random.Random(seed).shuffle(order)
    for i in order[:budget] if budget else order:
        yield space[i]
