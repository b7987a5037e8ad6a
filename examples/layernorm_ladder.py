"""The layer-norm ladder: a block per row with two-pass statistics in global memory -> a warp per
row with shuffles -> Welford statistics in one pass -> the row in registers with float4.

    python3 examples/layernorm_ladder.py         # emit each step, validate it (GPU, else emulator)

`kernelgen bench layernorm --ladder` times the same steps against torch's layer_norm.
"""
import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("layernorm")


def rows(threads, rows_per_block=1, items=1, vec=1, reduction="shuffle"):
    """`threads` threads per row, `rows_per_block` rows per block, `items` vectors of `vec` floats in flight."""
    return (kg.schedule("layernorm")
            .split("i", rows_per_block).bind("i.0", "blockIdx.x").bind("i.1", "threadIdx.y")
            .split("j", items * threads * vec, threads * vec, vec).bind("j.2", "threadIdx.x")
            .unroll("j.1").vectorize("j.3", vec).reduction("j", reduction))


LADDER = {
    "1 a block per row, two-pass, smem trees": rows(256, reduction="shared").annotate("layernorm", "two_pass"),
    "2 a warp per row, shuffles": rows(32, 4).annotate("layernorm", "two_pass"),
    "3 Welford in one pass, float4": rows(32, 4, items=4, vec=4).annotate("layernorm", "welford"),
    "4 the row in registers, float4": rows(256, items=4, vec=4).cache_read("x", "register"),
}

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    problem = op.problem(small=backend == "emulate")
    for (title, sched), step in zip(LADDER.items(), op.ladder()):
        assert op.knobs_from_schedule(sched) == op.knobs_from_schedule(step.schedule), title
        path, _ = write_kernel(op.kernel(sched), "out/layernorm")
        v = validate(op, sched, problem, backend=backend)
        print(f"{title:42s} {v.summary():58s} {path}")
