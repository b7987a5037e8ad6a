"""Tuning through Ray actors (kernelgen.tune.ray_pool) on a local Ray instance, with replay runners (no GPU):
the same records as one local runner, and a hang stopped at its time limit. Skips where Ray is not installed."""
import functools
import sys
import time

import pytest

from kernelgen import get_op
from kernelgen.tune import Outcome, ReplayRunner, tune
from kernelgen.tune.db import TuningDB
from kernelgen.tune.pool import RunnerPool
from kernelgen.tune.space import legal_space

ray = pytest.importorskip("ray")

op = get_op("reduce_sum")
PROBLEM = op.problem({"n": 4096})


class Hangs(ReplayRunner):
    """Replays recorded times, except that it never returns on the schedules in `hang`."""

    def __init__(self, times, hang=()):
        super().__init__(times)
        self.hang = set(hang)

    def __call__(self, op, sched, problem):
        if sched.to_json() in self.hang:
            while True:
                time.sleep(3600)
        return super().__call__(op, sched, problem)


@pytest.fixture(scope="module")
def local_ray():
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])   # the actors cannot import tests/
    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_actors_tune_like_one_runner_and_stop_a_hang(local_ray, tmp_path):
    from kernelgen.tune.ray_pool import RayRunner
    space, _ = legal_space(op, PROBLEM, ReplayRunner({}).limits)
    times = {c.schedule.to_json(): Outcome("ok", 10.0 + i) for i, c in enumerate(space[:8])}
    hang = space[2].schedule.to_json()
    local_db, ray_db = TuningDB(str(tmp_path / "local.jsonl")), TuningDB(str(tmp_path / "ray.jsonl"))
    tune(op, PROBLEM, runner=Hangs(times), strategy="exhaustive", budget=8, db=local_db, batch=4, progress=False,
         space=[c for c in space[:8] if c.schedule.to_json() != hang])
    runners = [RayRunner(functools.partial(Hangs, times, (hang,)), limit_s=5, gpus=0) for _ in range(2)]
    with RunnerPool(runners) as pool:
        start = time.monotonic()
        result = tune(op, PROBLEM, runner=pool, strategy="exhaustive", budget=8, db=ray_db, batch=4, progress=False,
                      space=space[:8])
        took = time.monotonic() - start
    by_kernel = {r.kernel: r for r in ray_db.records()}
    assert by_kernel[space[2].name].status == "timeout" and "Ray actor killed" in by_kernel[space[2].name].detail
    assert took < 5 + 20                                   # the hang cost its limit, not forever
    assert sum(r.started for r in runners) == 3            # one actor replaced after the hang
    others = [(r.kernel, r.status, r.time_us) for r in ray_db.records() if r.kernel != space[2].name]
    assert others == [(r.kernel, r.status, r.time_us) for r in local_db.records()]
    assert result.measured == 8 and result.failures == {"timeout": 1}
