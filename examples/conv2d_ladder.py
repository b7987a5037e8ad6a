"""The seed notes' convolution ladder, written as schedules.

    python3 examples/conv2d_ladder.py          # emit each step, validate it (GPU, else emulator)

Direct (a thread per output) -> im2col into a workspace + a register-tiled GEMM -> implicit GEMM
(the GEMM gathers its input tiles straight from x) -> double-buffered, 128-bit filter loads and
output stores -> tiles fitted to the problem (24 channels x 12 deep for the seeds' shape; 128x128 for
many channels). `kernelgen bench conv2d --ladder` times them against cuDNN (TF32 off).
"""
import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("conv2d")

direct = (kg.schedule("conv2d").annotate("algo", "direct")
          .fuse("n", "k", "p", "q").split("nkpq", 256).bind("nkpq.0", "blockIdx.x").bind("nkpq.1", "threadIdx.x"))


def gemm(algo, bm=32, bn=256, bk=8, tm=4, tn=8, stages=2, vec=4):
    """y[k, npq] = w[k, crs] @ col[crs, npq] in bm x bn block tiles of tm x tn per thread, bk deep."""
    s = (kg.schedule("conv2d").annotate("algo", algo)
         .fuse("n", "p", "q").fuse("c", "r", "s")                  # the GEMM's columns and its sum
         .split("k", bm, tm).split("npq", bn, tn).split("crs", bk)
         .bind("k.0", "blockIdx.y").bind("npq.0", "blockIdx.x").bind("k.1", "threadIdx.y").bind("npq.1", "threadIdx.x")
         .cache_read("w", "shared").cache_read("x", "shared").storage_align("w", 4))
    if stages > 1:
        s = s.double_buffer("w", stages).double_buffer("x", stages)
    return s.vectorize("w", vec)


LADDER = {
    "1 direct": direct,
    "2 im2col + GEMM": gemm("im2col"),
    "3 implicit GEMM, one stage, scalar": gemm("implicit", stages=1, vec=1),
    "4 implicit GEMM, double-buffered, float4": gemm("implicit"),
    "5 the same, 24x256x12 tiles (K=24, CRS=108)": gemm("implicit", bm=24, bk=12),
    "6 the same, 128x128 tiles (K=128)": gemm("implicit", bm=128, bn=128, tm=8, tn=8).annotate("min_blocks", 2),
}

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    sizes = {} if backend == "gpu" else {d.name: d.small for d in op.dims}
    for title, sched in LADDER.items():
        kernel = op.kernel(sched)
        path, _ = write_kernel(kernel, "out/conv2d")
        v = validate(op, sched, op.problem(sizes), backend=backend)
        print(f"{title:42s} {v.summary():60s} {path}")
