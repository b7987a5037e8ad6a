"""conv2d's `schedule_for`: a small cost model over a few tile families, with wave quantisation.

>>> from kernelgen.ops import get_op
>>> from kernelgen.target import target
>>> op = get_op("conv2d")
>>> k = op.knobs_from_schedule(op.schedule_for(op.problem(dict(N=1, C=512, H=7, W=7, K=512, pad=1)), target("sm_90")))
>>> k["split_k"] > 1        # 49 pixels, 512 channels: too few blocks for 132 SMs unless c*r*s is sliced
True

The implicit GEMM computes y[K, N*P*Q] = w[K, C*R*S] @ col[C*R*S, N*P*Q] in blocks of bm x bn
outputs, each stepping through its slice of C*R*S (split_k slices) bk at a time. One step of the
blocks resident on an SM costs the largest of four budgets, in cycles:

- issue: the warps' instructions (FFMA, 16-byte shared loads, the gather's index arithmetic,
  loads and stores of the next tile), four warps issue one each per cycle;
- shared: shared-memory wavefronts, 128 bytes a cycle: a warp's 16-byte fragment load costs one
  per 8 distinct addresses (lanes on one address share it), each scalar store one;
- L2: the step's filter and input tiles, from L2 at `l2_bytes` a cycle per SM (the input tile
  partly from L1 where neighbouring filter taps read the same pixels);
- latency: one global load's round trip, which double buffering hides only behind a step's work.

A wave is every SM holding its resident blocks (by threads, registers and shared memory); the
last, partial wave holds fewer blocks per SM and each of its steps is cheaper. Time = the waves'
steps plus a fill (first loads, epilogue) per wave, never less than the bytes at DRAM speed, plus
split_k's price: a launch zeroing y and the atomics adding each slice into it.

The constants are H100 figures (`COST`, one table); bench/conv2d_probe.py measures candidates
beside this model's estimates so they can be calibrated. The candidate tiles are families of the
op's space, and the rule is general: no shape is looked up.
"""
from __future__ import annotations

import functools
import math

from ..errors import ScheduleError
from ..target import Target, default_target
from .base import cdiv

# The cost model's constants, for an H100 SXM (calibrate with bench/conv2d_probe.py).
COST = dict(
    clock=1.98e9,           # Hz: 66.9 TFLOP/s fp32 = 132 SMs x 128 FFMA lanes x 2 flops x clock
    issue=0.85,             # share of issue slots the warps fill (dependent shared loads, barriers)
    row=20,                 # instructions per input-tile row a thread gathers (two divisions, the tap's offsets)
    pixel=18,               # instructions per gathered element (bounds tests, address, load, select, stall)
    a_load=6,               # instructions per 16-byte filter load (address, bounds, load)
    step=12,                # instructions per step besides (barrier, loop, buffer swap)
    l2_bytes=12.0,          # bytes per cycle per SM from L2 for the gathered tiles
    l1_reuse=0.5,           # share of the input tile L1 serves when filter taps overlap (R*S > 1, stride < R)
    latency=1600,           # cycles of a global load that a step must cover
    fill=5000,              # cycles per wave outside the steps: the first tile's loads, the epilogue
    dram=3.0e12,            # bytes/s of DRAM actually reached
    l2_size=50 << 20,       # bytes of L2: an input larger than half of it is read again per block row
    atomic=1.5e12,          # bytes/s of zeroing y and adding slices into it (as sgemm's split-K)
    launch=3e-6,            # s: the launch that zeroes y
)
# Fitted (a grid search on log error) to the H100 timings in BENCHMARKS.md and the tuning records of
# N32 C64 128x128 K128 and the seeds' shape: 10 points, 0.15 rms in log time.
# The tile families schedule_for weighs: (bm, bn, tm, tn, min_blocks, depths bk). Large tiles for
# many channels and pixels; narrow ones (24 or 32 channels, 256 pixels) for few output channels;
# small ones for few pixels (with split_k for the grid). Each takes the depths at which NVRTC
# (CUDA 13, sm_90) compiles it without spilling: 32x128 4x4 spills 16 bytes 16 deep.
BKS = (8, 12, 16)
FAMILIES = ((128, 128, 8, 8, 0, BKS), (128, 64, 8, 4, 2, BKS), (64, 128, 4, 8, 2, BKS), (64, 64, 4, 8, 0, BKS),
            (64, 64, 4, 4, 0, BKS), (32, 256, 4, 8, 0, BKS), (24, 256, 4, 8, 0, BKS), (32, 128, 4, 4, 0, (8, 12)))


def geometry(op, d: dict) -> tuple[int, int, int]:
    """(output channels, output pixels N*P*Q, reduction C*R*S): the implicit GEMM's M, N and K (`op`: the
    conv2d op, whose out_hw gives P and Q)."""
    P, Q = op.out_hw(d)
    return d["K"], d["N"] * P * Q, d["C"] * d["R"] * d["S"]


