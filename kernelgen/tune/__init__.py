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
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from ..errors import UsageError
from ..features import features
from ..ops.base import Op, Problem
from ..schedule import Schedule
from . import anneal, exhaustive, random_search
from .db import Record, TuningDB
from .runners import GpuRunner, Outcome, ReplayRunner, Runner, validation_problems
from .space import Candidate, Strategy, legal_space

STRATEGIES = {"exhaustive": exhaustive, "random": random_search, "anneal": anneal}

__all__ = ["STRATEGIES", "Candidate", "GpuRunner", "Outcome", "ReplayRunner", "Runner", "Strategy", "TuneResult",
           "best_schedule", "dtype_of", "legal_space", "tune", "validation_problems"]


@dataclass
class TuneResult:
    best: Record | None
    measured: int = 0
    skipped: int = 0
    pruned: int = 0
    failures: dict = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)   # this run's, in the order measured


def dtype_of(problem: Problem) -> str:
    """A record's dtype: the input type's name, `->output` appended where the outputs differ."""
    if problem.types is None:
        return "float32"
    t = problem.types
    return t.input.name if t.output == t.input else f"{t.input.name}->{t.output.name}"


def tune(op: Op, problem: Problem, *, runner: Runner, strategy: str = "exhaustive", budget: int | None = None,
         seed: int = 0, db: TuningDB | None = None, resume: bool = False, progress: bool = True,
         batch: int = 4) -> TuneResult:
    """Measure at most `budget` schedules (None: until the strategy has nothing more), asking the
    strategy for `batch` at a time; what `resume` finds in the database does not count."""
    if strategy not in STRATEGIES:
        raise UsageError(f"strategy {strategy!r} is unknown; choose one of {', '.join(STRATEGIES)}")
    db = db or TuningDB()
    space, pruned = legal_space(op, problem, runner.limits)
    search: Strategy = STRATEGIES[strategy].Search(space, seed)
    prior = {r.key(): r for r in db.records()} if resume else {}
    result = TuneResult(best=None, pruned=pruned)

    def record_of(cand: Candidate, out: Outcome, with_features: bool = False) -> Record:
        feats = features(cand.kernel, runner.limits, plan=cand.plan) if with_features else None
        return Record.make(op.name, str(problem), runner.arch, runner.gpu, cand.schedule.to_dict(), cand.knobs,
                           out.status, out.time_us, out.detail, cand.name, dtype_of(problem), feats)

    def step(cand: Candidate, bar) -> Outcome:
        old = prior.get(record_of(cand, Outcome("ok")).key())
        if old is not None:
            result.skipped += 1
            return Outcome(old.status, old.time_us, old.detail)
        out = runner(op, cand.schedule, problem)
        rec = record_of(cand, out, with_features=True)  # what a model of this GPU will learn from
        db.append(rec)
        result.records.append(rec)
        result.measured += 1
        if out.status != "ok":
            result.failures[out.status] = result.failures.get(out.status, 0) + 1
        elif result.best is None or out.time_us < result.best.time_us:
            result.best = rec
        bar.update(1)
        return out

    total = len(space) if budget is None else min(budget, len(space))
    with _progress(progress, total, f"tuning {op.name} {problem}", result) as bar:
        while budget is None or result.measured < budget:
            asked = search.ask(batch if budget is None else min(batch, budget - result.measured))
            if not asked:
                break
            search.tell([(cand, step(cand, bar)) for cand in asked])
    if resume:  # the best may have been measured by an earlier run
        best = db.best(op.name, str(problem), runner.arch, runner.gpu)
        if best and (result.best is None or best.time_us < result.best.time_us):
            result.best = best
    return result


class _Quiet:
    def update(self, n: int) -> None:
        pass


def _progress(show: bool, total: int, label: str, result: TuneResult):
    if not show:
        return contextlib.nullcontext(_Quiet())
    import click
    return click.progressbar(length=total, label=label, file=None,
                             item_show_func=lambda _: f"best {result.best.time_us:.1f} us" if result.best else "")


def best_schedule(op: Op, problem: Problem | None, db: TuningDB | None = None, arch: str | None = None) -> Schedule:
    rec = (db or TuningDB()).best(op.name, str(problem) if problem else None, arch)
    if rec is None:
        where = f" for {problem}" if problem else ""
        raise UsageError(f"no successful tuning record for {op.name}{where} in {(db or TuningDB()).path}; "
                         f"run `kernelgen tune {op.name}` first")
    return Schedule.from_dict(rec.schedule)
