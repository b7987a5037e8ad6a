"""Time kernels with CUDA events: warm-up, many repetitions, the median; L2 flushed between runs.

>>> from kernelgen.timing import Timing
>>> Timing((3.0, 1.0, 2.0)).median_us
2.0

`measure()` times one schedule and places it on the roofline of the device; `time_callable()` times
anything (the vendor library in the same run, for the ratio).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import gpu
from .ops.base import Op, Problem
from .render import render
from .schedule import Schedule


@dataclass(frozen=True)
class Timing:
    samples_us: tuple[float, ...]

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: how much to trust a difference between two timings."""
        q = np.percentile(self.samples_us, [10, 90])
        return float((q[1] - q[0]) / self.median_us)


@dataclass(frozen=True)
class Measurement:
    kernel: str
    time_us: float
    spread: float
    gbps: float                # bytes the op must move / time
    tflops: float
    roofline: float            # floor time / measured time (1.0 = on the roof)
    bound: str                 # "memory" | "compute"


def time_callable(fn: Callable[[], object], *, warmup: int = 5, reps: int = 30, flush_l2: bool = True) -> Timing:
    import cupy
    dev = gpu.device()
    scrub = cupy.empty(max(dev.l2_bytes * 2 // 4, 1), dtype=cupy.float32) if flush_l2 else None
    for _ in range(warmup):
        fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(reps):
        if scrub is not None:
            scrub.fill(1.0)  # evict the inputs from L2 so every run reads device memory
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
    return Timing(tuple(samples))


def roofline(op: Op, problem: Problem, time_us: float) -> tuple[float, float, float, str]:
    dev = gpu.device()
    nbytes, flops = op.bytes_moved(problem), op.flops(problem)
    t_mem, t_math = nbytes / dev.peak_bytes_per_s, flops / dev.peak_fp32_per_s
    floor = max(t_mem, t_math)
    secs = time_us * 1e-6
    return nbytes / secs / 1e9, flops / secs / 1e12, floor / secs, "memory" if t_mem >= t_math else "compute"


_arrays_cache: dict = {}


def device_arrays(op: Op, problem: Problem, seed: int = 0) -> dict:
    """Random inputs and output buffers on the device, kept for the last problem (a tuning run
    times many schedules on one problem; drawing 2^28 random numbers per schedule would dominate)."""
    import cupy
    key = (op.name, tuple(op.inputs), problem, seed)  # inputs differ per elementwise expression
    if key not in _arrays_cache:
        _arrays_cache.clear()
        inputs = op.make_inputs(problem, np.random.default_rng(seed))
        arrays = {k: cupy.asarray(v) for k, v in inputs.items()}
        arrays.update({k: cupy.empty(s, dtype=op.dtype) for k, s in op.output_shapes(problem).items()})
        _arrays_cache[key] = arrays
    return _arrays_cache[key]


def prepared(op: Op, sched: Schedule, problem: Problem, seed: int = 0):
    """(kernel, launcher, arrays) for timing: inputs random, outputs allocated, all on the device."""
    op = op.for_schedule(sched)
    limits = gpu.device().limits()
    kernel = op.kernel(sched, limits)
    plan = op.plan(kernel, problem, limits)
    arrays = device_arrays(op, problem, seed)
    return kernel, gpu.prepare(plan, render(kernel), arrays), arrays


def measure(op: Op, sched: Schedule, problem: Problem, *, reps: int = 30, warmup: int = 5) -> Measurement:
    kernel, launch, _ = prepared(op, sched, problem)
    t = time_callable(launch, warmup=warmup, reps=reps)
    gbps, tflops, frac, bound = roofline(op, problem, t.median_us)
    return Measurement(kernel.name, t.median_us, t.spread, gbps, tflops, frac, bound)


def measure_vendor(op: Op, problem: Problem, *, reps: int = 30, warmup: int = 5) -> tuple[str, Measurement] | None:
    arrays = device_arrays(op, problem)  # the very inputs the kernels are timed on, drawn once
    found = op.vendor({k: arrays[k] for k in op.input_shapes(problem)}, problem)
    if found is None:
        return None
    label, fn = found
    t = time_callable(fn, warmup=warmup, reps=reps)
    gbps, tflops, frac, bound = roofline(op, problem, t.median_us)
    return label, Measurement(label, t.median_us, t.spread, gbps, tflops, frac, bound)
