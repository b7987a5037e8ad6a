"""The seed notes' softmax ladder (three passes -> shared-memory trees -> warp shuffles), the online
softmax they left undone, and the register-row and split kernels, written as schedules.

    python3 examples/softmax_ladder.py           # emit each step, validate it (GPU, else emulator)

`kernelgen bench softmax --ladder` times the same steps against torch.softmax; SHAPES below are the
schedules meant for each benchmark shape (`kernelgen tune softmax --size rows=...,cols=...` searches
around them).
"""
import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("softmax")


def rows(threads, rows_per_block=1, items=1, vec=1, reduction="shuffle"):
    """`threads` threads per row, `rows_per_block` rows per block, `items` vectors of `vec` floats in flight."""
    return (kg.schedule("softmax")
            .split("i", rows_per_block).bind("i.0", "blockIdx.x").bind("i.1", "threadIdx.y")
            .split("j", items * threads * vec, threads * vec, vec).bind("j.2", "threadIdx.x")
            .unroll("j.1").vectorize("j.3", vec).reduction("j", reduction))


LADDER = {
    "1 a thread per row, three passes": rows(1, 128, reduction="serial").annotate("softmax", "three_pass"),
    "2 a block per row, shared-memory trees": rows(256, reduction="shared").annotate("softmax", "three_pass"),
    "3 warp shuffles": rows(256).annotate("softmax", "three_pass"),
    "4 online softmax (one stats pass)": rows(256).annotate("softmax", "online"),
    "5 online, float4, 4 loads in flight": rows(256, items=4, vec=4).annotate("softmax", "online"),
    "6 the row in registers (read once)": rows(256, items=4, vec=4).cache_read("x", "register"),
    "7 several blocks per row, two launches": rows(128, items=4, vec=4).bind("j.0", "blockIdx.y"),
}

# One schedule per benchmark shape: the row held in registers, as few threads per row as keep
# the registers under ~50, so that a block (or a warp) owns whole rows and nothing is read twice.
SHAPES = {
    (4096, 4096): rows(256, items=4, vec=4).cache_read("x", "register"),        # 16 floats/thread
    (32768, 1024): rows(32, 4, items=8, vec=4).cache_read("x", "register"),     # a warp per row
    (8192, 128): rows(8, 32, items=4, vec=4).cache_read("x", "register"),       # 8 threads per row
    (1024, 32768): rows(1024, items=8, vec=4).cache_read("x", "register"),      # 32 floats/thread
}

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    problem = op.problem(small=backend == "emulate")
    for (title, sched), step in zip(LADDER.items(), op.ladder()):
        assert op.knobs_from_schedule(sched) == op.knobs_from_schedule(step.schedule), title
        path, _ = write_kernel(op.kernel(sched), "out/softmax")
        v = validate(op, sched, problem, backend=backend)
        print(f"{title:42s} {v.summary():58s} {step.note:26s} {path}")
    for (r, c), sched in SHAPES.items():
        p = op.problem({"rows": r, "cols": c}) if backend == "gpu" else op.problem({"rows": 5, "cols": c})
        v = validate(op, sched, p, backend=backend)
        print(f"{f'rows={r},cols={c}':42s} {v.summary():58s} {op.kernel(sched).name}")
