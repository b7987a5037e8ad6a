"""Time kernels on the GPU, two ways, the same for our kernels and for the vendor library.

- "events": CUDA events around one launch, L2 flushed between repetitions, the median. Right for
  problems large enough that the ~3 us of launch overhead is a small share of the time.
- "graph": R launches captured into one CUDA graph, each on its own input/output set (rotating
  among enough sets that together they exceed twice the L2, so no launch finds its inputs in the
  cache), the graph replayed several times; the time per launch is the replay's median / R. The
  launch gaps shrink to what back-to-back kernels cost, so small problems measure the kernel.
- "auto": graph below GRAPH_BELOW_BYTES moved (launch overhead would be a large share), and for a
  memory-bound problem below EVENTS_FROM_L2 times the L2's bytes; events otherwise. Events around one
  launch charge the kernel with up to an L2 of DRAM traffic that is not its own and spare it up to an L2
  of its own: the flush leaves the L2 full of dirty lines the timed kernel writes back, and the kernel's
  last writes are still in the L2 when the stop event fires (bench/flush_probe.py on the H100: a 64 MiB
  device copy, 2.49 TB/s after the flush, 2.81 in graph replays, 3.22 after a flush that leaves clean
  lines). From 8 L2s moved that is at most an eighth either way; a compute-bound kernel hides it under
  its math, and keeps events (cuBLAS captured in a graph by torch ran 184 us at fp16 4096^3 against 166
  us under events: a comparison there would flatter kernelgen).

>>> from kernelgen.timing import Timing, rotation, choose_method
>>> Timing((3.0, 1.0, 2.0)).median_us
2.0
>>> rotation(set_bytes=8 << 20, l2_bytes=50 << 20)      # softmax 8192x128 on an H100: (sets, launches)
(13, 39)
>>> [choose_method("auto", bytes_moved=n << 20, l2_bytes=50 << 20) for n in (8, 128, 400)]   # an H100's L2
['graph', 'graph', 'events']
>>> choose_method("auto", bytes_moved=96 << 20, l2_bytes=50 << 20, memory_bound=False)      # a 4096^3 GEMM
'events'

`measure()` times one schedule and places it on the roofline of the device; `measure_vendor()`
times the vendor library on the very same input sets, for the ratio.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import gpu
from .errors import UsageError
from .ops.base import Op, Problem
from .prepared import prepare
from .schedule import Schedule
from .target import Target

METHODS = ("events", "graph", "auto")
GRAPH_BELOW_BYTES = 64 << 20   # auto: graph timing below this many bytes moved, where launch overhead is a large share
EVENTS_FROM_L2 = 8             # auto: a memory-bound problem takes events from this many L2s moved (graph below)
MIN_LAUNCHES = 32              # launches per graph replay, at least (a whole number of rotations)
REPLAY_US = 2000.0             # a replay this long amortises its own launch: long kernels need fewer launches
MAX_SETS = 256                 # input/output sets rotated at most (tiny problems would need thousands)


@dataclass(frozen=True)
class Timing:
    samples_us: tuple[float, ...]

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: how much to trust a difference between two timings."""
        q = np.percentile(self.samples_us, [10, 90])
        return float((q[1] - q[0]) / self.median_us)


@dataclass(frozen=True)
class Measurement:
    kernel: str
    time_us: float
    spread: float
    gbps: float                # bytes the op must move / time
    tflops: float
    roofline: float            # floor time / measured time (1.0 = on the roof)
    bound: str                 # "memory" | "compute"
    method: str = "events"     # how it was timed: "events", "graph", or "events (why graph was not possible)"


# -- choosing the method (no GPU needed) --------------------------------------------------------
def parse_method(text: str) -> str:
    if text not in METHODS:
        raise UsageError(f"--timing {text!r} is not a timing method; choose one of {', '.join(METHODS)}")
    return text


def choose_method(method: str, bytes_moved: int, l2_bytes: int | None = None, memory_bound: bool = True) -> str:
    """`events` or `graph`: `auto` takes graph below GRAPH_BELOW_BYTES moved, and for a memory-bound problem
    below EVENTS_FROM_L2 L2s moved (`l2_bytes`: the L2's size, by default the current GPU's)."""
    if parse_method(method) != "auto":
        return method
    if bytes_moved < GRAPH_BELOW_BYTES:
        return "graph"
    l2 = gpu.device().l2_bytes if l2_bytes is None else l2_bytes
    return "graph" if memory_bound and bytes_moved < EVENTS_FROM_L2 * l2 else "events"


def method_for(method: str, op: Op, problem: Problem) -> str:
    """choose_method for `problem` on this GPU: its bytes, its L2, whether the memory roof binds."""
    t_mem, t_math = floors(op, problem, gpu.device())
    return choose_method(method, op.bytes_moved(problem), memory_bound=t_mem >= t_math)


