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
"""
from __future__ import annotations

from ..errors import KernelgenError
from ..features import features
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
        feats = r.features or recompute_features(op, r)
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


def recompute_features(op: Op, rec: Record) -> dict | None:
    try:
        limits = target(rec.arch)
        problem = problem_of(op, rec)
        sched = Schedule.from_dict(rec.schedule)
        impl = op.instance(sched, problem)
        kernel = impl.kernel(sched, limits, problem.types, problem.layout)
        return features(kernel, limits, plan=impl.plan(kernel, problem, limits))
    except (KernelgenError, ValueError, KeyError, TypeError):
        return None
