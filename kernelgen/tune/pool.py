"""Several GPUs of one host: one runner per GPU, each in its own worker process pinned to its device.

>>> import functools
>>> from kernelgen.ops import get_op
>>> from kernelgen.tune.runners import Outcome, ReplayRunner
>>> from kernelgen.tune.pool import RunnerPool
>>> op = get_op("reduce_sum")
>>> sched = op.default_schedule()
>>> pool = RunnerPool([ReplayRunner({sched.to_json(): Outcome("ok", 3.0)}) for _ in range(2)])
>>> pool.width, pool(op, sched, op.problem({"n": 4096})).time_us
(2, 3.0)

`tune` measures a batch's candidates through the pool from `width` threads at once: each call takes an
idle runner, so N GPUs validate and time N candidates at a time, fed by the one builder pool, while the
database is written by the tuning loop alone (in the order the candidates were asked). Each GPU's runner
is a worker.ProcessRunner made by `pinned(index, make_runner)`: the worker sets CUDA_VISIBLE_DEVICES to
its GPU before CUDA starts in it ("spawn" workers inherit no CUDA state), so a kernel that hangs on one GPU
is stopped at its time limit without touching the others.
"""
from __future__ import annotations

import functools
import os
import queue
from typing import Callable, Sequence

from ..errors import UsageError
from ..ops.base import Op, Problem
from ..schedule import Schedule
from .runners import Outcome, Runner, ask


class RunnerPool:
    """Runners of one kind (the same arch and GPU model) called from several threads: a call takes an
    idle runner and gives it back when its candidate is measured."""

    def __init__(self, runners: Sequence[Runner]):
        if not runners:
            raise UsageError("a runner pool needs at least one runner (one GPU)")
        kinds = {(r.arch, r.gpu) for r in runners}
        if len(kinds) > 1:
            raise UsageError(f"the GPUs of one tuning run must be alike (their records share one key): got "
                             f"{', '.join(f'{g} ({a})' for a, g in sorted(kinds))}")
        self.runners = list(runners)
        self.arch, self.gpu, self.limits = runners[0].arch, runners[0].gpu, runners[0].limits
        self.width = len(runners)
        self._idle: queue.Queue = queue.Queue()
        for r in self.runners:
            self._idle.put(r)

    def __call__(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        return self._on_idle(lambda r: r(op, sched, problem))

    def confirm(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        """The runners' check of a winner, where they have one."""
        return self._on_idle(lambda r: ask(r, "confirm", op, sched, problem))

    def _on_idle(self, work):
        runner = self._idle.get()
        try:
            return work(runner)
        finally:
            self._idle.put(runner)

    def close(self) -> None:
        for r in self.runners:
            close = getattr(r, "close", None)
            if close is not None:
                close()

    def __enter__(self) -> "RunnerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _on_gpu(index: int, make_runner: Callable[[], Runner]) -> Runner:
    """In the worker, before CUDA starts: only GPU `index` (of those the parent sees) is visible, as device 0."""
    seen = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    os.environ["CUDA_VISIBLE_DEVICES"] = seen.split(",")[index] if seen else str(index)
    return make_runner()


def pinned(index: int, make_runner: Callable[[], Runner]) -> Callable[[], Runner]:
    """make_runner, run in a worker that sees GPU `index` only (picklable, for worker.ProcessRunner)."""
    return functools.partial(_on_gpu, index, make_runner)


def visible_gpus() -> int:
    """GPUs this process sees (CUDA_VISIBLE_DEVICES honoured), without making a CUDA context."""
    import cupy
    return cupy.cuda.runtime.getDeviceCount()


def gpu_indices(spec: str, visible: int) -> list[int]:
    """--gpus: "all" (every GPU of the host), a count N (the first N) or a list "0,2"; `visible` GPUs exist."""
    text = spec.strip().lower()
    if text == "all":
        chosen = list(range(visible))
    elif text.isdigit():
        n = int(text)
        if not 1 <= n <= visible:
            raise UsageError(f"--gpus {spec}: this host has {visible} GPU(s); give 1..{visible}, a list such as 0,1, "
                             f"or all")
        chosen = list(range(n))
    else:
        try:
            chosen = [int(t) for t in text.split(",")]
        except ValueError:
            raise UsageError(f"--gpus {spec!r} is not a count, a comma-separated list of GPU indices or all") from None
        bad = [i for i in chosen if not 0 <= i < visible]
        if bad or len(set(chosen)) != len(chosen):
            raise UsageError(f"--gpus {spec}: indices must be distinct and 0..{visible - 1} (this host has {visible} "
                             f"GPU(s)); got {text}")
    if not chosen:
        raise UsageError(f"--gpus {spec}: no GPU is visible on this host")
    return chosen