@functools.lru_cache(maxsize=None)
def resources(op, knobs: tuple, target: Target) -> tuple | None:
    """(threads, registers, shared bytes, gather rows, gather pixels, filter loads) of a tiling, or
    None where the op refuses it on `target`."""
    k = dict(knobs)
    try:
        kern = op.kernel(op.schedule_from_knobs(**k), target)
    except ScheduleError:
        return None
    p = dict(kern.params)
    return p["threads"], kern.registers_estimate, kern.static_smem, p["g_rows"], p["g_pix"], p["a_iters"]


def per_sm(threads: int, regs: int, smem: int, min_blocks: int, target: Target) -> int:
    """Blocks an SM holds: by threads, by registers (capped where min_blocks promises more), by shared memory."""
    regs = math.ceil(regs / 8) * 8
    if min_blocks:
        regs = min(regs, target.regs_per_sm // (threads * min_blocks))
    return max(1, min(target.max_threads_per_sm // threads, target.regs_per_sm // (regs * threads),
                      target.smem_per_sm // (smem + 1024), 32))


def step_cycles(k: dict, res: tuple, blocks: int, l1: float) -> float:
    """Cycles for `blocks` resident blocks of tiling `k` to take one bk-deep step together."""
    threads, _, _, rows, pix, a_iters = res
    warps = blocks * threads // 32
    runs_m, runs_n = k["tm"] // 4, k["tn"] // 4
    wx = min(32, k["bn"] // k["tn"])            # a warp's lanes along pixels; the rest along channels
    wy = 32 // wx
    ffma = k["tm"] * k["tn"] * k["bk"]
    instrs = (ffma + k["bk"] * (runs_m + runs_n) + rows * COST["row"] + rows * pix * COST["pixel"]
              + a_iters * COST["a_load"] + rows * pix + 4 * a_iters + COST["step"])
    shared = k["bk"] * (runs_m * cdiv(wy, 8) + runs_n * cdiv(wx, 8)) + rows * pix + 4 * a_iters
    l2 = blocks * 4 * k["bk"] * (k["bm"] + k["bn"] * (1 - l1)) / COST["l2_bytes"]
    return max(warps * instrs / (4 * COST["issue"]), warps * shared, l2, COST["latency"])


def estimate(op, k: dict, d: dict, target: Target | None = None) -> float:
    """Seconds the implicit GEMM with knobs `k` takes on problem sizes `d` (a dict of every dim)."""
    target = target or default_target()
    res = resources(op, tuple(sorted(k.items())), target)
    if res is None:
        return math.inf
    M, NPQ, CRS = geometry(op, d)
    if cdiv(M, k["bm"]) > 65535:
        return math.inf
    slots = per_sm(res[0], res[1], res[2], k["min_blocks"], target)
    blocks = cdiv(NPQ, k["bn"]) * cdiv(M, k["bm"]) * k["split_k"]
    steps = cdiv(cdiv(CRS, k["bk"]), k["split_k"])
    overlap = d["R"] * d["S"] > 1 and d["stride_h"] < d["R"] * d["dil_h"] + 1
    l1 = COST["l1_reuse"] if overlap else 0.0
    full, rest = divmod(blocks, target.sms * slots)
    cycles = full * (steps * step_cycles(k, res, slots, l1) + COST["fill"])
    if rest:
        cycles += steps * step_cycles(k, res, cdiv(rest, target.sms), l1) + COST["fill"]
    ykpq, x = M * NPQ, d["N"] * d["C"] * d["H"] * d["W"]
    rereads = cdiv(M, k["bm"]) if 4 * x > COST["l2_size"] // 2 else 1     # block rows run one after another
    dram = 4 * (x * rereads + M * CRS + ykpq) / COST["dram"]
    split = 4 * ykpq * (1 + k["split_k"]) / COST["atomic"] + COST["launch"] if k["split_k"] > 1 else 0.0
    return max(cycles / COST["clock"], dram) + split


def candidates(op, d: dict, target: Target):
    """The tilings schedule_for weighs for sizes `d`: each family at each depth and number of slices."""
    M, NPQ, CRS = geometry(op, d)
    base = dict(op.default_knobs(), algo="implicit")
    for bm, bn, tm, tn, min_blocks, bks in FAMILIES:
        for bk in bks:
            if bk == 12 and cdiv(CRS, 12) * 12 >= cdiv(CRS, 8) * 8:
                continue                         # 12-deep tiles only where they pad C*R*S less
            for split in op.knob("split_k").choices:
                if split > 1 and cdiv(CRS, bk) < 2 * split:
                    break                        # slices of at least two steps
                yield dict(base, bm=bm, bn=bn, bk=bk, tm=tm, tn=tn, min_blocks=min_blocks, split_k=split)


def pick(op, d: dict, target: Target | None = None) -> dict:
    """The knobs of the candidate with the smallest estimate."""
    target = target or default_target()
    return min(candidates(op, d, target), key=lambda k: estimate(op, k, d, target))
