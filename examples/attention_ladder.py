"""The attention ladder, written as schedules: the unfused three kernels (S = Q Kᵀ, softmax, O = P V,
as torch's math path runs them) -> one fused FlashAttention kernel in float32 (online softmax over
K/V tiles in shared memory) -> K/V tiles double-buffered with cp.async -> float16 / bfloat16 on
tensor cores (FlashAttention-2: mma.sync, Q's fragments in registers, P from S's registers) ->
FlashAttention-2's tiles (128 queries, 32 rows a warp, O stored through shared memory; K and V in one
cp.async group a tile, which measured faster here than FlashAttention-2's groups of their own) ->
fp32 data on the same tensor cores in 3xTF32 (dtype tf32x3: each value split into TF32 parts, three
m16n8k8 products, as torch's own fp32 SDPA kernel multiplies) -> the Hopper form (FlashAttention-3's: wgmma for both products, Q, K and V by TMA from a producer
warpgroup, three consumer warpgroups of 64 rows taking turns at the tensor cores; sm_90a, GPU only).

    python3 examples/attention_ladder.py        # emit each step, validate it (GPU, else emulator)

`kernelgen bench attention --ladder --size batch=8,heads=16,seq=2048,head_dim=64` times the fp32
steps against torch's SDPA math backend (`--dtype bf16`: the tensor-core step against SDPA's flash
kernel); bench/attention_probe.py adds the causal and d128 shapes and torch's other backends.
"""
import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate

op = kg.get_op("attention")


def fused(bq=64, rq=8, bk=64, rk=4, dmax=64):
    """A block of bq queries (rq rows a thread), K/V tiles of bk keys (rk a thread), tiles dmax wide; the
    grid is (pairs, query blocks), so every pair's longest causal block starts before any pair's next one."""
    return (kg.schedule("attention").fuse("b", "h").bind("bh", "blockIdx.x")
            .split("i", bq, rq).bind("i.0", "blockIdx.y").bind("i.1", "threadIdx.y")
            .split("j", bk, rk).bind("j.1", "threadIdx.x").split("d", dmax))


def tensor_cores(bq=64, wq=16, bk=64, dmax=64):
    """A block of bq queries, a warp per wq of them, K/V tiles of bk keys, S and P V by mma.sync."""
    return (kg.schedule("attention").fuse("b", "h").bind("bh", "blockIdx.y")
            .split("i", bq, wq).bind("i.0", "blockIdx.x").bind("i.1", "warp")
            .split("j", bk).split("d", dmax).tensorize("j.1", "mma.m16n8k16"))


def hopper(bq=192, bk=128, dmax=64):
    """bq/64 consumer warpgroups of 64 query rows, K/V tiles of bk keys brought by TMA, wgmma for S and P V."""
    return (kg.schedule("attention").fuse("b", "h").bind("bh", "blockIdx.y")
            .split("i", bq, 64).bind("i.0", "blockIdx.x").bind("i.1", "warpgroup")
            .split("j", bk).split("d", dmax).tensorize("j.1", "wgmma.m64nNk16"))


def pipelined(s, stages, copy):
    return s.double_buffer("K", stages).double_buffer("V", stages).annotate("copy", copy)


LADDER = {
    "0 unfused: three kernels, S in a workspace": kg.schedule("attention").fuse("b", "h").bind("bh", "blockIdx.z")
    .annotate("algo", "unfused"),
    "1 fused, online softmax (FlashAttention, fp32)": pipelined(fused(), 1, "sync").annotate("algo", "flash"),
    "2 K/V double-buffered with cp.async": pipelined(fused(), 2, "cp_async").annotate("algo", "flash"),
    "3 fp16/bf16 on tensor cores (FlashAttention-2)": pipelined(tensor_cores(), 2, "cp_async")
    .annotate("algo", "flash_mma"),
    "4 128 queries, 32 rows a warp, O staged": pipelined(tensor_cores(bq=128, wq=32), 2, "cp_async")
    .annotate("algo", "flash_mma").cache_write("O", "shared"),
    "5 fp32 data in 3xTF32 on the same tensor cores": pipelined(tensor_cores(bk=32), 2, "cp_async")
    .annotate("algo", "flash_mma").cache_read("Q", "shared"),
    "6 Hopper: wgmma, TMA, warpgroups taking turns": hopper().double_buffer("K", 2).double_buffer("V", 2)
    .annotate("algo", "flash_wgmma").annotate("pingpong", True).annotate("block_order", "queries")
    .annotate("persistent", True),
}

if __name__ == "__main__":
    backend = "gpu" if gpu.available() else "emulate"
    here = gpu.device() if backend == "gpu" else None
    for (title, sched), step in zip(LADDER.items(), op.ladder()):
        assert op.knobs_from_schedule(sched) == op.knobs_from_schedule(step.schedule), title
        if step.arch and not (here and here.arch == step.arch):     # the Hopper step: an sm_90a GPU only
            print(f"{title:48s} skipped: needs an {step.arch} GPU (the emulator runs no wgmma or TMA)")
            continue
        dt = step.dtypes[0]     # the 16-bit tensor-core steps run in float16 (and bfloat16), the others in float32 or tf32x3
        problems = [op.problem({"batch": 8, "heads": 16, "seq": 2048, "head_dim": 64, "causal": c}, dtype=dt)
                    for c in (0, 1)] if backend == "gpu" else [op.problem(small=True, dtype=dt)]
        path, _ = write_kernel(op.kernel(sched, here, problems[0].types), "out/attention")
        for p in problems:
            v = validate(op, sched, p, backend=backend)
            print(f"{title:48s} {str(p):48s} {v.summary()}")
        print(f"{'':48s} {path}")
