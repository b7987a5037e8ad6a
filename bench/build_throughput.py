"""Candidates compiled per second by the tuner's builders, by number of jobs (CPU only, no GPU).

    python3 bench/build_throughput.py                      # sgemm, 16 candidates, 1 and 2 jobs
    python3 bench/build_throughput.py --op conv2d --count 32 --jobs 1,4,16

Each run takes `count` candidates of the op's legal space (a seeded sample) and builds them through
kernelgen.tune.builder.Builders, each job count with an empty compile cache of its own, so every
build renders and runs NVRTC. "warm" is the rate once the pool's processes have started and
imported kernelgen (each first builds one small kernel, untimed); "cold" counts that start-up too,
as the first batch of a `kernelgen tune` does. The CPU seconds a candidate (the pool's user and
system time, start-up included, over the candidates) do not depend on how busy the machine is:
N free cores build about N / that many candidates a second. The load average is printed with it:
on a shared machine other people's work takes cores.
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import tempfile
import time

from kernelgen.ops import get_op
from kernelgen.target import target
from kernelgen.tune.builder import Builders
from kernelgen.tune.space import legal_space


def rate(op, problem, cands, jobs: int) -> tuple[float, float, int, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["KERNELGEN_CACHE_DIR"] = cache            # inherited by the spawned builders
        warm_op = get_op("reduce_sum")
        t0 = time.perf_counter()
        with Builders(jobs) as pool:
            small = warm_op.problem({"n": 4096})
            kinds = [c.schedule for c in legal_space(warm_op, small, target())[0]]   # a small kernel a job
            warmups = [pool.submit(warm_op, kinds[i % len(kinds)], small, target()) for i in range(jobs)]
            for f in warmups:
                f.result()
            t1 = time.perf_counter()
            futures = [pool.submit(op, c.schedule, problem, target()) for c in cands]
            built = [f.result() for f in futures]
            t2 = time.perf_counter()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)     # the pool's processes, joined at shutdown
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    failed = sum(b.status != "ok" for b in built)
    return len(cands) / (t2 - t1), len(cands) / (t2 - t0), failed, cpu / len(cands)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", default="sgemm")
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    op = get_op(args.op)
    problem = op.problem()
    space, _ = legal_space(op, problem, target())
    cands = random.Random(args.seed).sample(space, min(args.count, len(space)))
    print(f"{op.name} {problem}: {len(cands)} candidates of {len(space)}, {os.cpu_count()} cores here, "
          f"load average {os.getloadavg()[0]:.2f}")
    for jobs in (int(j) for j in args.jobs.split(",")):
        warm, cold, failed, cpu = rate(op, problem, cands, jobs)
        print(f"jobs {jobs:3d}: {warm:6.2f} candidates/s warm, {cold:6.2f} cold (pool start-up included), "
              f"{cpu:.2f} CPU s a candidate (start-up included), {failed} failed to compile; "
              f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
