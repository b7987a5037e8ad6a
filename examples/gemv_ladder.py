"""The seed notes' GEMV ladder (y = A x), written as schedules.

    python3 examples/gemv_ladder.py            # emit each step, validate it (GPU, else emulator)

A thread per row -> a warp per row with a shuffle reduction -> several rows per warp (for short
rows) -> float4 loads with several in flight (for long rows) -> a block of 32 warps per row, so
blocks are short and the block scheduler balances the end of the kernel. `kernelgen bench gemv
--ladder` times the same steps against cuBLAS (torch.mv / cupy matmul) on a GPU.
"""
import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("gemv")


def rows(lanes, vec=1, unroll=1, threads=256):
    """`lanes` lanes share a row (32 // lanes rows per warp); each lane loads `unroll` vectors of `vec`."""
    s = (kg.schedule("gemv")
         .split("i", threads // 32 * (32 // lanes), 32 // lanes)   # i.0 block, i.1 warp, i.2 row in the warp
         .bind("i.0", "blockIdx.x").bind("i.1", "warp").bind("i.2", "lane")
         .split("j", unroll * lanes * vec, lanes * vec, vec)       # j.0 chunk, j.1 load, j.2 lane, j.3 vector
         .bind("j.2", "lane").unroll("j.1").vectorize("j.3", vec))
    return s.reduction("j", "shuffle") if lanes > 1 else s


def block_rows(lanes, vec=4, unroll=1, threads=None):
    """`lanes` threads (several warps) share a row, threadIdx.x along it and threadIdx.y the row in the
    block; the warps' shuffle sums meet in shared memory."""
    threads = threads or lanes
    return (kg.schedule("gemv")
            .split("i", threads // lanes)                             # i.0 block, i.1 row in the block
            .bind("i.0", "blockIdx.x").bind("i.1", "threadIdx.y")
            .split("j", unroll * lanes * vec, lanes * vec, vec)       # j.0 chunk, j.1 load, j.2 thread, j.3 vector
            .bind("j.2", "threadIdx.x").unroll("j.1").vectorize("j.3", vec)
            .reduction("j", "shuffle"))


LADDER = {
    "1 a thread per row": rows(1),
    "2 a warp per row, shuffle reduction": rows(32),
    "3 four rows per warp (8 lanes each)": rows(8),
    "4 float4, 2 loads in flight": rows(32, vec=4, unroll=2),
    "5 float4, 4 loads in flight": rows(32, vec=4, unroll=4),
    "6 a block of 32 warps per row": block_rows(1024, vec=4, unroll=2),
}

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    sizes = {"M": 8192, "N": 8192} if backend == "gpu" else {"M": 133, "N": 1001}
    for title, sched in LADDER.items():
        kernel = op.kernel(sched)
        path, _ = write_kernel(kernel, "out/gemv")
        v = validate(op, sched, op.problem(sizes), backend=backend)
        print(f"{title:40s} {v.summary():60s} {path}")
