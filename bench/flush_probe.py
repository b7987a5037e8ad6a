"""Does the L2 flush before an events-timed launch charge the harness's own dirty lines to the kernel?
`kernelgen.timing.time_callable` flushes by writing a buffer of twice the L2 (scrub.fill): the L2 is left
full of dirty lines, which the timed kernel's first misses must write back to DRAM. This times a plain copy
and the fp16 softmax at its benchmark shape (64 MiB moved each) with events around one launch after:
  write  - the current flush (fill of 2x L2)
  clean  - the same fill, then a read of another 2x-L2 buffer (the dirty lines written back before the
           timed launch; the L2 left holding clean lines of neither the inputs nor the outputs)
  none   - no flush (inputs may still be in L2 from the last run)
and as CUDA-graph replays over rotating buffers (kernelgen.timing.time_graph).

    PYTHONPATH=. python3 bench/flush_probe.py        # on a GPU
"""
import cupy

from kernelgen import gpu
from kernelgen.ops import get_op
from kernelgen.timing import prepared, time_graph

dev = gpu.device()
n_words = dev.l2_bytes * 2 // 4
scrub, clean = cupy.empty(n_words, cupy.float32), cupy.empty(n_words, cupy.float32)
clean.fill(0.0)


def events(fn, flush: str, reps: int = 30) -> float:
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(5):
        fn()
    samples = []
    for _ in range(reps):
        if flush in ("write", "clean"):
            scrub.fill(1.0)
        if flush == "clean":
            clean.sum()   # reads 2x L2: evicts (writes back) the dirty lines before the timed launch
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
    return sorted(samples)[len(samples) // 2]


def report(name: str, fn, nbytes: int, graph_calls) -> None:
    cells = [f"{f} {nbytes / events(fn, f) / 1e6:.2f}" for f in ("write", "clean", "none")]
    g = time_graph(graph_calls, 64).median_us
    print(f"| {name} | " + " | ".join(c.split()[1] for c in cells) + f" | {nbytes / g / 1e6:.2f} |", flush=True)


print(f"# {dev.gpu}, L2 {dev.l2_bytes >> 20} MiB; TB/s of 64 MiB moved (median of 30 events; graph: 64 launches)\n")
print("| kernel | events, write flush (now) | events, clean flush | events, no flush | graph replay |")
print("|---|---|---|---|---|")
a = cupy.empty(8 << 20, cupy.float32)   # 32 MiB
b = cupy.empty_like(a)
sets = [(cupy.empty_like(a), cupy.empty_like(a)) for _ in range(4)]
report("device copy (cudaMemcpyAsync, 32 MiB)", lambda: b.data.copy_from_device_async(a.data, a.nbytes),
       2 * a.nbytes, [lambda s=s: s[1].data.copy_from_device_async(s[0].data, a.nbytes) for s in sets])
op = get_op("softmax")
for dtype in ("float16", "bfloat16"):
    problem = op.problem({"rows": 4096, "cols": 4096}, dtype=dtype)
    sched = op.schedule_for(problem)
    calls = [prepared(op, sched, problem, seed)[1] for seed in range(4)]
    report(f"softmax 4096x4096 {dtype} (schedule_for)", calls[0], op.bytes_moved(problem), calls)
