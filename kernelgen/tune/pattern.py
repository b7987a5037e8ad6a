"""Pattern search: poll the points around the best one so far, nearest first; move on any gain; restart.

>>> from kernelgen.tune import pattern
>>> from kernelgen.tune.runners import Outcome
>>> from kernelgen.tune.space import Candidate
>>> space = [Candidate({"x": x, "y": y}) for x in range(12) for y in range(12)]
>>> s = pattern.Search(space, seed=0)
>>> n = 0
>>> while (asked := s.ask(4)):                     # time falls toward (9, 2)
...     s.tell([(c, Outcome("ok", 1.0 + abs(c.knobs["x"] - 9) + abs(c.knobs["y"] - 2))) for c in asked])
...     n += len(asked)
...     if s.best.knobs == {"x": 9, "y": 2}:
...         break
>>> s.best.knobs, n < 60
({'x': 9, 'y': 2}, True)

A discrete compass search with restarts (the pattern search Helion autotunes with, on the knobs):
  - A run starts with `init` random points. Its incumbent is the fastest point of the run told so
    far (a point of equal time does not replace it).
  - Each ask polls the incumbent's pattern: the unasked points within two knob changes of it
    (neighbours.around), nearest first, ties in a seeded random order. One-knob moves come first;
    two-knob moves reach what one-knob walks cannot (tiles that must change together).
  - A point told faster than the incumbent becomes the incumbent: polling goes on around it.
  - When the incumbent's whole pattern has been asked, the run has converged on a local minimum and
    a new run starts from fresh random points (the best of every run is kept: `best`).
Failures cost +inf. Asks may run ahead of tells (the builders ask one batch ahead): the incumbent is
then the best of what was told. ask returns [] only when every point has been asked; all randomness
comes from one random.Random(seed).
"""
from __future__ import annotations

import math
import random

from .neighbours import Neighbours
from .runners import Outcome
from .space import Candidate

INIT = 4
KNOBS = 2      # the pattern: points within this many knob changes


class Search:
    def __init__(self, space: list[Candidate], seed: int = 0, init: int = INIT, knobs: int = KNOBS):
        self.space = list(space)
        self.rng = random.Random(seed)
        self.where = {id(c): i for i, c in enumerate(self.space)}
        self.neighbours = Neighbours([c.knobs for c in self.space])
        self.restarts = list(range(len(self.space)))
        self.rng.shuffle(self.restarts)
        self.init, self.knobs = init, knobs
        self.asked: set[int] = set()
        self.cost: dict[int, float] = {}
        self.run: set[int] = set()               # the points asked in the current run
        self.incumbent: int | None = None        # the fastest of them told so far
        self.pattern: tuple[int, list[int]] | None = None   # (incumbent, its pattern, nearest last)
        self.runs = 1

    @property
    def best(self) -> Candidate | None:
        ok = [i for i, c in self.cost.items() if c < math.inf]
        return self.space[min(ok, key=lambda i: (self.cost[i], i))] if ok else None

    def ask(self, n: int) -> list[Candidate]:
        picked: list[int] = []
        while len(picked) < max(n, 0) and len(self.asked) < len(self.space):
            i = self._next()
            self.asked.add(i)
            self.run.add(i)
            picked.append(i)
        return [self.space[i] for i in picked]

    def tell(self, results: list[tuple[Candidate, Outcome]]) -> None:
        for cand, out in results:
            i = self.where[id(cand)]
            ok = out.status == "ok" and out.time_us is not None
            self.cost[i] = out.time_us if ok else math.inf
            if i in self.run and self.cost[i] < self.cost.get(self.incumbent, math.inf):
                self.incumbent = i          # strictly faster only: a tie does not move the pattern

    def _next(self) -> int:
        while True:
            if len(self.run) < self.init or self.incumbent is None:
                return self._random()
            if self.pattern is None or self.pattern[0] != self.incumbent:
                self.pattern = (self.incumbent, self._pattern_of(self.incumbent))
            moves = self.pattern[1]
            while moves and moves[-1] in self.asked:
                moves.pop()
            if moves:
                return moves.pop()
            self.run, self.pattern, self.incumbent = set(), None, None     # converged: a new run
            self.runs += 1

    def _pattern_of(self, i: int) -> list[int]:
        by_distance: dict[int, list[int]] = {}
        for d, j in self.neighbours.around(i, self.knobs):
            if j not in self.asked:
                by_distance.setdefault(d, []).append(j)
        order = []
        for d in sorted(by_distance):
            ring = by_distance[d]
            self.rng.shuffle(ring)
            order += ring
        order.reverse()
        return order

    def _random(self) -> int:
        while self.restarts[-1] in self.asked:
            self.restarts.pop()
        return self.restarts.pop()
