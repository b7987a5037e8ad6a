"""Runners: validate and time one schedule on one problem, and say how it went as an Outcome.

>>> from kernelgen.ops import get_op
>>> from kernelgen.tune.runners import Outcome, ReplayRunner
>>> op = get_op("reduce_sum")
>>> sched = op.default_schedule()
>>> runner = ReplayRunner({sched.to_json(): Outcome("ok", 12.5)})
>>> runner(op, sched, op.problem({"n": 4096})).time_us
12.5

A runner never raises for a schedule that fails: compile errors, launch errors, wrong answers and
timeouts are Outcomes with a status code, which the tuner records and the strategy is told. The
GpuRunner runs in the tuner's process or, through `worker.ProcessRunner`, in a child process that
is killed when a kernel hangs; the ReplayRunner replays recorded results so search logic is tested
without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..errors import CompileError, LaunchError, ScheduleError, UsageError
from ..ops.base import Op, Problem
from ..schedule import Schedule
from ..target import Target, target


@dataclass(frozen=True)
class Outcome:
    status: str                   # one of db.STATUSES
    time_us: float | None = None  # None unless status is "ok"
    detail: str = ""


class Runner(Protocol):
    arch: str
    gpu: str
    limits: Target

    def __call__(self, op: Op, sched: Schedule, problem: Problem) -> Outcome: ...


def ask(runner: Runner, method: str, op: Op, sched: Schedule, problem: Problem) -> Outcome:
    """`runner.method(op, sched, problem)`, for the workers, pools and actors that forward by name: a runner
    without `confirm` (a replay) has nothing more to check of a winner, so that is "ok"."""
    fn = getattr(runner, method, None)
    return fn(op, sched, problem) if fn is not None else Outcome("ok")


class GpuRunner:
    """Validate on fresh inputs at the op's awkward test sizes (tails, single elements) that launch the
    kernels the tuning size does, then time at the tuning size as `kernelgen bench` does (`timing`:
    events, graph or auto); failures become Outcomes. `confirm` validates the rest (sizes that take the
    other twin, `_unaligned`): tune asks it of the winner only, so a candidate compiles one twin, not two.
    `kernelgen bench` validates the winner again at the full size."""

    def __init__(self, reps: int = 20, max_ms: float = 1000.0, timing: str = "auto"):
        from .. import gpu
        dev = gpu.device()
        self.arch, self.gpu, self.limits, self.reps, self.max_ms = dev.arch, dev.gpu, dev, reps, max_ms
        self.timing = timing

    def __call__(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        from ..timing import measure, prepared, time_callable
        try:
            bad = self._validate(op, sched, validation_problems(op, sched, problem, self.limits, "timed"))
            if bad is not None:
                return bad
            _, launch, _ = prepared(op, sched, problem)
            once = time_callable(launch, warmup=1, reps=1, flush_l2=False).median_us
            if once > self.max_ms * 1e3:  # far off the pace: not worth its repetitions
                return Outcome("timeout", None, f"one run took {once / 1e3:.1f} ms > --max-ms {self.max_ms:g}")
            m = measure(op, sched, problem, reps=self.reps, timing=self.timing, once_us=once)
            return Outcome("ok", m.time_us, f"{m.gbps:.0f} GB/s {m.tflops:.2f} TFLOP/s, {m.method} timing")
        except CompileError as e:
            return Outcome("compile_error", None, str(e))
        except LaunchError as e:
            return Outcome("launch_error", None, str(e))

    def confirm(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        """The winner's check: the test sizes __call__ left out (those that launch another kernel twin)."""
        try:
            return self._validate(op, sched, validation_problems(op, sched, problem, self.limits, "other")) \
                or Outcome("ok")
        except CompileError as e:
            return Outcome("compile_error", None, str(e))
        except LaunchError as e:
            return Outcome("launch_error", None, str(e))

    @staticmethod
    def _validate(op: Op, sched: Schedule, problems: list[Problem]) -> Outcome | None:
        from ..validate import validate
        for p in problems:
            v = validate(op, sched, p, backend="gpu")
            if not v.ok:
                return Outcome("wrong_answer", None, f"{p}: {v.summary()}")
        return None


def validation_problems(op: Op, sched: Schedule, problem: Problem, limits: Target,
                        entries: str = "all") -> list[Problem]:
    """The op's awkward test sizes this schedule can run (a schedule specialised for long rows may
    refuse short ones), in the tuned problem's element types (an fp16 tune validates fp16 kernels),
    or the tuning problem itself when it can run none of them. entries="timed": only the sizes whose
    plan launches the kernels the tuned problem's does (the search's check: a size that takes the
    `_unaligned` twin would compile it too); "other": the rest (the winner's check, runners' confirm)."""
    kernel = op.for_problem(problem).kernel(sched, limits, problem.types, problem.layout)
    types = problem.types or op.types()
    timed = _symbols(op.plan(kernel, problem, limits)) if entries != "all" else None
    out = []
    for sizes in op.test_problems_for(sched):
        try:
            p = op.problem(sizes, dtype=types.input.name, out_dtype=types.output.name, layout=problem.layout)
            plan = op.plan(kernel, p, limits)
        except (ScheduleError, UsageError):   # sizes this variant cannot take, refused by name
            continue
        if timed is None or (_symbols(plan) == timed) == (entries == "timed"):
            out.append(p)
    return out or ([problem] if entries != "other" else [])


def _symbols(plan) -> frozenset:
    return frozenset(launch.symbol for launch in plan.launches)


class ReplayRunner:
    """Replays times recorded per schedule JSON (a simulation runner: tests search logic without a GPU)."""

    def __init__(self, times: dict[str, Outcome], arch: str = "sm_90", gpu: str = "replay"):
        self.times, self.arch, self.gpu, self.limits = times, arch, gpu, target(arch)
        self.calls: list[str] = []

    def __call__(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        self.calls.append(sched.to_json())
        return self.times.get(sched.to_json(), Outcome("timeout", None, "no recorded result"))
