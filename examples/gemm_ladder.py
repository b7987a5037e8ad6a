"""The tensor-core GEMM ladder (WMMA -> mma.sync with ldmatrix -> XOR-swizzled shared memory -> cp.async
pipeline -> 4 stages with C staged through shared memory -> on sm_90: the same mma.sync fed by TMA, an
mbarrier a stage -> on sm_90a: wgmma fed by TMA -> warp specialisation -> C staged through shared memory ->
clusters sharing B by TMA multicast -> persistent blocks -> ping-pong consumers), written as schedules.

    python3 examples/gemm_ladder.py                 # emit each step, validate it (GPU, else emulator)
    python3 examples/gemm_ladder.py bfloat16        # the same with bf16 inputs

Each step is the previous schedule with a few primitives changed; `kernelgen bench gemm --dtype float16
--ladder` times the same steps against cuBLAS on a GPU, and `kernelgen inspect gemm --ladder --dtype
float16` shows the registers and 128-bit loads each step compiles to.
"""
import sys

import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.target import target
from kernelgen.validate import validate

op = kg.get_op("gemm")


def tiles(bm, bn, bk, wm, wn, intrinsic):
    """A block of bm x bn, warps of wm x wn, K through shared memory bk at a time, computed by `intrinsic`."""
    return (kg.schedule("gemm").split("i", bm, wm).bind("i.0", "blockIdx.y").bind("i.1", "warp")
            .split("j", bn, wn).bind("j.0", "blockIdx.x").bind("j.1", "warp")
            .split("k", bk).tensorize("k.1", intrinsic))


def padded(s, pad=8):
    return s.storage_align("A", pad).storage_align("B", pad)


def pipelined(s, stages):
    """An n-stage cp.async pipeline: tiles kt+1 .. kt+n-1 in flight while tile kt is used."""
    return s.double_buffer("A", stages).double_buffer("B", stages).annotate("copy", "cp_async")


def hopper(s, stages=4):
    """wgmma on sm_90a: each warpgroup's rows by the block's whole width, tiles by TMA in a pipeline."""
    return s.double_buffer("A", stages).double_buffer("B", stages).annotate("copy", "tma") \
            .annotate("shared_layout", "xor").swizzle(8)


MMA = tiles(128, 128, 32, 64, 64, "mma.m16n8k16")
WGMMA = (kg.schedule("gemm").split("i", 128, 64).bind("i.0", "blockIdx.y").bind("i.1", "warpgroup")
         .split("j", 256, 256).bind("j.0", "blockIdx.x").bind("j.1", "warpgroup")
         .split("k", 64).tensorize("k.1", "wgmma.m64nNk16"))
PINGPONG = (kg.schedule("gemm").split("i", 128, 128).bind("i.0", "blockIdx.y").bind("i.1", "warpgroup")
            .split("j", 128, 128).bind("j.0", "blockIdx.x").bind("j.1", "warpgroup")
            .split("k", 64).tensorize("k.1", "wgmma.m64nNk16"))
LADDER = {
    "1 WMMA 16x16x16, padded shared tiles": padded(tiles(64, 64, 32, 32, 32, "wmma.m16n16k16").annotate("copy", "sync")),
    "2 mma.sync m16n8k16 + ldmatrix": padded(MMA.annotate("copy", "sync")).annotate("ldmatrix", 1),
    "3 XOR-swizzled shared memory": MMA.annotate("copy", "sync").annotate("shared_layout", "xor").annotate("ldmatrix", 1),
    "4 3-stage cp.async pipeline": pipelined(MMA, 3).annotate("shared_layout", "xor").annotate("ldmatrix", 1),
    "5 4 stages, C staged through shared memory": pipelined(MMA, 4).annotate("shared_layout", "xor")
                                                   .annotate("ldmatrix", 1).cache_write("C", "shared"),
    "6 TMA feeding mma.sync, 256x128 blocks of 8 warps (sm_90)": tiles(256, 128, 64, 64, 64, "mma.m16n8k16")
                                                                  .double_buffer("A", 3).double_buffer("B", 3)
                                                                  .annotate("copy", "tma").annotate("shared_layout", "xor")
                                                                  .annotate("ldmatrix", 1).cache_write("C", "shared"),
    "7 wgmma + TMA (sm_90a)": hopper(WGMMA),
    "8 warp-specialised (sm_90a)": hopper(WGMMA).annotate("warp_specialize", 1),
    "9 C staged through shared memory (sm_90a)": hopper(WGMMA).annotate("warp_specialize", 1).cache_write("C", "shared"),
    "10 clusters of 2, B multicast (sm_90a)": hopper(WGMMA).annotate("warp_specialize", 1).cache_write("C", "shared")
                                              .annotate("cluster", 2),
    "11 persistent blocks (sm_90a)": hopper(WGMMA, 3).annotate("warp_specialize", 1).cache_write("C", "shared")
                                     .annotate("persistent", "coop"),
    "12 ping-pong consumers, 128x128 a warpgroup (sm_90a)": hopper(PINGPONG).annotate("warp_specialize", 1)
                                                             .cache_write("C", "shared").annotate("persistent", "pingpong"),
}

if __name__ == "__main__":
    dtype = sys.argv[1] if len(sys.argv) > 1 else "float16"
    backend = "gpu" if gpu.available() else "emulate"
    problem = op.problem(small=backend == "emulate", dtype=dtype)
    for (title, sched), step in zip(LADDER.items(), op.ladder()):
        # The same kernel as the op's ladder step (written there in canonical order).
        assert op.knobs_from_schedule(sched) == op.knobs_from_schedule(step.schedule), title
        if step.arch and not (backend == "gpu" and gpu.device().arch.startswith(step.arch)):   # sm_90a runs sm_90
            kernel = op.kernel(sched, target(step.arch), types=problem.types)
            path, _ = write_kernel(kernel, "out/gemm")
            print(f"{title:40s} {'emitted only: runs on ' + step.arch + ' (this machine has none)':60s} {path}")
            continue
        kernel = op.kernel(sched, target(step.arch) if step.arch else None, types=problem.types)
        path, _ = write_kernel(kernel, "out/gemm")
        if step.arch:   # TMA needs 16-byte rows: the aligned neighbour of the small size
            problem = op.problem(op.test_problems_for(sched)[-2], dtype=dtype)
        v = validate(op, sched, problem, backend=backend)
        print(f"{title:40s} {v.summary()[:60]:60s} {path}")
