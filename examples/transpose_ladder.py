"""The transpose ladder, written as schedules: naive -> shared tile -> padded tile -> diagonal order -> float4.

    python3 examples/transpose_ladder.py         # emit each step, validate it (GPU, else emulator)

Each step adds one primitive to the previous one; `kernelgen bench transpose --ladder` times the
same steps against torch's x.t().contiguous() on a GPU.
"""
import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("transpose")


def tiles(tile=32, rows=8, vec=1):
    """One block per tile x tile block of x: tile/vec x rows threads, each moving tile/rows rows."""
    s = kg.schedule("transpose").split("i", tile, rows)                   # i.0 tile, i.1 item, i.2 thread row
    s = s.split("j", tile, vec) if vec > 1 else s.split("j", tile)       # j.0 tile, j.1 lane, j.2 vector
    return (s.fuse("i.0", "j.0").bind("i.0.j.0", "blockIdx.x")           # a 1-D grid: any M, N
            .bind("j.1", "threadIdx.x").bind("i.2", "threadIdx.y").unroll("i.1"))


LADDER = {
    "1 naive (strided writes)": tiles(),
    "2 shared-memory tile": tiles().cache_read("x", "shared"),
    "3 padded tile (no bank conflicts)": tiles().cache_read("x", "shared").storage_align("x", 1),
    "4 diagonal block order": tiles().cache_read("x", "shared").storage_align("x", 1)
                                     .annotate("block_order", "diagonal"),
    "5 float4 rows, 4 per thread": tiles(vec=4).cache_read("x", "shared").storage_align("x", 1)
                                          .vectorize("j.2", 4),
}

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    problem = op.problem({"M": 1000, "N": 1001} if backend == "gpu" else {"M": 67, "N": 1001})
    for title, sched in LADDER.items():
        kernel = op.kernel(sched)
        path, _ = write_kernel(kernel, "out/transpose")
        v = validate(op, sched, problem, backend=backend)
        print(f"{title:36s} {v.summary():60s} {path}")
