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
from .ops.base import Op, Problem
from .prepared import Prepared, prepare
from .schedule import Schedule
from .target import DEFAULT_ARCH, Target, target

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
    measure: str = "relative L2 error"         # what the errors and the tolerance are

    @property
    def ok(self) -> bool:
        return all(e <= self.tolerance for _, e in self.errors) and all(n == 0 for _, n in self.unwritten)

    def summary(self) -> str:
        errs = ", ".join(f"{k} err {e:.2e}" for k, e in self.errors)
        miss = ", ".join(f"{k}: {n} unwritten" for k, n in self.unwritten if n)
        verdict = "ok" if self.ok else "WRONG"
        return f"{verdict}: {errs} (tolerance {self.tolerance:.1e}, {self.measure}){'; ' + miss if miss else ''} [seed {self.seed}]"


def target_for(backend: str, arch: str | None) -> Target:
    """The GPU's own target on the GPU; the arch's reference target elsewhere."""
    if backend == "gpu":
        from . import gpu
        return gpu.device()
    return target(arch or DEFAULT_ARCH)


def poisoned(problem: Problem, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """Host output buffers full of NaN in each output's storage type, so an unwritten element fails."""
    return {k: problem.dtype(k).encode(np.full(s, np.nan)) for k, s in shapes.items()}


def execute(prep: Prepared, inputs: dict[str, np.ndarray], backend: str, **emulate_opts) -> dict[str, np.ndarray]:
    """Run a prepared kernel on host `inputs`; return host outputs (poisoned with NaN before the run)."""
    outputs = poisoned(prep.problem, prep.op.output_shapes(prep.problem))
    if backend == "gpu":
        import cupy
        from . import gpu
        arrays = {k: cupy.asarray(v) for k, v in dict(inputs, **outputs).items()}
        prep.launcher(arrays)()
        gpu.synchronize_checked(prep.kernel.name)
        return {k: cupy.asnumpy(arrays[k]) for k in outputs}
    if backend == "emulate":
        from . import emulate
        buffers = dict({k: np.ascontiguousarray(v) for k, v in inputs.items()}, **outputs)
        emulate.execute(prep.plan, prep.source, buffers, **emulate_opts)
        return {k: buffers[k] for k in outputs}
    raise UsageError(f"backend {backend!r} is unknown; choose one of {', '.join(BACKENDS)}")


def validate(op: Op, sched: Schedule, problem: Problem, *, backend: str = "gpu", seed: int | None = None,
             arch: str | None = None, **emulate_opts) -> Validation:
    if backend == "gpu":
        from . import gpu
        gpu.require()
    seed = secrets.randbits(31) if seed is None else seed
    prep = prepare(op, sched, problem, target_for(backend, arch))
    op = prep.op
    inputs = op.make_inputs(problem, np.random.default_rng(seed))
    if backend == "emulate":
        emulate_opts.setdefault("seed", seed)  # the same seed orders threads, so --order random reproduces
    stored = execute(prep, inputs, backend, **emulate_opts)
    outputs = {k: problem.dtype(k).decode(v) for k, v in stored.items()}
    refs = op.reference(inputs, problem)
    errors = tuple((k, op.error(k, outputs[k], refs[k], inputs, problem)) for k in refs)
    unwritten = tuple((k, int(np.count_nonzero(np.isnan(outputs[k]) & ~np.isnan(refs[k])))) for k in refs)
    return Validation(op.name, prep.kernel.name, str(problem), backend, seed, errors, unwritten, op.tolerance(problem),
                      op.error_measure)
