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

The loop is closed: a strategy (one module each, in STRATEGIES) is made from the legal space and a
seed, asked for a batch of candidates, told each one's Outcome, and asked again, until the budget
of measurements is spent or it has nothing more (space.py states the contract). Illegal schedules
are pruned before compiling (ScheduleError); compile errors, launch errors, wrong answers and
timeouts become records with a status code, never a crash of the search, and the strategy is told
them like any result. Each measurement is appended to the tuning database; with `resume=True` what
it already holds is not run again, but its recorded outcome is told to the strategy, so a
strategy that learns picks up where the last run stopped.

With `builders` (builder.Builders, a process pool) every candidate is rendered and compiled as soon
as it is asked for, and the next batch is asked for while the runner measures the last one
(`ahead` batches may be outstanding, 2 by default), so the GPU measures cubins already on disk; a
compile error is recorded without the runner being asked. Strategies that learn across problems
(the model) are given the database's records of the op on other problems (history.py). A replay
(replay.py) passes the recorded sweep's own candidates as `space`.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import inspect
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from ..errors import UsageError
from ..features import features
from ..ops.base import Op, Problem
from ..schedule import Schedule
from . import anneal, exhaustive, genetic, model, pattern, random_search, seeded
from .builder import Builders, Built, Job
from .db import Record, TuningDB, dtype_of
from .progress import Progress, stream_of
from .runners import GpuRunner, Outcome, ReplayRunner, Runner, validation_problems
from .space import Candidate, Observation, Strategy, default_candidate, legal_space

STRATEGIES = {"exhaustive": exhaustive, "random": random_search, "anneal": anneal, "genetic": genetic,
              "pattern": pattern, "model": model}

__all__ = ["STRATEGIES", "Builders", "Candidate", "GpuRunner", "Observation", "Outcome", "ReplayRunner", "Runner",
           "Strategy", "TuneResult", "best_schedule", "dtype_of", "legal_space", "tune", "validation_problems"]


@dataclass
class TuneResult:
    best: Record | None
    measured: int = 0
    skipped: int = 0
    pruned: int = 0
    failures: dict = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)   # this run's, in the order measured
    build_seconds: float = 0.0                            # summed over the builders' compiles


