"""The search space as the strategies see it, and the contract between a strategy and the tune loop.

>>> from kernelgen.ops import get_op
>>> from kernelgen.target import target
>>> from kernelgen.tune.space import legal_space
>>> op = get_op("reduce_sum")
>>> space, pruned = legal_space(op, op.problem({"n": 1 << 20}), target())
>>> len(space), pruned, space[0].knobs["threads"]
(264, 24, 256)

A Candidate is one legal point: its knobs, the schedule they make, the checked kernel, its plan
for the tuned problem and its feature vector (kernelgen.features, so a model learns without
compiling). Candidates compare by identity: a strategy is handed one list and answers with members
of it.

A strategy is made from (space, seed) and driven in a closed loop:

    ask(n)       up to n candidates it has not asked for before; [] when it has nothing more
    tell(pairs)  [(candidate, Outcome)] for what was asked, failures included (time_us None)

The loop asks in batches, runs, tells and records, and stops at the budget or on an empty ask.
A strategy may return fewer than n (one that waits for results before moving); it must not repeat,
and it may be asked again before it was told all of an earlier ask: with builders, the next batch
is asked for while the GPU measures the last one, so it compiles in the meantime. Batches are told
in the order they were asked, and when they are asked depends only on counts, never on how fast
anything ran, so a seed replays the same search.

A strategy module whose Search takes a `history` keyword is handed what other runs measured of the
same op on other problems (and GPUs): a list of Observation, to learn from before measuring
anything (the model strategy does; the others take no such keyword and are not given it).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ..errors import ScheduleError, UsageError
from ..features import features
from ..ops.base import Kernel, Op, Plan, Problem
from ..schedule import Schedule
from ..target import Target
from .runners import Outcome


@dataclass(frozen=True, eq=False)
class Candidate:
    knobs: dict[str, Any]
    schedule: Schedule | None = None
    kernel: Kernel | None = None
    plan: Plan | None = None      # the kernel's launches on the tuned problem
    features: dict | None = None  # kernelgen.features of kernel and plan on the tuner's target

    @property
    def name(self) -> str:
        return self.kernel.name if self.kernel else ""


class Observation(NamedTuple):
    """One measurement of another problem: its features, its time (None: it failed), its problem."""
    features: dict
    time_us: float | None
    group: str


class Strategy(Protocol):
    def ask(self, n: int) -> list[Candidate]: ...

    def tell(self, results: list[tuple[Candidate, Outcome]]) -> None: ...


SPACES = ("default", "wide")


def check_space(op: Op, space: str) -> None:
    """A UsageError unless `space` is one of SPACES that `op` has (said before anything starts)."""
    if space not in SPACES:
        raise UsageError(f"space {space!r} is unknown; choose one of {', '.join(SPACES)}")
    if space == "wide" and not has_wide(op):
        raise UsageError(f"{op.name} has no wide space (ops with one: {', '.join(wide_ops())})")


def has_wide(op: Op) -> bool:
    return type(op).wide_axes is not Op.wide_axes


def wide_ops() -> list[str]:
    from ..ops import OPS
    return [name for name, op in OPS.items() if has_wide(op)]


def points(op: Op, problem: Problem, limits: Target, space: str = "default"):
    """The op's points: its own space, or (wide) each of them crossed with op.wide_axes. A point may
    repeat (a crossed knob the point already set): legal_space keeps one candidate a schedule."""
    check_space(op, space)
    axes = op.wide_axes(problem, limits) if space == "wide" else {}
    for knobs in op.space(problem, limits):
        for combo in itertools.product(*axes.values()):
            yield dict(knobs, **dict(zip(axes, combo)))


def default_candidate(op: Op, problem: Problem, limits: Target, space: list[Candidate]) -> Candidate | None:
    """The op's own default for `problem` (`schedule_for`) as a candidate: the space's own where it holds the
    same schedule, else one made like the space's; None where it is not legal for the problem on `limits`."""
    try:
        sched = op.for_problem(problem).schedule_for(problem, limits)
        same = next((c for c in space if c.schedule.to_json() == sched.to_json()), None)
        return same or candidate(op, problem, limits, op.knobs_from_schedule(sched), sched)
    except ScheduleError:
        return None


def candidate(op: Op, problem: Problem, limits: Target, knobs: dict, sched: Schedule) -> Candidate:
    """`sched` (of `knobs`) as a candidate for `problem` on `limits`: its kernel, its plan (legal for this size
    too) and their features; ScheduleError where it is not legal."""
    kernel = op.for_problem(problem).kernel(sched, limits, problem.types, problem.layout)
    plan = op.plan(kernel, problem, limits)
    return Candidate(knobs, sched, kernel, plan, features(kernel, limits, plan=plan))


def legal_space(op: Op, problem: Problem, limits: Target, space: str = "default") -> tuple[list[Candidate], int]:
    """(the op's points that are legal for `problem` on `limits`, how many were pruned). Pruning
    happens here, before anything is compiled: each illegal point raises ScheduleError. Points that
    make the same schedule (knobs that do not apply to it) are one candidate."""
    legal, pruned, seen = [], 0, set()
    for knobs in points(op, problem, limits, space):
        try:
            sched = op.schedule_from_knobs(**knobs)
            key = sched.to_json()
            if key in seen:
                continue
            seen.add(key)
            legal.append(candidate(op, problem, limits, knobs, sched))
        except ScheduleError:
            pruned += 1
    return legal, pruned
