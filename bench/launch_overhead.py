"""Host time of a cached launch: `kg.launch` and a held `Prepared` on CuPy arrays and torch tensors.

    python3 bench/launch_overhead.py            # on a GPU machine; prints a table

Each row times single calls on an idle GPU: synchronize, then perf_counter around one call, the
median of 500 calls. The device is drained before each call so that the time is the host path alone:
back-to-back loops measure the kernel instead once the launch queue holds more device work than the
host takes to enqueue (the 256^3 SGEMM with its split-K reduction runs ~23 us on the device). The
device time of each kernel is printed beside it. The first call (build, compile, load) is excluded:
it is what the cache exists to pay once.
"""
from __future__ import annotations

import statistics
import time

import kernelgen as kg
from kernelgen import gpu
from kernelgen.prepared import prepare
from kernelgen.timing import time_callable

CALLS = 500


def per_call_us(fn) -> float:
    import cupy
    fn()
    times = []
    for _ in range(CALLS):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    cupy.cuda.Device().synchronize()
    return statistics.median(times) * 1e6


def both(fn) -> tuple[float, float]:
    return per_call_us(fn), back_to_back_us(fn)


def back_to_back_us(fn, calls: int = 200) -> float:
    """Per call over `calls` calls in a row (median of 11 loops): what a stream of launches sustains."""
    import cupy
    loops = []
    for _ in range(11):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        loops.append((time.perf_counter() - t0) / calls * 1e6)
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
        rows.append((op_name, "Prepared(**cupy arrays)", *both(lambda: prep(**cp_arrays))))
        rows.append((op_name, "kg.launch(**cupy arrays)", *both(lambda: kg.launch(op, sched, problem, **cp_arrays))))
        try:
            import torch
            th = {k: torch.rand(*s, device="cuda") for k, s in shapes.items()}
            rows.append((op_name, "Prepared(**torch tensors)", *both(lambda: prep(**th))))
            rows.append((op_name, "kg.launch(**torch tensors)", *both(lambda: kg.launch(op, sched, problem, **th))))
        except ImportError:
            pass
    print(f"cached launch host time on {dev.gpu}: one call on an idle GPU, median of {CALLS} calls")
    print(f"{'op':12s} {'call':30s} {'us/call':>8s} {'back-to-back':>13s}")
    for op_name, how, us, b2b in rows:
        print(f"{op_name:12s} {how:30s} {us:8.2f} {b2b:13.2f}")


if __name__ == "__main__":
    main()
