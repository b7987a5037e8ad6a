"""The seed notes' reduction ladder, written as schedules.

    python3 examples/reduce_ladder.py            # emit each step, validate it (GPU, else emulator)

Each step is the previous schedule with one primitive changed; `kernelgen bench reduce_sum --ladder`
times the same steps against torch.sum on a GPU.
"""
import runpy
from pathlib import Path

import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("reduce_sum")


def block_tree(strategy, items=1, threads=256):
    """One block per chunk of items*threads floats; `strategy` is the block-level tree."""
    return (kg.schedule("reduce_sum")
            .split("i", items * threads, threads, 1)         # i.0 chunk, i.1 item, i.2 thread, i.3 lane
            .bind("i.0", "blockIdx.x").bind("i.2", "threadIdx.x")
            .unroll("i.1").vectorize("i.3", 1)
            .reduction("i", strategy))


LADDER = {
    "1 interleaved addressing (divergent)": block_tree("divergent"),
    "2 strided index": block_tree("strided"),
    "3 sequential addressing": block_tree("sequential"),
    "4 first add during load": block_tree("sequential", items=2),
    "5 unroll the last warp": block_tree("last_warp", items=2),
    "6 complete unrolling": block_tree("unrolled", items=2),
    "7 grid-stride, float4, warp shuffle": (
        kg.schedule("reduce_sum").split("i", 4 * 512 * 4, 512 * 4, 4)
        .bind("i.0", "blockIdx.x").bind("i.2", "threadIdx.x").unroll("i.1").vectorize("i.3", 4)
        .reduction("i", "shuffle").annotate("grid_stride", 4)),
}
LADDER["8 finished by atomics"] = LADDER["7 grid-stride, float4, warp shuffle"].annotate("finish", "atomic")
# 9-13: software prefetching at one block per SM, from examples/prefetch_ladder.py
_PREFETCH = runpy.run_path(str(Path(__file__).with_name("prefetch_ladder.py")))["LADDER"]
LADDER.update({f"{i} {title.split(' ', 1)[1]}": sched for i, (title, sched) in enumerate(_PREFETCH.items(), 9)})

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    problem = op.problem({"n": 1000003})
    for title, sched in LADDER.items():
        kernel = op.kernel(sched)
        path, _ = write_kernel(kernel, "out/reduce_sum")
        v = validate(op, sched, problem, backend=backend)
        print(f"{title:40s} {v.summary():60s} {path}")
