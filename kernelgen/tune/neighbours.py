"""Points of a space that differ from a point in one knob: the moves of anneal and pattern search.

>>> from kernelgen.tune.neighbours import Neighbours
>>> pts = [{"t": t, "c": c} for t in (64, 128, 256, 512) for c in ("a", "b")]
>>> nb = Neighbours(pts)
>>> [pts[j] for j in nb.of(2)]                     # t=128, c=a: t one value down and up, c to its other value
[{'t': 64, 'c': 'a'}, {'t': 256, 'c': 'a'}, {'t': 128, 'c': 'b'}]
>>> [pts[j] for j in nb.of(2, step=2)]             # two values away; a choice has no farther values
[{'t': 512, 'c': 'a'}]
>>> nb.max_step
3
>>> [(d, pts[j]) for d, j in nb.around(2)][:4]    # within two knob changes, nearest first
[(1, {'t': 64, 'c': 'a'}), (1, {'t': 128, 'c': 'b'}), (1, {'t': 256, 'c': 'a'}), (2, {'t': 64, 'c': 'b'})]

  - a numeric knob moves `step` values down or up among the legal points that keep every other knob
    (so a value made illegal by the others is stepped over, not a wall);
  - a boolean or categorical knob moves to any of its other values at step 1 (their order means
    nothing), and nowhere at larger steps.

`around(i, knobs=2)` is the wider pattern: every point that differs from point i in at most
`knobs` knobs, at its distance (the sum over knobs of the rank difference of a numeric knob among
its values in the space, 1 for a changed label), nearest first. Two knobs matter because a space's
one-knob moves often fall apart into islands: a block tile and a warp tile that must change
together (sgemm's space of 392 points on an H100 was 10 islands, gemm's 319 are 7, three of them single
points), so no walk of one-knob moves can reach some points at all.
"""
from __future__ import annotations

import numpy as np


class Neighbours:
    """For each point, the points `step` knob values away, found through one index per knob: the
    points grouped by the values of every other knob."""

    def __init__(self, points: list[dict]):
        self.points = points
        names = list(points[0]) if points else []
        self.numeric = {k: all(_is_number(p.get(k)) for p in points) for k in names}
        self.groups: dict[str, dict[tuple, list[int]]] = {}
        self.max_step = 1 if points else 0   # the largest step that can reach another point
        for k in names:
            groups: dict[tuple, list[int]] = {}
            for i, p in enumerate(points):
                groups.setdefault(self._rest(p, k), []).append(i)
            if self.numeric[k]:
                for members in groups.values():
                    members.sort(key=lambda i: (points[i][k], i))
                    self.max_step = max(self.max_step, len(members) - 1)
            self.groups[k] = groups

    def around(self, i: int, knobs: int = 2) -> list[tuple[int, int]]:
        """(distance, j) for every point j != i differing from i in at most `knobs` knobs, nearest first."""
        if not hasattr(self, "_ranks"):
            self._ranks, self._is_num = _ranks(self.points, self.numeric)
        diff = self._ranks != self._ranks[i]
        changed = diff.sum(axis=1)
        dist = np.where(self._is_num, np.abs(self._ranks - self._ranks[i]), diff).sum(axis=1)
        near = np.flatnonzero((changed > 0) & (changed <= knobs))
        return sorted((int(dist[j]), int(j)) for j in near)

    def _rest(self, p: dict, knob: str) -> tuple:
        return tuple((k, v) for k, v in p.items() if k != knob)

    def of(self, i: int, step: int = 1) -> list[int]:
        p, out = self.points[i], []
        for k, groups in self.groups.items():
            members = groups[self._rest(p, k)]
            if not self.numeric[k]:
                if step == 1:
                    out += [j for j in members if self.points[j][k] != p[k]]
                continue
            lower = [j for j in members if self.points[j][k] < p[k]]
            higher = [j for j in members if self.points[j][k] > p[k]]
            out += lower[len(lower) - step:len(lower) - step + 1] if len(lower) >= step else []
            out += higher[step - 1:step]
        return out


def _ranks(points: list[dict], numeric: dict[str, bool]) -> tuple[np.ndarray, np.ndarray]:
    """Each point's knobs as integers: a numeric value's rank among the knob's values, a label's code."""
    names = list(numeric)
    out = np.zeros((len(points), len(names)), dtype=np.int64)
    for col, k in enumerate(names):
        if numeric[k]:
            rank = {v: r for r, v in enumerate(sorted({p[k] for p in points}))}
        else:
            rank = {}
            for p in points:
                rank.setdefault(repr(p[k]), len(rank))
        out[:, col] = [rank[p[k] if numeric[k] else repr(p[k])] for p in points]
    return out, np.array([numeric[k] for k in names], dtype=bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
