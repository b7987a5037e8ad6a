"""The tensor-core gemm's heuristic: a cost model over tile families and numbers of K slices.

>>> from kernelgen.ops import get_op
>>> from kernelgen.ops.gemm_cost import choose
>>> from kernelgen.target import target
>>> op = get_op("gemm")
>>> best = choose(op, op.problem({"M": 16, "N": 512, "K": 500000}, dtype="float16"), target("sm_90a"))
>>> best.family.startswith("wgmma"), best.split_k >= 16        # 4 column tiles: K in many slices
(True, True)
>>> choose(op, op.problem({"M": 8192, "N": 8192, "K": 8192}, dtype="float16"), target("sm_90a")).family
'wgmma 128x192 coop async'

Each candidate is a tile family (a row of FAMILIES: wgmma where the target has it and the product is
not batched, else mma.sync) with K cut into `split_k` slices (gridDim.z) whose fp32 partial tiles a
second kernel sums (kernelgen/ops/splitk.py). Its time, in seconds, is estimated from the shape and the
Target only (no shape is listed anywhere):

    blocks        = ceil(M / bm) * ceil(N / bn) * slices
    resident r    = blocks an SM holds at once (threads, shared memory, the registers' estimate)
    one SM, r blocks at once, each over kchunk of K:
        compute   = r * 2 * bm * bn * kchunk / (the SM's fp16 peak * family efficiency
                                                 [* UNALIGNED for mma.sync's element-wise twin])
        latency   = (kchunk / bk) tiles * LATENCY_S / tiles in flight (wgmma: its stages; cp.async:
                    stages - 1): a block waits for each tile it did not prefetch
        bandwidth = r * 2 * (min(bm, M) + min(bn, N)) * kchunk / SM_BYTES_PER_S  (rows past M or N:
                    TMA's zeros and the twin's tests bring no bytes)
        wave(r)   = max(compute, latency, bandwidth)
    blocks' time  = full waves * wave(r) + wave(last wave's blocks per SM) + waves * WAVE_START_S
    persistent    = ceil(blocks / min(blocks, SMs)) * max(compute, bandwidth)(r = 1) + WAVE_START_S
                    (one block an SM walks the tiles; its producer fills the next tile's stages during
                    the epilogue, so neither the fill nor the latency recurs per tile)
    DRAM time     = bytes of A, B and C (or the slabs) / (DRAM bandwidth * DRAM_EFFICIENCY)
    main kernel   = max(blocks', DRAM) + OVERLAP * min(blocks', DRAM)
    reduction     = LAUNCH_NEXT_S + 4*M*N*slices * 2 / WORKSPACE_BYTES_PER_S + C's bytes / bandwidth
    padded copies = per operand TMA cannot read (wgmma): LAUNCH_NEXT_S + its bytes * 2 / (bandwidth *
                    PAD_EFFICIENCY)
    estimate      = LAUNCH_S + main kernel + reduction + padded copies

Wave quantisation (a last wave of few blocks costs a full one per block), Little's law for the loads
and a roofline: where M or N is small (16 .. 128 rows against thousands of columns) the few tiles'
blocks each stream a long K at one SM's rate, and slicing K multiplies the SMs streaming it. Every
constant is in COSTS and every family's efficiency in FAMILIES; `bench/gemm_shapes_probe.py` times the
candidates on a GPU beside these estimates, to fit them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..errors import KernelgenError
from ..target import Target, default_target
from . import pitch, splitk
from .base import INT_MAX, Problem, cdiv
from .operands import Operands, chunk_widths
from .sgemm_cost import SPLITS, Family   # the same K slices and family record as the fp32 model

# The model's constants (H100 SXM; first fits to bench_results/2026-11-24-s5/gemm_fp16_suite_1.md:
# 64x128 wgmma blocks stream a K tile in 0.25-0.31 us with 4 stages in flight, 16 x 7680 x 2560 reads
# B at 0.71 of the datasheet bandwidth and cuBLAS at 0.78). Rates are per second.
COSTS = dict(
    LAUNCH_S=2.0e-6,                # the first kernel launch (event timing)
    LAUNCH_NEXT_S=1.5e-6,           # each further kernel of the plan (reduction, padded copy)
    LATENCY_S=1.2e-6,               # a K tile's loads, issue to use, under load (a TMA or cp.async round trip)
    WAVE_START_S=2.0e-6,            # a wave of blocks fills its pipeline and stores its tiles unhidden
                                    # (1.7-3 us a wave over the model at GPT-2's GEMMs); persistent blocks once
    SM_BYTES_PER_S=120e9,           # the most one SM's loads bring in (L2 -> SM)
    DRAM_EFFICIENCY=0.75,           # of the datasheet bandwidth, streaming A and B
    OVERLAP=0.15,                   # the share of the shorter of the blocks' time and the DRAM time not hidden
                                    # under the longer (a roofline's corner is not sharp)
    WORKSPACE_BYTES_PER_S=3.0e12,   # split-K slabs written, then read back (mostly L2)
    PAD_EFFICIENCY=0.5,             # the padded copy's share of the bandwidth (2-byte reads, 16-byte writes)
    UNALIGNED=0.28,                 # mma.sync's element-wise twin against its 16-byte kernel (0.26-0.28 measured)
    UNALIGNED_FP32=0.55,            # the same with fp32 data (tf32, tf32x3, dmma: 4-byte loads, 4 a chunk; fitted
                                    # to dmma at 2047x2049x1023, where it ran 262 us against ~150 for its aligned rate)
    MAX_WORKSPACE_BYTES=1 << 30,    # no more slices than this much workspace allows
)

DEFAULT_PEAK = (989.4e12, 3.35e12)  # fp16 flop/s and bytes/s where the target names no GPU

# Tile families: (name, knobs over the op's default, fraction of an SM's dense fp16 peak the main loop
# reaches when nothing else limits it). wgmma 128x256 is measured (~800 TFLOP/s at 4096^3, 0.81) as is
# mma.sync 128x128 with C staged (~490, 0.49, its pipeline's stages unrolled: bench_results/2026-11-24-s9),
# and the mma.sync tiles beside it (0.78 of the 128x128 tile before that change at 4096^3,
# bench_results/tuning_gemm_f16_h100.jsonl); the other wgmma tiles are guesses for the probe to fit.
_WG = dict(instr="wgmma")  # over the op's wgmma heuristic (Gemm.wgmma_heuristic); each family sets its own bm, bn, wn
FAMILIES = (
    ("wgmma 128x256", dict(_WG, bm=128, bn=256, wn=256), 0.81),
    ("wgmma 128x192", dict(_WG, bm=128, bn=192, wn=192), 0.78),
    ("wgmma 128x128", dict(_WG, bm=128, bn=128, wn=128), 0.70),
    ("wgmma 128x64", dict(_WG, bm=128, bn=64, wn=64), 0.50),
    ("wgmma 64x256", dict(_WG, bm=64, bn=256, wn=256), 0.62),
    ("wgmma 64x128", dict(_WG, bm=64, bn=128, wn=128), 0.55),
    ("wgmma 64x64", dict(_WG, bm=64, bn=64, wn=64), 0.40),
    # Persistent blocks (one an SM walking the tiles; K whole), fitted to bench_results/2026-11-24-s6/
    # gemm_persistent_probe.md (7 shapes): coop 128x192 ran 0.93-1.0x cuBLAS at GPT-2's GEMMs and 8192^3;
    # ping-pong's main loops take turns, and one warpgroup's MMAs alone do not fill the tensor cores.
    ("wgmma 128x256 coop", dict(_WG, bm=128, bn=256, wn=256, persistent="coop"), 0.83),
    ("wgmma 128x256 coop 3 stages", dict(_WG, bm=128, bn=256, wn=256, stages=3, persistent="coop"), 0.80),
    ("wgmma 128x192 coop", dict(_WG, bm=128, bn=192, wn=192, persistent="coop"), 0.82),
    # C stored by the producer's spare warps while the consumers go on: 128x192 is the tile whose whole staged
    # 16-bit C fits beside 4 stages (0.93-1.06x cuBLAS at GPT-2's GEMMs, 1.02x at 8192^3: gemm_async4_probe.md;
    # in 3 stages no faster than coop in 3, gemm_async_probe.md). A fused epilogue's fp32 tile does not fit.
    ("wgmma 128x192 coop async", dict(_WG, bm=128, bn=192, wn=192, epilogue="async", persistent="coop"), 0.83),
    ("wgmma 128x128 pingpong", dict(_WG, bm=128, wm=128, bn=128, wn=128, persistent="pingpong"), 0.72),
    ("wgmma 64x256 pingpong", dict(_WG, bm=64, wm=64, bn=256, wn=256, stages=3, persistent="pingpong"), 0.55),
    ("mma 128x128", dict(epilogue="smem"), 0.49),
    # 3 stages keep two blocks an SM where 4 would not (tf32 data's 4-byte tiles: 805 against 978 us at 4096^3)
    ("mma 128x128 3 stages", dict(stages=3, epilogue="smem"), 0.49),
    ("mma 128x64", dict(bm=128, bn=64, wm=64, wn=32), 0.34),
    ("mma 64x128", dict(bm=64, bn=128, wm=32, wn=64), 0.34),
    ("mma 64x64", dict(bm=64, bn=64, wm=32, wn=32), 0.32),
)
# fp32 data on the fp64 tensor cores (dtype dmma): the fraction of the GPU's DMMA peak each family's main loop
# reaches. A DMMA is 512 products an issue slot where an fp16 HMMA is 4096, so the mma.sync tiles that leave the fp16
# tensor cores idle (0.34 above) keep the fp64 ones busy. Fitted to bench_results/2026-11-29-s22 (H200, 13 shapes,
# calls 2-4): 128x64 blocks of 64x32 warp tiles (two blocks an SM) 57-59.6 TFLOP/s of 66.9 at the 7B layer's GEMMs,
# 4096^3 and GPT-2's; 64x64 (three an SM) 53-58.8, ahead where its smaller tiles fill the last wave (3000^3 56.4 against
# 52.6, GPT-2's 8192 x 2304 x 768 58.8 against 57.0), behind at 2048 x 4096 x 16384 (53.0 against 58.3). Families whose
# 64x64 warp tiles need 256 fp64 accumulator registers are refused by the register check.
FP64_EFFICIENCY = {"mma 128x64": 0.88, "mma 64x128": 0.85, "mma 64x64": 0.85}


@dataclass(frozen=True)
class Choice:
    family: str
    split_k: int
    seconds: float
    knobs: tuple


@functools.lru_cache(maxsize=64)
def families(op, target: Target, layout: str = "NN", batched: bool = False, dtype_name: str = "float16") -> tuple[Family, ...]:
    """The families legal on `target` for `dtype_name` inputs (wgmma only for one product, TMA's descriptors
    being 2-D; mma.sync alone for tf32 data), checked as op.kernel checks a schedule (nothing compiled), with
    the blocks an SM holds (tf32x3's 64x64 warp tiles need more registers than a thread has: refused)."""
    types, out = op.types(dtype_name), []
    fp64 = types.input.math == "fp64"
    for name, over, eff in FAMILIES:
        k = dict(op.wgmma_heuristic if over.get("instr") == "wgmma" else op.default_knobs(), **over)
        if (k["instr"] == "wgmma" and batched) or (fp64 and name not in FP64_EFFICIENCY):
            continue
        eff = FP64_EFFICIENCY[name] if fp64 else eff
        try:
            kernel = op.kernel(op.schedule_from_knobs(**k), target, types, layout)
        except KernelgenError:
            continue
        resident = target.resident(op.threads(k), kernel.static_smem, kernel.registers_estimate)
        in_flight = k["stages"] if k["instr"] == "wgmma" else k["stages"] - 1
        out.append(Family(name, k, eff, resident, in_flight, k["bk"]))
    return tuple(out)


def estimate(fam: Family, split_k: int, problem: Problem, target: Target) -> float:
    """Seconds for `fam` with K in `split_k` slices (see the module doc)."""
    c, k = COSTS, fam.knobs
    M, N, K = problem["M"], problem["N"], problem["K"]
    bm, bn, bk = k["bm"], k["bn"], k["bk"]
    d = problem.dtype("A")
    flops, bw = (target.peaks.fp16, target.peaks.bytes_per_s) if target.peaks else DEFAULT_PEAK
    if d.math == "tf32":     # TF32's rate (half fp16's where the target names none); tf32x3 three mma a product
        flops = (target.peaks.tf32 if target.peaks else flops / 2) / (3 if d.name == "tf32x3" else 1)
    elif d.math == "fp64":   # the fp64 tensor cores' rate (the H100's where the target names no GPU)
        flops = target.peaks.fp64 if target.peaks else 66.9e12
    isz = d.itemsize
    lay = Operands(problem.layout or "NN")
    aligned = lay.holds(chunk_widths(isz), problem)
    wgmma = k["instr"] == "wgmma"
    kc = splitk.kchunk(K, split_k, bk)
    sl = splitk.slices(K, split_k, bk)
    batch = problem.batch.count if problem.batch is not None else 1
    blocks = cdiv(M, bm) * cdiv(N, bn) * sl * batch
    twin = c["UNALIGNED_FP32"] if isz == 4 else c["UNALIGNED"]
    sm_flops = flops / target.sms * fam.efficiency * (1.0 if aligned or wgmma else twin)

    def streaming(r: int) -> float:   # r blocks' math or their loads, whichever is slower
        return max(r * 2.0 * bm * bn * kc / sm_flops, r * isz * (min(bm, M) + min(bn, N)) * kc / c["SM_BYTES_PER_S"])

    def wave(r: int) -> float:
        return max(streaming(r), cdiv(kc, bk) * c["LATENCY_S"] / fam.in_flight)

    if k["persistent"] != "off":   # the busiest SM's tiles back to back: the pipeline fills once
        main = cdiv(blocks, min(blocks, target.sms)) * streaming(1) + c["WAVE_START_S"]
    else:
        full, rest = divmod(blocks, target.sms * fam.resident)
        main = full * wave(fam.resident) + (wave(cdiv(rest, target.sms)) if rest else 0.0)
        main += (full + (rest > 0)) * c["WAVE_START_S"]
    out = problem.dtype("C").itemsize
    c_bytes = 4.0 * M * N * sl if sl > 1 else out * M * N
    dram = (isz * (M * K + K * N) + c_bytes) * batch / (bw * c["DRAM_EFFICIENCY"])
    main = max(main, dram) + c["OVERLAP"] * min(main, dram)
    total = c["LAUNCH_S"] + main
    if sl > 1:
        total += c["LAUNCH_NEXT_S"] + 8.0 * M * N * sl / c["WORKSPACE_BYTES_PER_S"] + out * M * N / bw
    if wgmma:
        stored = lay.stored(problem)
        for b in pitch.staged(lay, problem):
            total += c["LAUNCH_NEXT_S"] + 2.0 * 2 * stored[b][0] * stored[b][1] / (bw * c["PAD_EFFICIENCY"])
    return total


def legal_here(op, fam: Family, split_k: int, problem: Problem, target: Target) -> bool:
    """What the plan checks for these sizes (grid rows, the blocks' int number), no empty slices, one
    product (a batch takes blockIdx.z), and a workspace within MAX_WORKSPACE_BYTES; a persistent block's
    staging areas in C's type fit beside its stages, and it takes K whole."""
    k = fam.knobs
    M, N, K = problem["M"], problem["N"], problem["K"]
    rows = cdiv(M, k["bm"])
    if rows > 65535 or rows * cdiv(N, k["bn"]) > INT_MAX:
        return False
    if k["persistent"] != "off" and op.shared_bytes(k, problem.layout or "NN",
                                                    problem.dtype("C").itemsize) > target.max_smem:
        return False
    if split_k == 1:
        return True
    if k["persistent"] != "off":
        return False
    return (problem.batch is None and splitk.slices(K, split_k, k["bk"]) == split_k
            and 4 * split_k * splitk.slab(M, N) <= COSTS["MAX_WORKSPACE_BYTES"])


def candidates(op, problem: Problem, target: Target | None = None) -> list[Choice]:
    """Every legal candidate for `problem`, cheapest first (ties: fewer slices, then the more efficient
    family)."""
    target = target or default_target()
    fams = families(op, target, problem.layout or "NN", problem.batch is not None, problem.dtype("A").name)
    out = []
    for fam in fams:
        for s in SPLITS:
            if legal_here(op, fam, s, problem, target):
                knobs = dict(fam.knobs, split_k=s)
                out.append(Choice(fam.name, s, estimate(fam, s, problem, target), tuple(knobs.items())))
    eff = {f.name: f.efficiency for f in fams}
    return sorted(out, key=lambda ch: (ch.seconds, ch.split_k, -eff[ch.family]))


def fp32_on_dmma(M: int, N: int, K: int, layout: str = "NN", target: Target | None = None) -> bool:
    """Whether an fp32 product runs faster on the fp64 tensor cores (the gemm op's dmma, at least as accurate: exact
    products summed in fp64) than on the CUDA cores (sgemm), by the two ops' cost models on `target`: where the GPU's
    DMMA rate matches its FFMA rate (H100, H200, A100) and the product has the tiles to fill it; not on GPUs whose
    fp64 runs at a fraction of fp32 (the cost model sees their peak), nor for thin products sgemm's dot and
    sliced tiles take."""
    from . import get_op, sgemm_cost
    target = target or default_target()
    if not target.has("mma_f64"):
        return False
    sizes = {"M": M, "N": N, "K": K}
    gemm, sgemm = get_op("gemm"), get_op("sgemm")
    try:
        on_dmma = choose(gemm, gemm.problem(sizes, dtype="dmma", layout=layout), target).seconds
        on_ffma = sgemm_cost.choose(sgemm, sgemm.problem(sizes, dtype="float32", layout=layout), target).seconds
    except KernelgenError:
        return False
    return on_dmma < on_ffma


def choose(op, problem: Problem, target: Target | None = None) -> Choice:
    """The cheapest candidate (the default schedule, K whole, when nothing else is legal)."""
    found = candidates(op, problem, target)
    if found:
        return found[0]
    return Choice("mma 128x128", 1, float("inf"), tuple(op.default_knobs().items()))
