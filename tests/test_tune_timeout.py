"""Real time limits: each candidate runs in a worker process that is killed at its deadline; no GPU.

The fake runners below are made inside the worker ("spawn" imports this module there), and replay
recorded results like the ReplayRunner, except for the schedules they hang on, crash on or fail on.
"""
import functools
import os
import time

import pytest

from kernelgen import get_op
from kernelgen.target import target
from kernelgen.tune import Outcome, ReplayRunner, tune
from kernelgen.tune.db import TuningDB
from kernelgen.tune.space import legal_space
from kernelgen.tune.worker import ProcessRunner, WorkerError

LIMIT_S = 1.0
SLACK_S = 1.5       # terminate, join, and the parent's bookkeeping


class Misbehaving(ReplayRunner):
    """Hangs forever on the schedules in `hang`, exits the process on those in `die`, raises on `bug`."""

    def __init__(self, times, hang=(), die=(), bug=()):
        super().__init__(times)
        self.hang, self.die, self.bug = set(hang), set(die), set(bug)

    def __call__(self, op, sched, problem):
        s = sched.to_json()
        if s in self.hang:
            while True:             # a kernel that never returns
                time.sleep(3600)
        if s in self.die:
            os._exit(139)           # a segfault in the driver, as the parent sees it
        if s in self.bug:
            raise ZeroDivisionError("a bug in the runner")
        return super().__call__(op, sched, problem)


class Timed:
    """Wraps a runner and keeps how long each call took, in the parent."""

    def __init__(self, runner):
        self.runner, self.arch, self.gpu, self.limits = runner, runner.arch, runner.gpu, runner.limits
        self.seconds = []

    def __call__(self, op, sched, problem):
        t0 = time.monotonic()
        try:
            return self.runner(op, sched, problem)
        finally:
            self.seconds.append(time.monotonic() - t0)


@pytest.fixture
def reduce_sum():
    op = get_op("reduce_sum")
    problem = op.problem({"n": 1 << 20})
    space, _ = legal_space(op, problem, target())
    scheds = [c.schedule.to_json() for c in space[:5]]
    return op, problem, scheds, {s: Outcome("ok", 10.0 + i) for i, s in enumerate(scheds)}


def test_a_hanging_kernel_is_stopped_at_its_limit_and_the_others_are_measured(reduce_sum, tmp_path):
    op, problem, scheds, times = reduce_sum
    db = TuningDB(tmp_path / "t.jsonl")
    with ProcessRunner(functools.partial(Misbehaving, times, hang=[scheds[1]]), limit_s=LIMIT_S) as pr:
        runner = Timed(pr)
        res = tune(op, problem, runner=runner, budget=5, db=db, progress=False, default_first=False)   # space order
        assert pr.started == 2                                 # the first worker, and one after the kill
    statuses = [r.status for r in db.records()]
    assert statuses == ["ok", "timeout", "ok", "ok", "ok"]
    assert LIMIT_S <= runner.seconds[1] <= LIMIT_S + SLACK_S   # stopped at the limit, not after the kernel
    assert res.failures == {"timeout": 1} and res.best.time_us == 10.0
    hung = db.records()[1]
    assert "time limit of 1 s" in hung.detail and hung.time_us is None
    assert hung.schedule == op.schedule_from_knobs(**hung.knobs).to_dict()


def test_a_dead_worker_is_a_launch_error_and_a_fresh_one_goes_on(reduce_sum, tmp_path):
    op, problem, scheds, times = reduce_sum
    with ProcessRunner(functools.partial(Misbehaving, times, die=[scheds[0]]), limit_s=30) as pr:
        res = tune(op, problem, runner=pr, budget=3, db=TuningDB(tmp_path / "t.jsonl"), progress=False,
                   default_first=False)
        assert pr.started == 2
    first = res.records[0]
    assert first.status == "launch_error" and "exit code 139" in first.detail
    assert [r.status for r in res.records[1:]] == ["ok", "ok"]


def test_a_runner_that_raises_is_a_bug_raised_with_the_workers_traceback(reduce_sum, tmp_path):
    op, problem, scheds, times = reduce_sum
    with ProcessRunner(functools.partial(Misbehaving, times, bug=[scheds[0]]), limit_s=30) as pr:
        with pytest.raises(WorkerError, match="ZeroDivisionError: a bug in the runner"):
            tune(op, problem, runner=pr, budget=3, db=TuningDB(tmp_path / "t.jsonl"), progress=False)
