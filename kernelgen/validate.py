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
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .errors import UsageError
from .ops.base import Op, Problem
from .prepared import Prepared, prepare
from .schedule import Schedule
from .target import DEFAULT_ARCH, Target, parse_arch, target
from . import config

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


def _human(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


def memory_needed(op: Op, problem: Problem) -> int:
    """Host bytes a validation allocates: inputs and outputs in storage, float64 copies for the reference."""
    shapes = dict(op.input_shapes(problem), **op.output_shapes(problem))
    total = 0
    for name, shape in shapes.items():
        count = int(np.prod(shape, dtype=object)) if shape else 1
        total += count * (problem.dtype(name).itemsize + 2 * 8)
    return total


def check_memory(op: Op, problem: Problem, backend: str) -> None:
    """UsageError before anything is allocated when `problem` needs more host memory than the limit
    (config.max_host_bytes(): KERNELGEN_MAX_HOST_BYTES, or half of this machine's memory)."""
    need, limit = memory_needed(op, problem), config.max_host_bytes()
    if need > limit:
        where = "the CPU emulator" if backend == "emulate" else "validation's host copies"
        raise UsageError(f"{op.name} {problem} needs about {_human(need)} of host memory for {where} (inputs, outputs "
                         f"and the float64 reference); the limit is {_human(limit)} (KERNELGEN_MAX_HOST_BYTES): "
                         "choose smaller sizes")


def poisoned(problem: Problem, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """Host output buffers full of NaN in each output's storage type, so an unwritten element fails."""
    return {k: problem.dtype(k).encode(np.full(s, np.nan)) for k, s in shapes.items()}


def execute(prep: Prepared, inputs: dict[str, np.ndarray], backend: str, *, source: str | None = None,
            **emulate_opts) -> dict[str, np.ndarray]:
    """Run a prepared kernel on host `inputs`; return host outputs (poisoned with NaN before the run).
    `source` (emulator only) runs that text in place of the rendered kernel, e.g. a mutant of it."""
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
        emulate.execute(prep.plan, prep.source if source is None else source, buffers, **emulate_opts)
        return {k: buffers[k] for k in outputs}
    raise UsageError(f"backend {backend!r} is unknown; choose one of {', '.join(BACKENDS)}")


def reference(op: Op, inputs: dict[str, np.ndarray], problem: Problem, backend: str) -> dict[str, np.ndarray]:
    """The float64 reference, on the GPU where the op can compute it there (`device_reference`: a GEMM of
    10^12 multiply-adds takes minutes on the host, milliseconds in FP64 on an H100). Where the device
    cannot (out of memory, say), the host computes it, with a warning."""
    if backend == "gpu" and getattr(op, "device_reference", False):
        import cupy
        try:
            refs = op.reference({k: cupy.asarray(v) for k, v in inputs.items()}, problem, xp=cupy)
            return {k: cupy.asnumpy(v) for k, v in refs.items()}
        except cupy.cuda.memory.OutOfMemoryError as e:
            warnings.warn(f"{op.name} {problem}: the float64 reference does not fit the GPU ({e}); computing it on "
                          "the host", stacklevel=2)
    return op.reference(inputs, problem)


def validate(op: Op, sched: Schedule, problem: Problem, *, backend: str = "gpu", seed: int | None = None,
             arch: str | None = None, mutate: Callable[[str], str] | None = None, **emulate_opts) -> Validation:
    """Validate `sched` on `problem`; `mutate` (emulator only, for mutation tests) rewrites the rendered
    source before it runs."""
    if backend not in BACKENDS:
        raise UsageError(f"backend {backend!r} is unknown; choose one of {', '.join(BACKENDS)}")
    if arch is not None:
        parse_arch(arch)
    if backend == "gpu":
        from . import gpu
        gpu.require()
    unknown = sorted(set(emulate_opts) - {"check", "order", "seed"})
    if mutate is not None and backend != "emulate":
        raise UsageError("validate: mutate= runs a rewritten source on the emulator only (backend='emulate')")
    if unknown or (emulate_opts and backend != "emulate"):
        raise UsageError(f"validate: option {(unknown or sorted(emulate_opts))[0]!r} is not one of the emulator's "
                         "(check, order, seed; backend='emulate' only)")
    if "order" in emulate_opts:
        from .emulate.launch import ORDERS
        if emulate_opts["order"] not in ORDERS:
            raise UsageError(f"emulator order {emulate_opts['order']!r} is unknown; choose one of {', '.join(ORDERS)}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63):
        raise UsageError(f"validate: seed={seed!r} must be an integer 0..2^63-1")
    if not isinstance(problem, Problem):
        raise UsageError(f"validate: problem must be a Problem (op.problem({{...}})), not {type(problem).__name__}")
    check_memory(op, problem, backend)
    seed = secrets.randbits(31) if seed is None else seed
    prep = prepare(op, sched, problem, target_for(backend, arch))
    op = prep.op
    inputs = op.make_inputs(problem, np.random.default_rng(seed))
    if backend == "emulate":
        emulate_opts.setdefault("check", config.emulate_check())
        emulate_opts.setdefault("seed", seed)  # the same seed orders threads, so --order random reproduces
    source = None if mutate is None else mutate(prep.source)
    stored = execute(prep, inputs, backend, source=source, **emulate_opts)
    outputs = {k: problem.dtype(k).decode(v) for k, v in stored.items()}
    refs = reference(op, inputs, problem, backend)
    errors = tuple((k, op.error(k, outputs[k], refs[k], inputs, problem)) for k in refs)
    unwritten = tuple((k, int(np.count_nonzero(np.isnan(outputs[k]) & ~np.isnan(refs[k])))) for k in refs)
    return Validation(op.name, prep.kernel.name, str(problem), backend, seed, errors, unwritten, op.tolerance(problem),
                      op.measure(problem))
