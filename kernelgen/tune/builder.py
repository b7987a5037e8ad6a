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
`jobs` processes (default: every core); a script that makes one needs the usual
`if __name__ == "__main__":` guard (the `kernelgen` command has it). Any exception but a
CompileError (NVRTC missing, a bug) is raised in the tuner, not turned into a record; a builder
process that dies is replaced (see Builders).
"""
from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import multiprocessing
import os
import time
from dataclasses import dataclass, field
from typing import Callable

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
    """Render and compile one candidate exactly as the runner will (through `prepare`): the tuned problem's
    source, which holds only the entries its plan launches; the runner validates during the search only
    on sizes that launch the same ones (runners.validation_problems, "timed"), and the winner's other twin
    is compiled when the tune confirms it."""
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
    """A process pool of `jobs` builders (0: build inline, in the caller's process, when asked).

    `submit` returns a Job; `job.result(timeout)` waits for its Built. A builder process that dies
    (NVRTC crashing on a kernel) breaks the whole pool: the pool is started again and every job it
    held is submitted again, up to `tries` times each; a job still dying then is a "compile_error"
    saying so. (A dying job costs the jobs queued beside it one try each.)"""

    def __init__(self, jobs: int | None = None, tries: int = 3, build_fn: Callable[..., Built] | None = None):
        self.jobs = default_jobs() if jobs is None else jobs
        self.tries, self.build_fn = tries, build_fn
        self.built = 0           # builds finished, failures included
        self.failed = 0
        self.seconds = 0.0       # summed over builds
        self.restarts = 0
        self._pool = self._start() if self.jobs > 0 else None

    def _start(self):
        return concurrent.futures.ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, op: Op, sched: Schedule, problem: Problem, target: Target) -> "Job":
        job = Job(self, (op, sched, problem, target))
        self._run(job)
        return job

    def _run(self, job: "Job") -> None:
        fn = self.build_fn or build
        if self._pool is None:
            fut: concurrent.futures.Future = concurrent.futures.Future()
            try:
                fut.set_result(fn(*job.args))
            except BaseException as e:  # noqa: BLE001  (raised again by result(), as a pool would)
                fut.set_exception(e)
        else:
            fut = self._pool.submit(fn, *job.args)
        fut.add_done_callback(self._count)
        job.future = fut

    def _count(self, fut: concurrent.futures.Future) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        b = fut.result()
        self.built += 1
        self.failed += b.status != "ok"
        self.seconds += b.seconds

    def _retry(self, job: "Job", broken_pool) -> Built | None:
        """After the pool broke: start a fresh one (once per breakage) and submit the job again."""
        if self._pool is broken_pool:
            broken_pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._start()
            self.restarts += 1
        if job.tries >= self.tries:
            self.built += 1
            self.failed += 1
            return Built("", "compile_error", f"the builder process died {job.tries} times building it "
                                              "(the compiler crashed)")
        job.tries += 1
        job.pool = self._pool
        self._run(job)
        return None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "Builders":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Job:
    """One candidate submitted to Builders."""

    def __init__(self, owner: Builders, args: tuple):
        self.owner, self.args, self.tries = owner, args, 1
        self.pool = owner._pool
        self.future: concurrent.futures.Future | None = None

    def result(self, timeout: float | None = None) -> Built:
        """The Built; TimeoutError (concurrent.futures') if not done within `timeout` seconds."""
        while True:
            try:
                return self.future.result(timeout)
            except concurrent.futures.process.BrokenProcessPool:
                failed = self.owner._retry(self, self.pool)
                if failed is not None:
                    return failed