def rotation(set_bytes: int, l2_bytes: int) -> tuple[int, int]:
    """(input/output sets, launches per graph replay): enough sets to exceed 2x L2 together (one when a
    single set already does; at most MAX_SETS), and at least MIN_LAUNCHES launches, whole rotations."""
    sets = max(1, min(MAX_SETS, -(-2 * l2_bytes // max(1, set_bytes))))
    return sets, sets * -(-MIN_LAUNCHES // sets)


def replay_launches(sets: int, launches: int, once_us: float) -> int:
    """Launches per graph replay for a kernel that runs `once_us`: whole rotations of `sets` covering
    REPLAY_US, at most `launches` (rotation's)."""
    return min(launches, sets * -(-max(1, int(-(-REPLAY_US // once_us))) // sets))


def set_bytes(op: Op, problem: Problem) -> int:
    """Bytes of one input/output set: every input and output array of the problem."""
    shapes = dict(op.input_shapes(problem), **op.output_shapes(problem))
    return sum(problem.dtype(k).itemsize * int(np.prod(s)) for k, s in shapes.items())


def describe(method: str, op: Op, problem: Problem, reps: int) -> str:
    """One line saying how the numbers next to it were taken."""
    if method == "events":
        return f"timing: events, one launch between CUDA events, L2 flushed, median of {reps}"
    sets, launches = rotation(set_bytes(op, problem), gpu.device().l2_bytes)
    return (f"timing: graph, {launches} launches per CUDA-graph replay over {sets} input/output set(s) of "
            f"{set_bytes(op, problem) / 2**20:.1f} MiB, time = replay / {launches}, median of {reps} replays")


# -- the two ways to time ------------------------------------------------------------------------
def time_callable(fn: Callable[[], object], *, warmup: int = 5, reps: int = 30, flush_l2: bool = True) -> Timing:
    """Events around one call of `fn`, L2 flushed before each."""
    import cupy
    dev = gpu.device()
    scrub = cupy.empty(max(dev.l2_bytes * 2 // 4, 1), dtype=cupy.float32) if flush_l2 else None
    for _ in range(warmup):
        fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(reps):
        if scrub is not None:
            scrub.fill(1.0)  # evict the inputs from L2 so every run reads device memory
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
    return Timing(tuple(samples))


def time_graph(calls: list[Callable[[], object]], launches: int, *, warmup: int = 5, reps: int = 30,
               torch_graph: bool = False) -> Timing:
    """`launches` calls, rotating over `calls` (one per input/output set), captured into one CUDA graph
    (CuPy stream capture; torch.cuda.graph for torch calls, whose allocator needs its own capture);
    each sample is one replay's time / `launches`. What a call returns (a vendor's output) is held
    until its set comes round again, so its outputs rotate over as many buffers as our kernels' do."""
    import cupy
    held: list = [None] * len(calls)
    for fn in calls:  # compile, load and create handles outside the capture
        fn()
    if torch_graph:
        import torch
        side = torch.cuda.Stream()  # warm-up on a side stream, as torch's CUDA-graph notes ask
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for fn in calls:
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for i in range(launches):
                held[i % len(calls)] = calls[i % len(calls)]()
        replay = graph.replay  # on torch's current stream: the legacy default stream, as the events below
    else:
        cupy.cuda.Device().synchronize()
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            try:
                for i in range(launches):
                    held[i % len(calls)] = calls[i % len(calls)]()
            finally:
                cupy_graph = stream.end_capture()
        replay = lambda: cupy_graph.launch(cupy.cuda.Stream.null)  # noqa: E731
    for _ in range(warmup):
        replay()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(reps):
        start.record(cupy.cuda.Stream.null)
        replay()
        stop.record(cupy.cuda.Stream.null)
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3 / launches)
    del held
    return Timing(tuple(samples))


def roofline(op: Op, problem: Problem, time_us: float, on: Target | None = None) -> tuple[float, float, float, str]:
    """(GB/s, TFLOP/s, fraction of the roof, which roof) on `on` (default: this GPU): the compute roof is
    the op's math path there (fp32 CUDA cores, or the tensor cores' figure for its input type); a
    target without peaks (an arch's reference target) has no roof: fraction 0."""
    t_mem, t_math = floors(op, problem, on or gpu.device())
    secs = time_us * 1e-6
    return (op.bytes_moved(problem) / secs / 1e9, op.flops(problem) / secs / 1e12, max(t_mem, t_math) / secs,
            "memory" if t_mem >= t_math else "compute")


def floors(op: Op, problem: Problem, dev: Target) -> tuple[float, float]:
    """(seconds at the memory roof, seconds at the compute roof) of `problem` on `dev` (0 where it has no peaks)."""
    peak_bw, peak_flops = (dev.peaks.bytes_per_s if dev.peaks else 0.0), dev.peak_flops(op.math(problem))
    return (op.bytes_moved(problem) / peak_bw if peak_bw else 0.0,
            op.flops(problem) / peak_flops if peak_flops else 0.0)


# -- inputs and launchers ------------------------------------------------------------------------
_sets_cache: dict = {}


def device_sets(op: Op, problem: Problem, count: int, seed: int = 0) -> list[dict]:
    """`count` input/output sets on the device, kept for the last problem (a tuning run times many
    schedules on one problem; drawing 2^28 random numbers per schedule would dominate). Set 0 is
    drawn at random; the others hold copies of its inputs in buffers of their own."""
    import cupy
    key = (op.name, tuple(op.inputs), problem, seed)  # inputs differ per elementwise expression
    if key not in _sets_cache:
        _sets_cache.clear()
        inputs = op.make_inputs(problem, np.random.default_rng(seed))
        arrays = {k: cupy.asarray(v) for k, v in inputs.items()}
        arrays.update({k: cupy.empty(s, dtype=problem.dtype(k).storage) for k, s in op.output_shapes(problem).items()})
        _sets_cache[key] = [arrays]
    sets = _sets_cache[key]
    while len(sets) < count:
        sets.append({k: v.copy() if k in op.input_shapes(problem) else cupy.empty_like(v)
                     for k, v in sets[0].items()})
    return sets[:count]


def device_arrays(op: Op, problem: Problem, seed: int = 0) -> dict:
    """Random inputs and output buffers on the device (input set 0 of device_sets)."""
    return device_sets(op, problem, 1, seed)[0]


def launchers(op: Op, sched: Schedule, problem: Problem, sets: int = 1, seed: int = 0):
    """(kernel, one no-argument launcher per input/output set of device_sets)."""
    prep = prepare(op, sched, problem, gpu.device())
    return prep.kernel, [prep.launcher(a) for a in device_sets(prep.op, problem, sets, seed)]


def prepared(op: Op, sched: Schedule, problem: Problem, seed: int = 0):
    """(kernel, launcher, arrays) for timing: inputs random, outputs allocated, all on the device."""
    kernel, (launch,) = launchers(op, sched, problem, 1, seed)
    return kernel, launch, device_arrays(op.instance(sched, problem), problem, seed)


# -- measuring -----------------------------------------------------------------------------------
def measure(op: Op, sched: Schedule, problem: Problem, *, reps: int = 30, warmup: int = 5,
            timing: str = "events", once_us: float | None = None) -> Measurement:
    """`once_us`: a run's time where the caller knows it (a tuning runner times one run first): a graph
    replay then holds whole rotations of at least REPLAY_US, not MIN_LAUNCHES launches of a long kernel
    (a 400 us SGEMM spent 0.3 s a candidate in 800 launches)."""
    method = method_for(timing, op, problem)
    if method == "graph":
        sets, launches = rotation(set_bytes(op.instance(sched, problem), problem), gpu.device().l2_bytes)
        if once_us:
            launches = replay_launches(sets, launches, once_us)
        kernel, calls = launchers(op, sched, problem, sets)
        t = time_graph(calls, launches, warmup=warmup, reps=reps)
    else:
        kernel, launch, _ = prepared(op, sched, problem)
        t = time_callable(launch, warmup=warmup, reps=reps)
    gbps, tflops, frac, bound = roofline(op, problem, t.median_us)
    return Measurement(kernel.name, t.median_us, t.spread, gbps, tflops, frac, bound, method)


def measure_vendor(op: Op, problem: Problem, *, reps: int = 30, warmup: int = 5,
                   timing: str = "events") -> tuple[str, Measurement] | None:
    """The vendor library on the kernels' own input sets (drawn once), timed the same way; where its
    graph capture fails it is timed with events, and the Measurement's method says why."""
    method = method_for(timing, op, problem)
    sets, launches = rotation(set_bytes(op, problem), gpu.device().l2_bytes) if method == "graph" else (1, 0)
    names = op.input_shapes(problem)
    found = [op.vendor({k: a[k] for k in names}, problem) for a in device_sets(op, problem, sets)]
    if found[0] is None:
        return None
    label, calls = found[0][0], [fn for _, fn in found]
    if method == "graph":
        try:
            t = time_graph(calls, launches, warmup=warmup, reps=reps, torch_graph=label.startswith("torch"))
        except Exception as e:  # a library that allocates or synchronises inside a capture
            import cupy
            cupy.cuda.Device().synchronize()
            method = f"events (graph capture of {label} failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:100]})"
            t = time_callable(calls[0], warmup=warmup, reps=reps)
    else:
        t = time_callable(calls[0], warmup=warmup, reps=reps)
    gbps, tflops, frac, bound = roofline(op, problem, t.median_us)
    return label, Measurement(label, t.median_us, t.spread, gbps, tflops, frac, bound, method)
