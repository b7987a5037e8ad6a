"""What the tuning database knows of an op on other problems, as Observations a strategy learns from.

>>> from kernelgen.ops import get_op
>>> from kernelgen.tune.db import Record
>>> from kernelgen.tune.history import observations
>>> op = get_op("reduce_sum")
>>> sched = op.default_schedule()
>>> rec = Record.make("reduce_sum", "n=4096", "sm_90", "H100", sched.to_dict(), op.knobs_from_schedule(sched), "ok", 3.5)
>>> (obs,) = observations(op, op.problem({"n": 1 << 20}), [rec])
>>> obs.time_us, obs.group, obs.features["size.n"]         # features recomputed: this record had none
(3.5, 'n=4096 float32 H100', 4096.0)
>>> observations(op, op.problem({"n": 4096}), [rec])       # the same problem is the tune's own business
[]

Records of the op on any other problem and any GPU are used (the features carry the sizes and the
target's figures, so a model can tell them apart), and those of this problem on other GPUs; records
of the problem being tuned on the GPU being tuned are not (that is `--resume`). A record written before features were stored gets them recomputed from its schedule
and problem; one whose schedule the op no longer accepts is left out.

A record's stored features are taken as they are where its plan has one launch. Those of a plan of
several are recomputed (no compile: a kernel and a plan, under a millisecond a record), because the
records written before kernelgen.features told a plan's helpers apart (2026-11) describe the launch
with the most threads, which for split-K plans is the fill zeroing C (4096 blocks and 31 waves at
every size) or the reduction of the slices, where today's describe the GEMM (features.main_launch); so
old and new records agree. The compiled facts stored beside them (the builder's ptxas.*), which
cannot be recomputed without compiling, are kept where both rules pick the same launch and left out
where they do not, from old and new records alike.
"""
from __future__ import annotations

from ..errors import KernelgenError
from ..features import features, launch_size, main_launch
from ..ops.base import Op, Problem
from ..schedule import Schedule
from ..target import target
from .db import Record, dtype_of
from .space import Observation


def observations(op: Op, problem: Problem, records: list[Record], gpu: str | None = None) -> list[Observation]:
    """The op's records on other problems, or on this problem on another GPU than `gpu`."""
    own = (str(problem), dtype_of(problem))
    out = []
    for r in records:
        if r.op != op.name or ((r.problem, r.dtype) == own and (gpu is None or r.gpu == gpu)):
            continue
        feats = features_of(op, r)
        if feats is None:
            continue
        out.append(Observation(feats, r.time_us if r.status == "ok" else None, f"{r.problem} {r.dtype} {r.gpu}"))
    return out


def problem_of(op: Op, rec: Record) -> Problem:
    """The Problem a record was measured on."""
    return parse_problem(op, rec.problem, rec.dtype)


def parse_problem(op: Op, text: str, dtype: str) -> Problem:
    """A Problem from its printed form (a record's, a table entry's: the CLI's --size syntax) and a record's dtype
    ("float16->float32": input, then output type); UsageError where the op does not accept it."""
    from ..sizes import parse_size
    inp, _, out = dtype.partition("->")
    return parse_size(op, text, False, inp, out or None)


def features_of(op: Op, rec: Record) -> dict | None:
    """The record's features as today's kernelgen.features computes them (see the module's notes); None
    where they have to be recomputed and the op no longer accepts the record's schedule."""
    stored = rec.features
    if stored and stored.get("launches") == 1.0:
        return stored
    got = recompute(op, rec)
    if got is None:
        return None
    feats, plan = got
    if stored and max(plan.launches, key=launch_size) is main_launch(plan):     # the launch both rules read
        feats.update((k, v) for k, v in stored.items() if k not in feats)
    return feats


def recompute(op: Op, rec: Record):
    """(features, plan) of the record's schedule on its problem and arch; None where the op refuses it."""
    try:
        limits = target(rec.arch)
        problem = problem_of(op, rec)
        sched = Schedule.from_dict(rec.schedule)
        impl = op.instance(sched, problem)
        kernel = impl.kernel(sched, limits, problem.types, problem.layout)
        plan = impl.plan(kernel, problem, limits)
        return features(kernel, limits, plan=plan), plan
    except (KernelgenError, ValueError, KeyError, TypeError):
        return None
