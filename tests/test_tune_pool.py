"""Several GPUs of one host (kernelgen.tune.pool): candidates measured by several runners at once, each
worker pinned to its GPU, the database written in the order the strategy asked; no GPU needed."""
import functools
import os
import threading
import time

import pytest

from kernelgen import get_op
from kernelgen.errors import UsageError
from kernelgen.tune import Outcome, ReplayRunner, tune
from kernelgen.tune.db import TuningDB
from kernelgen.tune.pool import RunnerPool, gpu_indices, pinned
from kernelgen.tune.space import legal_space
from kernelgen.tune.worker import ProcessRunner

op = get_op("reduce_sum")
PROBLEM = op.problem({"n": 4096})


class Slow(ReplayRunner):
    """Replays the recorded times after a pause, counting how many calls overlap."""
    lock = threading.Lock()

    def __init__(self, times, state, gpu="replay"):
        super().__init__(times, gpu=gpu)
        self.state = state

    def __call__(self, op, sched, problem):
        with self.lock:
            self.state["now"] += 1
            self.state["most"] = max(self.state["most"], self.state["now"])
        time.sleep(0.02)
        with self.lock:
            self.state["now"] -= 1
        return super().__call__(op, sched, problem)


def _times():
    space, _ = legal_space(op, PROBLEM, ReplayRunner({}).limits)
    return {c.schedule.to_json(): Outcome("ok", 10.0 + i) for i, c in enumerate(space[:12])}


def test_a_pool_measures_a_batch_at_once_and_records_what_one_runner_would(tmp_path):
    times = _times()
    runs = {}
    for width in (1, 3):
        state = {"now": 0, "most": 0}
        runners = [Slow(times, state) for _ in range(width)]
        db = TuningDB(str(tmp_path / f"w{width}.jsonl"))
        result = tune(op, PROBLEM, runner=RunnerPool(runners) if width > 1 else runners[0], strategy="random",
                      budget=12, seed=3, db=db, batch=6, progress=False)
        runs[width] = [(r.kernel, r.status, r.time_us) for r in db.records()]
        assert state["most"] == width, state           # three candidates at a time with three runners
        assert result.measured == 12
    assert runs[1] == runs[3]                          # the same candidates, told and written in the same order


def test_the_gpus_of_a_pool_must_be_alike():
    with pytest.raises(UsageError, match="must be alike"):
        RunnerPool([ReplayRunner({}, gpu="H100"), ReplayRunner({}, gpu="A100")])
    with pytest.raises(UsageError, match="at least one runner"):
        RunnerPool([])


class Where(ReplayRunner):
    """Says in each outcome which GPUs its worker process sees."""

    def __call__(self, op, sched, problem):
        return Outcome("ok", 1.0, os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))


@pytest.mark.parametrize("parent,seen", [(None, ["0", "1"]), ("3,5", ["3", "5"])])
def test_each_worker_sees_only_its_own_gpu(monkeypatch, parent, seen):
    if parent is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", parent)
    sched = op.default_schedule()
    workers = [ProcessRunner(pinned(i, functools.partial(Where, {})), limit_s=60) for i in range(2)]
    try:
        assert [w(op, sched, PROBLEM).detail for w in workers] == seen
    finally:
        for w in workers:
            w.close()


def test_gpus_is_a_count_a_list_or_all():
    assert gpu_indices("all", 4) == [0, 1, 2, 3]
    assert gpu_indices("2", 4) == [0, 1] and gpu_indices("0,3", 4) == [0, 3]
    for bad, message in (("5", r"this host has 4 GPU\(s\); give 1..4"), ("0", "give 1..4"),
                         ("1,1", "must be distinct and 0..3"), ("0,7", "must be distinct and 0..3"),
                         ("two", "not a count, a comma-separated list")):
        with pytest.raises(UsageError, match=message):
            gpu_indices(bad, 4)
    with pytest.raises(UsageError, match="no GPU is visible"):
        gpu_indices("all", 0)


@pytest.mark.gpu
def test_a_pool_of_pinned_gpu_workers_tunes_on_the_gpu(tmp_path):
    """Two workers pinned to GPU 0 (the one every GPU machine has) through the pool, as `--gpus` makes
    them: every candidate validated and timed, recorded once."""
    from kernelgen.tune import GpuRunner
    make = functools.partial(GpuRunner, 5, 1000.0, "auto")
    runners = [ProcessRunner(pinned(0, make), limit_s=120) for _ in range(2)]
    db = TuningDB(str(tmp_path / "t.jsonl"))
    with RunnerPool(runners) as pool:
        result = tune(op, op.problem({"n": 1 << 20}), runner=pool, strategy="random", budget=8, seed=1, db=db,
                      batch=4, progress=False)
    assert result.measured == 8 and not result.failures, result.failures
    assert len({r.kernel for r in db.records()}) == 8


def test_the_cli_takes_gpus_of_this_host_or_a_ray_cluster_not_both(tmp_path):
    from click.testing import CliRunner
    from kernelgen.cli import main
    r = CliRunner().invoke(main, ["tune", "reduce_sum", "--size", "n=4096", "--db", str(tmp_path / "t.jsonl"),
                                  "--gpus", "2", "--ray", "auto"])
    assert r.exit_code == 2 and "give one of the two" in r.output and "Traceback" not in r.output, r.output
