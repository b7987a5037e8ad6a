"""The seed notes' SGEMM ladder (naive 5.2 ms -> double buffering 0.62 ms), written as schedules.

    python3 examples/sgemm_ladder.py             # emit each step, validate it (GPU, else emulator)

Each step is the previous schedule with a few primitives changed; `kernelgen bench sgemm --ladder`
times the same steps against cuBLAS (TF32 off) on a GPU, and `kernelgen inspect sgemm --ladder`
shows registers and the 128-bit loads each step compiles to.
"""
import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("sgemm")


def threads(i: tuple, j: tuple, bind_i: dict, bind_j: dict):
    """split(i, *i) and split(j, *j); bind the block loops and the loops named in bind_i/bind_j."""
    s = kg.schedule("sgemm").split("i", *i).bind("i.0", "blockIdx.y")
    for loop, axis in bind_i.items():
        s = s.bind(loop, axis)
    s = s.split("j", *j).bind("j.0", "blockIdx.x")
    for loop, axis in bind_j.items():
        s = s.bind(loop, axis)
    return s


def adjacent(bm, bn, tm=1, tn=1):
    """Thread (y, x) owns tm x tn adjacent elements of C: split(i, bm, tm), i.1 bound to threadIdx.y."""
    return threads((bm, tm) if tm > 1 else (bm,), (bn, tn) if tn > 1 else (bn,),
                   {"i.1": "threadIdx.y"}, {"j.1": "threadIdx.x"})


def staged(s, bk):
    """Tiles of A and B in shared memory, K in steps of bk."""
    return s.split("k", bk).cache_read("A", "shared").cache_read("B", "shared")


def float4(s):
    """128-bit global loads and stores; A transposed in shared memory so fragments load 16 bytes."""
    return s.annotate("A.shared", "km").vectorize("A", 4).vectorize("B", 4).vectorize("C", 4)


STRIDED = threads((128, 64, 4), (128, 64, 4), {"i.2": "threadIdx.y"}, {"j.2": "threadIdx.x"})
WARPS = threads((128, 64, 32, 4), (128, 32, 16, 4), {"i.1": "warp", "i.3": "lane"}, {"j.1": "warp", "j.3": "lane"})

LADDER = {
    "1 naive": adjacent(16, 16),
    "2 shared-memory tiles": staged(adjacent(32, 32), 32),
    "3 1-D block tiling (8 rows a thread)": staged(adjacent(64, 64, 8), 8),
    "4 2-D block tiling (8x8 a thread)": staged(adjacent(128, 128, 8, 8), 8),
    "5 float4 loads, A transposed": float4(staged(adjacent(128, 128, 8, 8), 8)),
    "6 strided runs, padded A: no conflicts": float4(staged(STRIDED, 8)).storage_align("A", 4),
    # min_blocks 2: registers capped at 128 so two blocks share an SM (left alone, ~150 and one block)
    "7 warp tiles": float4(staged(WARPS, 8)).storage_align("A", 4).annotate("min_blocks", 2),
    "8 double buffering": float4(staged(WARPS, 8)).storage_align("A", 4).annotate("min_blocks", 2)
                          .double_buffer("A", 2).double_buffer("B", 2),
    "9 tuned (the default schedule)": op.default_schedule(),
}

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    problem = op.problem(small=backend == "emulate")
    for (title, sched), step in zip(LADDER.items(), op.ladder()):
        # The same kernel as the op's ladder step (written there in canonical order).
        assert op.knobs_from_schedule(sched) == op.knobs_from_schedule(step.schedule), title
        kernel = op.kernel(sched)
        path, _ = write_kernel(kernel, "out/sgemm")
        v = validate(op, sched, problem, backend=backend)
        print(f"{title:42s} {v.summary():55s} {step.note:45s} {path}")
