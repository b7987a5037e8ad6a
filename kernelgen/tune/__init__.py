"""Search an op's schedule space for the fastest correct kernel on one problem.

>>> from kernelgen.ops import get_op
>>> from kernelgen.tune import tune, ReplayRunner
>>> from kernelgen.tune.db import TuningDB
>>> import tempfile, os
>>> op = get_op("reduce_sum")
>>> runner = ReplayRunner({})            # replays recorded times; here none, so all "timeout"
>>> db = TuningDB(os.path.join(tempfile.mkdtemp(), "t.jsonl"))
>>> tune(op, op.problem({"n": 4096}), runner=runner, budget=2, db=db, progress=False).best is None
True

Every strategy is a module with `candidates(space, budget, seed)` (exhaustive, random_search).
Illegal schedules are pruned before compiling (ScheduleError); compile errors, launch errors and
wrong answers become records with a status code, never a crash of the search. Each measurement is
appended to the tuning database; `resume=True` skips what it already holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..errors import CompileError, LaunchError, ScheduleError, UsageError
from ..ops.base import Op, Problem
from ..target import Target, target
from ..schedule import Schedule
from . import exhaustive, random_search
from .db import Record, TuningDB

STRATEGIES = {"exhaustive": exhaustive, "random": random_search}


@dataclass(frozen=True)
class Outcome:
    status: str
    time_us: float | None = None
    detail: str = ""


class Runner(Protocol):
    arch: str
    gpu: str
    limits: Target

    def __call__(self, op: Op, sched: Schedule, problem: Problem) -> Outcome: ...


class GpuRunner:
    """Validate on fresh inputs at the op's awkward test sizes (tails, single elements), then time at
    the tuning size as `kernelgen bench` does (`timing`: events, graph or auto); failures become
    Outcomes. `kernelgen bench` validates the winner again at the full size."""

    def __init__(self, reps: int = 20, max_ms: float = 1000.0, timing: str = "auto"):
        from .. import gpu
        dev = gpu.device()
        self.arch, self.gpu, self.limits, self.reps, self.max_ms = dev.arch, dev.gpu, dev, reps, max_ms
        self.timing = timing

    def __call__(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        from ..timing import measure, prepared, time_callable
        from ..validate import validate
        try:
            for check_problem in validation_problems(op, sched, problem, self.limits):
                v = validate(op, sched, check_problem, backend="gpu")
                if not v.ok:
                    return Outcome("wrong_answer", None, f"{check_problem}: {v.summary()}")
            _, launch, _ = prepared(op, sched, problem)
            once = time_callable(launch, warmup=1, reps=1, flush_l2=False).median_us
            if once > self.max_ms * 1e3:  # far off the pace: not worth its repetitions
                return Outcome("timeout", None, f"one run took {once / 1e3:.1f} ms > --max-ms {self.max_ms:g}")
            m = measure(op, sched, problem, reps=self.reps, timing=self.timing)
            return Outcome("ok", m.time_us, f"{m.gbps:.0f} GB/s {m.tflops:.2f} TFLOP/s, {m.method} timing")
        except CompileError as e:
            return Outcome("compile_error", None, str(e))
        except LaunchError as e:
            return Outcome("launch_error", None, str(e))


def validation_problems(op: Op, sched: Schedule, problem: Problem, limits: Target) -> list[Problem]:
    """The op's awkward test sizes this schedule can run (a schedule specialised for long rows may
    refuse short ones), or the tuning problem itself when it can run none of them."""
    kernel = op.kernel(sched, limits)
    out = []
    for sizes in op.test_problems():
        try:
            p = op.problem(sizes)
            op.plan(kernel, p, limits)
            out.append(p)
        except ScheduleError:
            continue
    return out or [problem]


class ReplayRunner:
    """Replays times recorded per schedule JSON (a simulation runner: tests search logic without a GPU)."""

    def __init__(self, times: dict[str, Outcome], arch: str = "sm_90", gpu: str = "replay"):
        self.times, self.arch, self.gpu, self.limits = times, arch, gpu, target(arch)
        self.calls: list[str] = []

    def __call__(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        self.calls.append(sched.to_json())
        return self.times.get(sched.to_json(), Outcome("timeout", None, "no recorded result"))


@dataclass
class TuneResult:
    best: Record | None
    measured: int = 0
    skipped: int = 0
    pruned: int = 0
    failures: dict = field(default_factory=dict)


def tune(op: Op, problem: Problem, *, runner: Runner, strategy: str = "exhaustive", budget: int | None = None,
         seed: int = 0, db: TuningDB | None = None, resume: bool = False, progress: bool = True) -> TuneResult:
    if strategy not in STRATEGIES:
        raise UsageError(f"strategy {strategy!r} is unknown; choose one of {', '.join(STRATEGIES)}")
    db = db or TuningDB()
    done = db.measured_keys() if resume else set()
    legal, pruned = [], 0
    for knobs in op.space(problem, runner.limits):
        try:
            sched = op.schedule_from_knobs(**knobs)
            kernel = op.kernel(sched, runner.limits)
            op.plan(kernel, problem, runner.limits)  # legal for this size too
            legal.append((sched, knobs, kernel.name))
        except ScheduleError:
            pruned += 1
    picked = list(STRATEGIES[strategy].candidates(legal, budget, seed))
    result = TuneResult(best=None, pruned=pruned)

    def record_of(sched, knobs, name, out: Outcome) -> Record:
        return Record.make(op.name, str(problem), runner.arch, runner.gpu, sched.to_dict(), knobs,
                           out.status, out.time_us, out.detail, name)

    def step(item) -> None:
        sched, knobs, name = item
        if record_of(sched, knobs, name, Outcome("ok")).key() in done:
            result.skipped += 1
            return
        out = runner(op, sched, problem)
        rec = record_of(sched, knobs, name, out)
        db.append(rec)
        result.measured += 1
        if out.status != "ok":
            result.failures[out.status] = result.failures.get(out.status, 0) + 1
        elif result.best is None or out.time_us < result.best.time_us:
            result.best = rec

    if progress:
        import click
        with click.progressbar(picked, label=f"tuning {op.name} {problem}", file=None,
                               item_show_func=lambda _: (f"best {result.best.time_us:.1f} us" if result.best else "")
                               ) as bar:
            for item in bar:
                step(item)
    else:
        for item in picked:
            step(item)
    if resume:  # the best may have been measured by an earlier run
        prior = db.best(op.name, str(problem), runner.arch, runner.gpu)
        if prior and (result.best is None or prior.time_us < result.best.time_us):
            result.best = prior
    return result


def best_schedule(op: Op, problem: Problem | None, db: TuningDB | None = None, arch: str | None = None) -> Schedule:
    rec = (db or TuningDB()).best(op.name, str(problem) if problem else None, arch)
    if rec is None:
        where = f" for {problem}" if problem else ""
        raise UsageError(f"no successful tuning record for {op.name}{where} in {(db or TuningDB()).path}; "
                         f"run `kernelgen tune {op.name}` first")
    return Schedule.from_dict(rec.schedule)
