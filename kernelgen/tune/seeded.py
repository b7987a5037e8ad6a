"""A search that measures given candidates first (the op's own default for the problem), then whatever
the wrapped strategy asks: a tune then never ends slower than the schedule `run` would take anyway.
(Measured on the H100: of 100 model-guided tunes of at most 32 candidates over the DeepBench conv list,
39 ended slower than `schedule_for` on their own shape, the worst 2.5x; bench_results/2026-11-24-s10.)

>>> from kernelgen.tune import exhaustive, seeded
>>> from kernelgen.tune.runners import Outcome
>>> space = list(range(6))
>>> s = seeded.Search(exhaustive.Search(space), [space[4]])
>>> first = s.ask(3)
>>> s.tell([(c, Outcome("ok", 1.0)) for c in first])
>>> first, s.ask(10), s.ask(1)
([4, 0, 1], [2, 3, 5], [])

The wrapped strategy is told only of candidates it asked for itself: where it asks for a seed (already
measured, or still being measured), that candidate is not measured again; the strategy is told the seed's
outcome as soon as it is known, and asked for another in its place.
"""
from __future__ import annotations

from .runners import Outcome
from .space import Candidate, Strategy


class Search:
    def __init__(self, inner: Strategy, first: list[Candidate]):
        self.inner = inner
        self.pending = list(first)                 # seeds not yet handed out
        self.seeds = {id(c) for c in first}
        self.known: dict[int, Outcome] = {}         # seeds' outcomes, once told
        self.owed: dict[int, Candidate] = {}       # seeds the inner asked for before their outcome was known

    def ask(self, n: int) -> list[Candidate]:
        out = []
        while self.pending and len(out) < n:
            out.append(self.pending.pop(0))
        while len(out) < n:
            asked = self.inner.ask(n - len(out))
            if not asked:
                break
            for c in asked:
                if id(c) not in self.seeds:
                    out.append(c)
                elif id(c) in self.known:           # measured already: the inner hears it at once
                    self.inner.tell([(c, self.known[id(c)])])
                else:                               # being measured: the inner hears it when it is told
                    self.owed[id(c)] = c
        return out

    def tell(self, results: list[tuple[Candidate, Outcome]]) -> None:
        inner = []
        for c, out in results:
            if id(c) not in self.seeds:
                inner.append((c, out))
                continue
            self.known[id(c)] = out
            if id(c) in self.owed:
                inner.append((self.owed.pop(id(c)), out))
        if inner:
            self.inner.tell(inner)
