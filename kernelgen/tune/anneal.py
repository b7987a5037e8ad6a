"""Simulated annealing over the knobs: walk from point to neighbouring point, toward faster kernels.

>>> from kernelgen.tune import anneal
>>> from kernelgen.tune.runners import Outcome
>>> from kernelgen.tune.space import Candidate
>>> space = [Candidate({"x": x}) for x in range(10)]
>>> s = anneal.Search(space, seed=0)
>>> while (asked := s.ask(2)):                       # time falls toward x = 7
...     s.tell([(c, Outcome("ok", 1.0 + abs(c.knobs["x"] - 7))) for c in asked])
...     if s.best is not None and s.best.knobs["x"] == 7:
...         break
>>> s.best.knobs
{'x': 7}

Neighbours of a point are the points of the space that differ from it in exactly one knob:
  - a numeric knob moves to the adjacent value, the next lower or higher one among the legal points
    that keep every other knob (so a value made illegal by the others is stepped over, not a wall);
  - a boolean or categorical knob moves to any of its other values (their order means nothing).

ask(n): until a point has run correctly, asks sample random points (there is nothing to walk from
yet). Then each ask proposes up to n unvisited neighbours of the current point in a seeded random order; when it has
none left, neighbours of the best points told so far, best first; when none of those are left,
unvisited points at random (a restart), so ask returns [] only when every point has been asked.

tell(results): the fastest of the batch (a failure costs +inf) becomes the current point when it is
faster than the current one, and when slower with the Metropolis probability
exp(-(t - t_current) / (T * t_current)): the slowdown is relative, so a temperature means the same
for a 2 us and a 2 ms kernel. T starts at `t0` (0.05: a neighbour 5% slower is taken with
probability 1/e) and is multiplied by `cooling` after every tell, so the walk climbs out of shallow
dips early and settles later. A failure never becomes current: it says nothing about which way is
faster, so until some point runs correctly the asks stay random samples rather than a blind walk
(a region that fails to launch can be most of a space).

Everything random comes from one random.Random(seed): the same seed and the same outcomes give the
same points in the same order.
"""
from __future__ import annotations

import math
import random
from typing import Iterator

from .neighbours import Neighbours
from .runners import Outcome
from .space import Candidate

__all__ = ["Neighbours", "Search"]

T0 = 0.05
COOLING = 0.9


class Search:
    def __init__(self, space: list[Candidate], seed: int = 0, t0: float = T0, cooling: float = COOLING):
        self.space = list(space)
        self.rng = random.Random(seed)
        self.where = {id(c): i for i, c in enumerate(self.space)}
        self.neighbours = Neighbours([c.knobs for c in self.space])
        self.restarts = list(range(len(self.space)))     # a seeded order for random points
        self.rng.shuffle(self.restarts)
        self.next_restart = 0
        self.asked: set[int] = set()
        self.cost: dict[int, float] = {}
        self.current: int | None = None
        self.temperature, self.cooling = t0, cooling

    @property
    def best(self) -> Candidate | None:
        """The fastest point told so far (None until a point ran correctly)."""
        ok = [i for i, c in self.cost.items() if c < math.inf]
        return self.space[min(ok, key=lambda i: (self.cost[i], i))] if ok else None

    def ask(self, n: int) -> list[Candidate]:
        picked: list[int] = []
        if n <= 0:
            return []
        for i in self._proposals():  # stop right after the n-th: a restart drawn is never dropped
            if i not in self.asked:
                self.asked.add(i)
                picked.append(i)
                if len(picked) == n:
                    break
        return [self.space[i] for i in picked]

    def tell(self, results: list[tuple[Candidate, Outcome]]) -> None:
        told = []
        for cand, out in results:
            i = self.where[id(cand)]
            self.cost[i] = out.time_us if out.status == "ok" and out.time_us is not None else math.inf
            told.append(i)
        if told:
            self._consider(min(told, key=lambda i: (self.cost[i], i)))
        self.temperature *= self.cooling

    def _consider(self, i: int) -> None:
        """Move to point i by the Metropolis rule on its relative slowdown."""
        new = self.cost[i]
        cur = math.inf if self.current is None else self.cost[self.current]
        if new < cur:
            self.current = i
        elif new < math.inf and self.temperature > 0 and cur > 0:
            if self.rng.random() < math.exp(-(new - cur) / (self.temperature * cur)):
                self.current = i

    def _proposals(self) -> Iterator[int]:
        """Points to try, in order of preference; ask() takes the unvisited ones."""
        if self.current is not None:
            yield from self._shuffled(self.neighbours.of(self.current))
            for i in sorted(self.cost, key=lambda i: (self.cost[i], i)):
                if self.cost[i] < math.inf:
                    yield from self._shuffled(self.neighbours.of(i))
        while self.next_restart < len(self.restarts):
            self.next_restart += 1
            yield self.restarts[self.next_restart - 1]

    def _shuffled(self, xs: list[int]) -> list[int]:
        xs = [i for i in xs if i not in self.asked]
        self.rng.shuffle(xs)
        return xs
