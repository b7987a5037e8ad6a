"""The seed notes' software prefetching for a grid-stride loop, at one block per SM: a plain loop ->
batch prefetch into registers -> batch into shared memory -> rolling through shared memory -> rolling
with padded slots. These are the last steps of reduce_sum's ladder.

    python3 examples/prefetch_ladder.py          # emit each step, validate it (GPU, else emulator)
    python3 bench/prefetch_probe.py              # on a GPU: each step at one block per SM and at full occupancy

Each thread visits x's float4 vectors j = blockIdx.x * 512 + tid, then + gridDim.x * 512, ...;
`prefetch("x", 8, scope, mode)` loads 8 of those iterations ahead. Batch forms handle a count that
is not a multiple of 8 with a partial last batch; the rolling ring works for any count by design.
"""
import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("reduce_sum")

# one block of 512 threads per SM, one float4 per iteration, warp-shuffle block sums
loop = (kg.schedule("reduce_sum").split("i", 512 * 4, 512 * 4, 4)
        .bind("i.0", "blockIdx.x").bind("i.2", "threadIdx.x").unroll("i.1").vectorize("i.3", 4)
        .reduction("i", "shuffle").annotate("grid_stride", 1))

LADDER = {
    "1 plain grid-stride loop": loop,
    "2 batch prefetch into registers": loop.prefetch("x", 8, "registers", "batch"),
    "3 batch prefetch into shared memory": loop.prefetch("x", 8, "shared", "batch"),
    "4 rolling prefetch through shared memory": loop.prefetch("x", 8, "shared", "rolling"),
    "5 rolling, padded slots": loop.prefetch("x", 8, "shared", "rolling").storage_align("x", 1),
}

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    for n in (1, 1000003):                        # a single element; a count no step divides evenly
        problem = op.problem({"n": n})
        for title, sched in LADDER.items():
            kernel = op.kernel(sched)
            path, _ = write_kernel(kernel, "out/reduce_sum")
            v = validate(op, sched, problem, backend=backend)
            print(f"n={n:<8d} {title:42s} {v.summary():60s} {path}")
