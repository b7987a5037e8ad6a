"""Host time of a cached launch: `kg.launch` and a held `Prepared` on CuPy arrays and torch tensors.

    python3 bench/launch_overhead.py            # on a GPU machine; prints a table

Each row launches the same kernel on the same shapes N times back to back and reports the host time
per call (perf_counter around the loop, the device left to run behind it, then one synchronize
outside the timed loop), the median of 21 loops. N is kept small (200) so that the launch queue never
fills: with thousands of launches in flight the driver blocks the host until the GPU drains, and the
loop then measures the kernel's device time instead of the host path (the 256^3 SGEMM with its
split-K reduction runs longer on the GPU than its launch costs on the host). The device time of each
kernel is printed beside it. The first call (build, compile, load) is excluded:
it is what the cache exists to pay once.
"""
from __future__ import annotations

import statistics
import time

import kernelgen as kg
from kernelgen import gpu
from kernelgen.prepared import prepare
from kernelgen.timing import time_callable

CALLS = 200
LOOPS = 21


def per_call_us(fn) -> float:
    import cupy
    fn()
    cupy.cuda.Device().synchronize()
    loops = []
    for _ in range(LOOPS):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        loops.append((time.perf_counter() - t0) / CALLS * 1e6)
        cupy.cuda.Device().synchronize()
    return statistics.median(loops)


def main() -> None:
    import cupy
    dev = gpu.device()
    rows = []
    for op_name, sizes, make in (
            ("reduce_sum", {"n": 4096}, lambda p: {"x": (p["n"],), "out": (1,)}),
            ("sgemm", {"M": 256, "N": 256, "K": 256},
             lambda p: {"A": (p["M"], p["K"]), "B": (p["K"], p["N"]), "C": (p["M"], p["N"])}),
            ("softmax", {"rows": 64, "cols": 1000}, lambda p: {"x": (p["rows"], p["cols"]), "y": (p["rows"], p["cols"])})):
        op = kg.get_op(op_name)
        problem = op.problem(sizes)
        sched = op.schedule_for(problem)
        shapes = make(problem)
        cp_arrays = {k: cupy.random.rand(*s, dtype=cupy.float32) for k, s in shapes.items()}
        prep = prepare(op, sched, problem, dev)
        device_us = time_callable(lambda: prep(**cp_arrays), reps=50, flush_l2=False).median_us
        print(f"{op_name}: {prep.kernel.name}, {len(prep.plan.launches)} launch(es), {device_us:.2f} us on the device")
        rows.append((op_name, "Prepared(**cupy arrays)", per_call_us(lambda: prep(**cp_arrays))))
        rows.append((op_name, "kg.launch(**cupy arrays)", per_call_us(lambda: kg.launch(op, sched, problem, **cp_arrays))))
        try:
            import torch
            th = {k: torch.rand(*s, device="cuda") for k, s in shapes.items()}
            rows.append((op_name, "Prepared(**torch tensors)", per_call_us(lambda: prep(**th))))
            rows.append((op_name, "kg.launch(**torch tensors)", per_call_us(lambda: kg.launch(op, sched, problem, **th))))
        except ImportError:
            pass
    print(f"cached launch host time on {dev.gpu}, {CALLS} calls a loop, median of {LOOPS} loops")
    print(f"{'op':12s} {'call':30s} {'us/call':>8s}")
    for op_name, how, us in rows:
        print(f"{op_name:12s} {how:30s} {us:8.2f}")


if __name__ == "__main__":
    main()
