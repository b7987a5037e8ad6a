"""Builders apart from runners: render and compile candidates in a pool of processes, ahead of the GPU.

>>> from kernelgen.ops import get_op
>>> from kernelgen.target import target
>>> from kernelgen.tune.builder import Builders
>>> op = get_op("reduce_sum")
>>> with Builders(jobs=0) as pool:                    # 0: build in this process (what a test wants)
...     built = pool.submit(op, op.default_schedule(), op.problem({"n": 4096}), target()).result()
>>> built.status, built.features["ptxas.registers"] > 0
('ok', True)

A build is what the runner would otherwise do first: `prepare(op, schedule, problem, target)`, its
source rendered and compiled through `compile_cuda`, whose disk cache is keyed by the source's
content and written atomically (a temporary name, then a rename). The runner then goes through the
very same `prepare` in its own process, renders the same source and finds the cubin on disk, so
the GPU never waits on NVRTC. What comes back to the tuner is small: the status, the compiler's
message on failure, the seconds it took and the ptxas facts of the main kernel; the cubin stays in
the cache. A candidate that fails to compile is a "compile_error" Outcome without the runner being
asked at all. With the cache off (KERNELGEN_NO_CACHE) a build still finds compile errors early, but
the runner compiles again.

The pool is "spawn"ed, so no CUDA state is inherited from a parent that touched the GPU, and holds
`jobs` processes (default: every core). Any exception but a CompileError (NVRTC missing, a bug) is
raised in the tuner, not turned into a record.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import time
from dataclasses import dataclass, field

from ..errors import CompileError
from ..features import main_launch, ptxas_features
from ..ops.base import Op, Problem
from ..schedule import Schedule
from ..target import Target


@dataclass(frozen=True)
class Built:
    name: str
    status: str                  # "ok" or "compile_error"
    detail: str = ""             # the compiler's first error line
    seconds: float = 0.0         # render and compile (near 0 when the cache had it)
    cached: bool = False
    features: dict = field(default_factory=dict)   # ptxas_features of the main kernel


def build(op: Op, sched: Schedule, problem: Problem, target: Target) -> Built:
    """Render and compile one candidate exactly as the runner will (through `prepare`)."""
    from ..prepared import prepare
    t0 = time.perf_counter()
    prep = prepare(op, sched, problem, target)
    try:
        compiled = prep.binary
    except CompileError as e:
        return Built(prep.kernel.name, "compile_error", str(e), time.perf_counter() - t0)
    return Built(prep.kernel.name, "ok", "", time.perf_counter() - t0, compiled.cached,
                 ptxas_features(compiled.log, main_launch(prep.plan).symbol))


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        return os.cpu_count() or 1


class Builders:
    """A process pool of `jobs` builders (0: build inline, in the caller's process, when asked)."""

    def __init__(self, jobs: int | None = None):
        self.jobs = default_jobs() if jobs is None else jobs
        self.built = 0           # builds finished, failures included
        self.failed = 0
        self.seconds = 0.0       # summed over builds
        self._pool = None
        if self.jobs > 0:
            self._pool = concurrent.futures.ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, op: Op, sched: Schedule, problem: Problem, target: Target) -> concurrent.futures.Future:
        if self._pool is None:
            fut: concurrent.futures.Future = concurrent.futures.Future()
            try:
                fut.set_result(build(op, sched, problem, target))
            except BaseException as e:  # noqa: BLE001  (raised again by result(), as a pool would)
                fut.set_exception(e)
        else:
            fut = self._pool.submit(build, op, sched, problem, target)
        fut.add_done_callback(self._count)
        return fut

    def _count(self, fut: concurrent.futures.Future) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        b = fut.result()
        self.built += 1
        self.failed += b.status != "ok"
        self.seconds += b.seconds

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "Builders":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