def tune(op: Op, problem: Problem, *, runner: Runner, strategy: str = "exhaustive", budget: int | None = None,
         seed: int = 0, db: TuningDB | None = None, resume: bool = False, progress=True, batch: int = 4,
         builders: Builders | None = None, ahead: int | None = None, space: list[Candidate] | str = "default",
         history: list[Observation] | None = None, default_first: bool = True,
         stop: Callable[[TuneResult], bool] | None = None) -> TuneResult:
    """Measure at most `budget` schedules (None: until the strategy has nothing more), asking the
    strategy for `batch` at a time; what `resume` finds in the database does not count.

    builders: compile ahead of the runner in this pool (None: the runner compiles as it goes).
    ahead:    batches asked before the oldest is told (default 3 with builders: while one is measured the
              builders hold two, so none idles at a batch's ragged end; else 1).
    space:    the candidates, or which of the op's legal spaces for `problem` on the runner's limits:
              "default" (its curated space) or "wide" (tune.space.points).
    history:  observations of other problems for a strategy that learns (default: from `db`).
    default_first: measure the op's own default for the problem (`schedule_for`) before what the strategy
              asks (seeded.py), so the best is never slower than it; only where `space` names the op's
              space (a replay's given candidates are the strategy's alone).
    progress: True for a progress line on stderr, False for none, or a stream to write it to.
    stop:     asked after each told batch; True ends the search (a replay stops at its goal)."""
    if strategy not in STRATEGIES:
        raise UsageError(f"strategy {strategy!r} is unknown; choose one of {', '.join(STRATEGIES)}")
    db = db or TuningDB()
    pruned = 0
    first = []
    if isinstance(space, str):
        space, pruned = legal_space(op, problem, runner.limits, space)
        if default_first and (default := default_candidate(op, problem, runner.limits, space)):
            first = [default]
    module = STRATEGIES[strategy]
    extra = {}
    if "history" in inspect.signature(module.Search).parameters:
        if history is None:
            from .history import observations
            history = observations(op, problem, db.records(), runner.gpu)
        extra["history"] = history
    search: Strategy = module.Search(space, seed, **extra)
    if first:
        search = seeded.Search(search, first)
    prior = {r.key(): r for r in db.records()} if resume else {}
    result = TuneResult(best=None, pruned=pruned)
    ahead = ahead or (3 if builders else 1)

    def record_of(cand: Candidate, out: Outcome, feats: dict | None = None) -> Record:
        return Record.make(op.name, str(problem), runner.arch, runner.gpu, cand.schedule.to_dict(), cand.knobs,
                           out.status, out.time_us, out.detail, cand.name, dtype_of(problem), feats)

    outside = [c for c in first if not any(c is x for x in space)]   # a default outside the space: one more
    to_measure = len(space) + len(outside) - (sum(record_of(c, Outcome("ok")).key() in prior
                                                  for c in [*space, *outside]) if prior else 0)
    bar = Progress(to_measure if budget is None else min(budget, to_measure), f"tuning {op.name} {problem}",
                   stream_of(progress))

    def wait(job: Job | None) -> Built | None:
        if job is None:    # no builders: the runner compiles
            return None
        while True:   # redraw the line while a build is still running
            try:
                return job.result(timeout=0.5)
            except concurrent.futures.TimeoutError:
                bar.built = builders.built
                bar.show()

    def run(cand: Candidate, built: Built | None) -> Outcome:
        if built is not None and built.status != "ok":
            return Outcome(built.status, None, built.detail)   # the runner is not asked
        return runner(op, cand.schedule, problem)

    def record(cand: Candidate, built: Built | None, out: Outcome) -> Outcome:
        feats = dict(cand.features or features(cand.kernel, runner.limits, plan=cand.plan))
        if built is not None:
            feats.update(built.features)   # ptxas' registers and spills, what a model of this GPU learns from
            result.build_seconds += built.seconds
        rec = record_of(cand, out, feats)
        db.append(rec)
        result.records.append(rec)
        result.measured += 1
        if out.status != "ok":
            result.failures[out.status] = result.failures.get(out.status, 0) + 1
        elif result.best is None or out.time_us < result.best.time_us:
            result.best = rec
        bar.measured, bar.failed = result.measured, _failed(result)
        bar.built = builders.built if builders else result.measured
        bar.best_us = result.best.time_us if result.best else None
        bar.show()
        return out

    groups: deque = deque()        # asked batches not yet told: [(candidate, recorded Outcome or None, build)]
    asked_to_measure, exhausted = 0, False

    def ask_ahead() -> None:
        nonlocal asked_to_measure, exhausted
        while not exhausted and len(groups) < ahead and (budget is None or asked_to_measure < budget):
            asked = search.ask(batch if budget is None else min(batch, budget - asked_to_measure))
            if not asked:
                exhausted = True
                break
            group = []
            for cand in asked:
                old = prior.get(record_of(cand, Outcome("ok")).key())
                if old is not None:
                    group.append((cand, Outcome(old.status, old.time_us, old.detail), None))
                    continue
                asked_to_measure += 1
                job = builders.submit(op, cand.schedule, problem, runner.limits) if builders else None
                group.append((cand, None, job))
            groups.append(group)

    width = getattr(runner, "width", 1)     # a pool.RunnerPool measures that many candidates at once
    with (concurrent.futures.ThreadPoolExecutor(width, thread_name_prefix="kernelgen-run") if width > 1
          else contextlib.nullcontext()) as threads:
        while True:
            ask_ahead()
            if not groups:
                break
            group = groups.popleft()
            # Builds are waited for by this thread (it alone draws the progress line); outcomes are recorded
            # in the order asked.
            if threads:   # each run handed to a pool thread as soon as its build is done
                handed = {}
                for i, (cand, old, job) in enumerate(group):
                    if old is None:
                        built = wait(job)
                        handed[i] = (built, threads.submit(run, cand, built))
            told = []
            for i, (cand, old, job) in enumerate(group):
                if old is not None:
                    result.skipped += 1
                    bar.skipped = result.skipped
                    told.append((cand, old))
                elif threads:
                    built, future = handed[i]
                    told.append((cand, record(cand, built, future.result())))
                else:     # one runner: built, run and recorded one at a time
                    built = wait(job)
                    told.append((cand, record(cand, built, run(cand, built))))
            search.tell(told)
            if stop is not None and stop(result):
                break
    bar.show(final=True)
    if getattr(runner, "confirm", None) is not None:
        _confirm_best(op, problem, runner, db, result)
    if resume:  # the best may have been measured by an earlier run
        best = db.best(op.name, str(problem), runner.arch, runner.gpu)
        if best and (result.best is None or best.time_us < result.best.time_us):
            result.best = best
    return result


def _confirm_best(op: Op, problem: Problem, runner: Runner, db: TuningDB, result: TuneResult) -> None:
    """The search validated each candidate at the test sizes that launch the timed kernel only; the winner is
    validated at the rest (runner.confirm: the other kernel twin) before it is the best. One that fails there
    is recorded again with that outcome (a schedule's latest record is the one that counts: TuningDB.best)
    and the next fastest is asked, until one passes."""
    for rec in sorted((r for r in result.records if r.status == "ok"), key=lambda r: r.time_us):
        out = runner.confirm(op, Schedule.from_dict(rec.schedule), problem)
        if out.status == "ok":
            result.best = rec
            return
        failed = dataclasses.replace(rec, status=out.status, time_us=None, detail=f"the winner's check: {out.detail}")
        db.append(failed)
        result.records.append(failed)
        result.failures[out.status] = result.failures.get(out.status, 0) + 1
    result.best = None


def _failed(result: TuneResult) -> int:
    return sum(result.failures.values())


def best_schedule(op: Op, problem: Problem | None, db: TuningDB | None = None, arch: str | None = None) -> Schedule:
    rec = (db or TuningDB()).best(op.name, str(problem) if problem else None, arch)
    if rec is None:
        where = f" for {problem}" if problem else ""
        raise UsageError(f"no successful tuning record for {op.name}{where} in {(db or TuningDB()).path}; "
                         f"run `kernelgen tune {op.name}` first")
    return Schedule.from_dict(rec.schedule)
