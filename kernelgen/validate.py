"""Run a schedule on fresh random inputs and compare every output with the float64 reference.

>>> from kernelgen.ops import get_op
>>> from kernelgen.validate import validate
>>> op = get_op("reduce_sum")
>>> v = validate(op, op.default_schedule(), op.problem({"n": 1000}), backend="emulate")  # doctest: +SKIP
>>> v.ok                                                                                  # doctest: +SKIP
True

Outputs are poisoned with NaN before the run, so an element the kernel never writes fails the
check; the seed is drawn fresh unless given, and is part of the result so a failure reproduces.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np

from .errors import UsageError
from .ops.base import Limits, Op, Plan, Problem
from .render import render
from .schedule import Schedule

BACKENDS = ("gpu", "emulate")


@dataclass(frozen=True)
class Validation:
    op: str
    kernel: str
    problem: str
    backend: str
    seed: int
    errors: tuple[tuple[str, float], ...]      # output name -> error (op.error)
    unwritten: tuple[tuple[str, int], ...]     # output name -> elements still NaN
    tolerance: float

    @property
    def ok(self) -> bool:
        return all(e <= self.tolerance for _, e in self.errors) and all(n == 0 for _, n in self.unwritten)

    def summary(self) -> str:
        errs = ", ".join(f"{k} err {e:.2e}" for k, e in self.errors)
        miss = ", ".join(f"{k}: {n} unwritten" for k, n in self.unwritten if n)
        verdict = "ok" if self.ok else "WRONG"
        return f"{verdict}: {errs} (tolerance {self.tolerance:.1e}){'; ' + miss if miss else ''} [seed {self.seed}]"


def limits_for(backend: str, arch: str | None) -> Limits:
    if backend == "gpu":
        from . import gpu
        return gpu.device().limits()
    return Limits(arch=arch or "sm_90")


def execute(op: Op, plan: Plan, source: str, inputs: dict[str, np.ndarray], backend: str,
            **emulate_opts) -> dict[str, np.ndarray]:
    """Run `plan` on host `inputs`; return host outputs (poisoned with NaN before the run)."""
    shapes = op.output_shapes(plan.problem)
    if backend == "gpu":
        import cupy
        from . import gpu
        arrays = {k: cupy.asarray(v) for k, v in inputs.items()}
        arrays.update({k: cupy.full(s, np.nan, dtype=op.dtype) for k, s in shapes.items()})
        gpu.run(plan, source, arrays)
        return {k: cupy.asnumpy(arrays[k]) for k in shapes}
    if backend == "emulate":
        from . import emulate
        buffers = {k: np.ascontiguousarray(v) for k, v in inputs.items()}
        buffers.update({k: np.full(s, np.nan, dtype=op.dtype) for k, s in shapes.items()})
        emulate.execute(plan, source, buffers, **emulate_opts)
        return {k: buffers[k] for k in shapes}
    raise UsageError(f"backend {backend!r} is unknown; choose one of {', '.join(BACKENDS)}")


def validate(op: Op, sched: Schedule, problem: Problem, *, backend: str = "gpu", seed: int | None = None,
             arch: str | None = None, **emulate_opts) -> Validation:
    if backend == "gpu":
        from . import gpu
        gpu.require()
    op = op.for_schedule(sched)
    seed = secrets.randbits(31) if seed is None else seed
    limits = limits_for(backend, arch)
    kernel = op.kernel(sched, limits)
    plan = op.plan(kernel, problem, limits)
    inputs = op.make_inputs(problem, np.random.default_rng(seed))
    if backend == "emulate":
        emulate_opts.setdefault("seed", seed)  # the same seed orders threads, so --order random reproduces
    outputs = execute(op, plan, render(kernel), inputs, backend, **emulate_opts)
    refs = op.reference(inputs, problem)
    errors = tuple((k, op.error(k, outputs[k], refs[k], inputs, problem)) for k in refs)
    unwritten = tuple((k, int(np.count_nonzero(np.isnan(outputs[k]) & ~np.isnan(refs[k])))) for k in refs)
    return Validation(op.name, kernel.name, str(problem), backend, seed, errors, unwritten, op.tolerance(problem))
