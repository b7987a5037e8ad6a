"""The seed notes' staged shared-memory load (a 1024 x 32 tile, transposed into shared memory):
storage alignment -> loop fusion -> vectorisation -> thread binding, each step one primitive more.

    python3 examples/staged_load_ladder.py       # emit each step, validate it (GPU, else emulator)

Every block stages one tile of x[n][32] as smem[32][1024 + pad] and writes it back row by row, so
the output out[32][n] = x^T shows that every staged word landed where it should.
"""
import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("staged_load")

tile = kg.schedule("staged_load").split("j", 1024).bind("j.0", "blockIdx.x").cache_read("x", "shared")
LADDER = {
    "0 unoptimised (one thread)": tile,
    "1 storage alignment": tile.storage_align("x", 1),
    "2 loop fusion": tile.storage_align("x", 1).fuse("i", "j.1"),
    "3 vectorisation (float4)": tile.storage_align("x", 1).fuse("i", "j.1").split("ij", 4, 4).vectorize("ij.2", 4),
    "4 thread binding (256)": tile.storage_align("x", 1).fuse("i", "j.1").split("ij", 256 * 4, 4)
                                  .vectorize("ij.2", 4).bind("ij.1", "threadIdx.x"),
}

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    problem = op.problem({"n": 2500})             # two whole tiles and a short one
    for title, sched in LADDER.items():
        kernel = op.kernel(sched)
        path, _ = write_kernel(kernel, "out/staged_load")
        v = validate(op, sched, problem, backend=backend)
        print(f"{title:30s} {v.summary():60s} {path}")
