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

  - a numeric knob moves `step` values down or up among the legal points that keep every other knob
    (so a value made illegal by the others is stepped over, not a wall);
  - a boolean or categorical knob moves to any of its other values at step 1 (their order means
    nothing), and nowhere at larger steps.
"""
from __future__ import annotations


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


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
