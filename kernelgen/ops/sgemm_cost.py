"""SGEMM's heuristic: a small cost model over a few tile families and numbers of K slices.

>>> from kernelgen.ops import get_op
>>> from kernelgen.ops.sgemm_cost import choose
>>> op = get_op("sgemm")
>>> best = choose(op, op.problem({"M": 512, "N": 16, "K": 500000}))     # very long K, 16 columns
>>> dict(best.knobs)["bn"], best.split_k >= 16, best.reduce_k
(16, True, 'workspace')

Each candidate is a tile family (a row of FAMILIES, or of FITTED where a thin side of C takes a tile of
its own width) with K cut into `split_k` slices (gridDim.z), summed by atomics or through a workspace
(`reduce_k`). Its time, in seconds, is estimated from the shape and the Target only (no shape is
listed anywhere):

    blocks        = ceil(M / bm) * ceil(N / bn) * slices
    resident r    = blocks an SM holds at once (threads, shared memory and the registers' estimate)
    one SM, r blocks at once, each over kchunk of K:
        compute   = r * 2 * bm * bn * kchunk / (SM's fp32 peak * family efficiency)
        latency   = (kchunk / bk) tiles * LATENCY_S / tiles in flight (1 copied through registers,
                    stages - 1 with cp.async): a block waits for each tile it did not prefetch
        bandwidth = r * 4 * (bm + bn) * kchunk / SM_BYTES_PER_S
        wave(r)   = max(compute, latency, bandwidth)
    main kernel   = max(full waves * wave(r) + wave(last wave's blocks per SM),
                        4 * (M*K + K*N + M*N) / (DRAM bandwidth * DRAM_EFFICIENCY))
                    stream-K (K whole; ops/streamk.py): blocks / (SMs * r) * wave(r) * (1 + STREAM_K_COST), the
                    last partial wave spread over every SM
    reduction     = atomic:    LAUNCH_S + 4*M*N / bandwidth + 4*M*N*slices / ATOMIC_BYTES_PER_S
                    workspace: LAUNCH_S + 4*M*N*(2*slices + 1) / WORKSPACE_BYTES_PER_S
    estimate      = LAUNCH_S + main kernel + reduction

The estimate is wave quantisation (a last wave of few blocks costs as much as a full one per
block), Little's law for the loads (a block brings at most its tiles in flight per latency) and a
roofline. The regimes it produces, for an H100 (132 SMs):

| regime | example | picked | why |
| --- | --- | --- | --- |
| large, full waves | 2048x8448x4096 | 256x128, K whole | best tile efficiency, waves full |
| a last wave the tiles fill in part | 4096^3, 3000^3, 2047x2049x1023 | 256x128, stream-K | the last wave's idle SMs (K slices before stream-K) |
| small | 1000^3, 512^3 | 128x128 or 64x64, K in 2-8 slices | 132 SMs need more blocks than the tiles give |
| very long K | M=1024, N=16, K=500000 | a skinny tile, K in up to 256 slices, workspace | blocks in flight to stream A at full bandwidth |
| skinny N (<= ~64) | 3000x64x2000, 4096x8x100000 | bn = 8/16/32/64 tiles, slices | no columns of C computed for nothing |
| skinny M (<= ~64) | 16x5000x4000 | bm = 8/16/32 tiles, slices | the same for rows |
| a thin side of 17-24 or 33-48 | 8457x35x4096, 40x3000x3000 | a fitted 24/40/48-wide tile, slices | 40 columns for 35, not 64 |
| x . W^T (NT) with a side of 1-16 | 16x4096x4096:NT, 1x11008x4096:NT, 8192x8x4096:NT | a dot tile (lanes split K) | the thin side held in L1, the other operand streamed from DRAM once |

Operand layouts: where A is stored transposed (TN, TT) the cp.async families copy it 16 bytes at a time
into the km tile, as its rows lie in memory (M = 16-32, N = 512-1024, K = 512 TN: 0.70-0.85x cuBLAS with
register-copied tiles, 0.99-1.36x so). Where B is stored transposed (NT, TT) cp.async could only copy it
4 bytes at a time, transposing on the way: those tiles ran 0.65-0.85x cuBLAS at M = 64-128 where the
register-copied ones ran 0.81-1.03x, so those layouts keep the register-copied families only (H100,
2026-11-24, bench_results/2026-11-24-s11/sgemm_layout_families.md).

Slices are summed through a workspace (deterministic: the same bits every run, which users value)
unless atomics are estimated faster by more than DETERMINISM_PREMIUM. Every constant is in the one
table COSTS below and every family's efficiency in FAMILIES: `bench/sgemm_regimes_probe.py` times
candidates on an H100 beside the model's estimate, to calibrate them.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ..errors import KernelgenError
from ..target import Target, default_target
from .base import INT_MAX, Problem, cdiv
from . import splitk
from .fusion import Epilogue
from .streamk import stream_k_region
from .operands import Operands, mixed_twins

# The model's constants (H100 SXM figures, first guesses from the 2026-11-22 measurements; calibrate
# with bench/sgemm_regimes_probe.py). Rates are per second.
COSTS = dict(
    LATENCY_S=1.0e-6,               # a K tile's loads, issue to use (DRAM latency under load + a barrier)
    SM_BYTES_PER_S=100e9,           # the most one SM's loads bring in (L2 -> SM)
    DRAM_EFFICIENCY=0.9,            # of the datasheet bandwidth, streaming A and B
    LAUNCH_S=2.0e-6,                # a kernel launch (event timing)
    ATOMIC_BYTES_PER_S=1.5e12,      # split-K atomics: C's bytes added per slice
    WORKSPACE_BYTES_PER_S=3.0e12,   # split-K workspace: slabs written, read back, C written (mostly L2)
    UNALIGNED=0.85,                 # speed of a twin whose A or B loads are element-wise (rows at any offset)
    DETERMINISM_PREMIUM=0.05,       # atomics must be estimated this much faster to be picked
    MAX_WORKSPACE_BYTES=1 << 30,    # no workspace beyond this (atomics instead)
    DOT_LATENCY_S=1.5e-6,           # a dot-layout trip's wait on its stream's loads (DRAM under that kernel's load)
    # stream-K's price over evenly spread waves: the split tiles' exchange, each run's pipeline start, and a kernel
    # of more registers (231 against 221 at 256x128). Fitted to five shapes of 1.9-7.8 waves (H200, 2026-11-29,
    # bench_results/2026-11-29-s20/s20_stream_k_probe.md): 1.014-1.032 times the quantisation-free time, mean 1.023.
    STREAM_K_COST=0.023,
)

DEFAULT_PEAK = (66.9e12, 3.35e12)  # fp32 flop/s and bytes/s where the target names no GPU

_SYNC = dict(copy="sync", stages=2)
_ASYNC = dict(copy="cp_async", stages=4, bk=16, a_layout="mk", vec_a=4)
COMPANY = True          # a FAMILIES row's optional 4th field: the family needs more blocks than SMs
# Tile families: (name, knobs over the default schedule, fraction of an SM's fp32 peak the main loop
# reaches when nothing else limits it). 256x128 and 128x128 are measured (73%, 72%); 128x64, 256x16 and
# 16x256 were scaled by the model's error on the 160 DeepBench shapes timed on the H100 (2026-11-23,
# bench_results/2026-11-23-s3/gemm_suite_*.json: measured / estimated 1.30, 2.27 and 1.67 where the other
# families read 0.99-1.20), and their unmeasured register-copied siblings of the same thin side (128x16,
# 256x8; 16x128, 8x256) by the same factor. 256x32, 128x32, 64x64, 128x256, 256x64 and the three thin
# cp.async families were then scaled by their error in two runs of `bench/sgemm_regimes_probe.py --families
# all` over 12 shapes in no list (H100, 2026-11-23, bench_results/2026-11-23-s4/): measured / estimated
# 1.2-1.65 at their best slices, where 256x128, 64x128 and 32x128 read 0.99-1.04; 256x16/cp.async once more
# by a third probe at N = 8 (1.48x optimistic there, where 256x8 measured faster). The rest are guesses.
FAMILIES = (
    ("256x128", dict(), 0.73),
    ("128x128", dict(bm=128), 0.72),
    ("128x256", dict(bm=128, bn=256, tm=8, tn=16), 0.55),
    ("256x64", dict(bm=256, bn=64, wm=64, wn=32, tm=8, tn=8), 0.45),
    ("128x64", dict(bm=128, bn=64, wm=64, wn=32, tm=8, tn=8), 0.50),
    ("64x128", dict(bm=64, bn=128, wm=32, wn=64, tm=8, tn=8), 0.62),
    ("64x256", dict(bm=64, bn=256, wm=32, wn=64, tm=8, tn=8), 0.62),
    ("64x64", dict(bm=64, bn=64, wm=32, wn=32, tm=4, tn=8), 0.42),
    ("256x32", dict(bm=256, bn=32, wm=64, wn=32, tm=8, tn=8), 0.45),
    ("128x32", dict(bm=128, bn=32, wm=32, wn=32, tm=4, tn=8), 0.42),
    ("256x16", dict(bm=256, bn=16, wm=64, wn=16, tm=8, tn=4), 0.23),
    ("128x16", dict(bm=128, bn=16, wm=32, wn=16, tm=4, tn=4), 0.18),
    ("256x8", dict(bm=256, bn=8, wm=64, wn=8, tm=4, tn=4), 0.14),
    ("32x256", dict(bm=32, bn=256, wm=32, wn=64, tm=8, tn=8), 0.60),
    ("32x128", dict(bm=32, bn=128, wm=32, wn=32, tm=8, tn=4), 0.50),
    ("16x256", dict(bm=16, bn=256, wm=16, wn=64, tm=4, tn=8), 0.31),
    ("16x128", dict(bm=16, bn=128, wm=16, wn=32, tm=4, tn=4), 0.25),
    ("8x256", dict(bm=8, bn=256, wm=8, wn=64, tm=4, tn=4), 0.19),
    # cp.async, 4 stages of bk 16 (A's tile as in memory): three tiles in flight a block, for shapes
    # whose blocks wait on their loads (short K slices, skinny tiles)
    ("128x128/cp.async", dict(bm=128, bn=128, wm=64, wn=32, tm=8, tn=8, **_ASYNC), 0.60),
    ("64x64/cp.async", dict(bm=64, bn=64, wm=32, wn=32, tm=4, tn=8, **_ASYNC), 0.45),
    ("256x16/cp.async", dict(bm=256, bn=16, wm=64, wn=16, tm=8, tn=4, **_ASYNC), 0.23),
    ("256x8/cp.async", dict(bm=256, bn=8, wm=64, wn=8, tm=4, tn=4, **_ASYNC), 0.11),
    ("16x256/cp.async", dict(bm=16, bn=256, wm=16, wn=64, tm=4, tn=8, **_ASYNC), 0.36),
    # thin-row cp.async tiles for M of 64-128 (one or two block rows, B streamed from DRAM once: the
    # register-copied tiles' one tile in flight left them at 0.73-0.79x cuBLAS on DeepBench's rows) and
    # medium products (many blocks an SM): the best measured at 16 of 21 shapes of 48-3000 rows (of 18 top two),
    # their efficiency the best-ranking of 0.50-0.75 over every probe (bench_results/2026-11-25-s14/
    # sgemm_skinny_m_cp_async.md, sgemm_new_families_medium.md). Their blocks of 4 warps need company on an
    # SM (COMPANY): one an SM ran 0.76-0.83x cuBLAS where two or more ran 0.88-0.94x (64x4096x4096,
    # 128x2048x2048, 64x7680x2560), so they are candidates only where their blocks outnumber the SMs. The first two
    # read A in K vectors (run_m=1): 1-2% faster at 9 of 12 shapes of 64-2048 rows (32x256 and 128x128/cp.async were
    # 2-5% slower so; bench_results/2026-11-25-s16/s16_kvec_families.md). Layouts storing A transposed keep runs of 4.
    ("32x128/cp.async", dict(bm=32, bn=128, wm=32, wn=32, tm=8, tn=4, run_m=1, **_ASYNC), 0.65, COMPANY),
    ("64x128/cp.async", dict(bm=64, bn=128, wm=32, wn=64, tm=8, tn=8, run_m=1, **_ASYNC), 0.65, COMPANY),
    ("32x256/cp.async", dict(bm=32, bn=256, wm=32, wn=64, tm=8, tn=8, **dict(_ASYNC, stages=3)), 0.65, COMPANY),
)
# Fitted families: where C's thin side (M or N under 64) is not close to a power of two, a block spans it in
# the next multiple of 8 (N = 35: 40 columns, where the families above compute 64 or 2 x 32), as 8 threads
# of `side / 8` = 3, 5 or 6 in the contiguous layout (the warp layouts need runs of 4), wherever that is at
# most 3/4 of the power of two (24, 40 and 48; 56 columns ran slower than 64, their threads' 7 columns
# loaded one float at a time). The other side is 64 (threads of 4) or 128 (of 8). Efficiencies from
# `bench/sgemm_regimes_probe.py --families all` at 12 shapes with a side of 20-56 (H100, 2026-11-25,
# bench_results/2026-11-25-s14/sgemm_fitted_families.md).
FITTED = (
    (64, 4, 0.48),
    (128, 8, 0.40),
)
# Dot families (the dot layout: a warp's lanes split K, layout NT only, both operands read along K): where a side
# of C is at most 16, a warp's tile spans it (the thin side's rows are held: every warp of the block reads them,
# mostly from L1) and the other operand streams from DRAM once. Rows: (the powers of two the thin side is
# rounded to that the row serves, the thin side's (block, warp) extents, the other side's (warp extent, warps a
# block), stages, unroll_k, efficiency); 0 means the thin side's own power of two. From `bench/s15_dot_probe.sh` (H100, 2026-11-25,
# bench_results/2026-11-25-s15/s15_dot_probe_*.md): 16 rows at 16x4096x4096 44.6 us (tiles 55.4, cuBLAS 59.8),
# 16x512x500000 585 us (625, 496); 1 row at 1x4096x4096 30.7 us (53.0, 39.8); 8 columns at 8192x8x4096 59.5 us
# (90.1, 89.6). Which operand streams is the template's rule (the one whose rows one warp alone reads).
DOT = (
    ((16,), (16, 8), (8, 4), 2, 1, 0.50),
    ((16,), (16, 16), (4, 8), 1, 2, 0.50),
    ((8,), (8, 8), (8, 4), 1, 2, 0.50),
    ((1, 2, 4), (0, 0), (4, 4), 2, 2, 0.50),
    ((1, 2, 4), (0, 0), (2, 4), 1, 4, 0.50),
)
SPLITS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256)


@dataclass(frozen=True)
class Family:
    name: str
    knobs: dict
    efficiency: float
    resident: int          # blocks an SM holds at once
    in_flight: int         # K tiles a block has in flight
    slice_tile: int        # the whole tiles K's slices are cut in (op.k_tile: bk, or the dot layout's chunk)
    needs_company: bool = False   # legal only where its blocks outnumber the SMs (COMPANY)

    @property
    def dot(self) -> bool:
        return self.knobs["layout"] == "dot"

    @property
    def k_tile(self) -> int:
        """K a block waits on at once: a tile, or a dot trip (unroll_k chunks)."""
        return self.slice_tile * max(self.knobs["unroll_k"], 1) if self.dot else self.slice_tile


@dataclass(frozen=True)
class Choice:
    family: str
    split_k: int
    reduce_k: str
    seconds: float
    knobs: tuple


@functools.lru_cache(maxsize=64)
def families(op, target: Target, layout: str = "NN") -> tuple[Family, ...]:
    """The families legal on `target` for operand layout `layout` (checked as op.kernel checks a
    schedule; nothing compiled), with what the layout changes in a schedule (op.layout_knobs), and the
    blocks an SM holds: its threads, shared memory and registers (the kernel's estimate) allow."""
    return tuple(f for f in (_family(op, target, layout, *row) for row in FAMILIES) if f)


def families_for(op, target: Target, layout: str, M: int, N: int) -> tuple[Family, ...]:
    """Every family a product of M x N is estimated with: FAMILIES', those fitted to its thin sides and (layout
    NT) the dot families of a side of at most 16."""
    return (families(op, target, layout) + fitted_families(op, target, layout, fitted_side(M), fitted_side(N))
            + dot_families(op, target, layout, dot_side(M), dot_side(N)))


def dot_side(size: int) -> int:
    """The power of two a dot family's warp tile spans a side of `size` with (0: too wide for the dot families)."""
    side = 1 << max(size - 1, 0).bit_length()
    return side if any(side in row[0] for row in DOT) else 0


def dot_rows(thin_m: int, thin_n: int) -> list[tuple[str, dict, float]]:
    """DOT as rows like FAMILIES' over a thin M of `thin_m` (a power of two) and (or) a thin N (0: none)."""
    rows = []
    for serves, (block, warp), (other, warps), stages, unroll, eff in DOT:
        for thin, side in ((thin_m, "m"), (thin_n, "n")):
            if thin not in serves:
                continue
            b, w = block or thin, warp or thin
            t = dict(bm=b, tm=w, bn=other * warps, tn=other) if side == "m" else \
                dict(bn=b, tn=w, bm=other * warps, tm=other)
            name = f"dot {t['bm']}x{t['bn']}/{t['tm']}x{t['tn']} st{stages}u{unroll}"
            rows.append((name, dict(t, shared=False, layout="dot", wm=0, wn=0, stages=stages, unroll_k=unroll), eff))
    return rows


@functools.lru_cache(maxsize=64)
def dot_families(op, target: Target, layout: str, thin_m: int, thin_n: int) -> tuple[Family, ...]:
    """The dot rows legal on `target` for `layout` (NT only: the kernel refuses the others)."""
    return tuple(f for f in (_family(op, target, layout, *row) for row in dot_rows(thin_m, thin_n)) if f)


def fitted_side(size: int) -> int:
    """The fitted families' extent for a thin side of `size` (0: a power of two fits it as well)."""
    side, pow2 = cdiv(size, 8) * 8, 1 << max(size - 1, 0).bit_length()
    return side if size < 64 and side != pow2 and 4 * side <= 3 * pow2 else 0


def fitted_rows(fit_m: int, fit_n: int) -> list[tuple[str, dict, float]]:
    """FITTED as rows like FAMILIES' over a thin M of `fit_m` rows and (or) a thin N of `fit_n` columns (0: none)."""
    rows, thin = [], dict(layout="contiguous", wm=0, wn=0)
    for other, t, eff in FITTED:
        if fit_n:
            rows.append((f"{other}x{fit_n}", dict(thin, bm=other, tm=t, bn=fit_n, tn=fit_n // 8,
                                                    vec_c=math.gcd(fit_n // 8, 4)), eff))
        if fit_m:
            rows.append((f"{fit_m}x{other}", dict(thin, bm=fit_m, tm=fit_m // 8, bn=other, tn=t), eff))
    return rows


@functools.lru_cache(maxsize=64)
def fitted_families(op, target: Target, layout: str, fit_m: int, fit_n: int) -> tuple[Family, ...]:
    """The fitted rows legal on `target` for `layout`, as families() makes FAMILIES'."""
    return tuple(f for f in (_family(op, target, layout, *row) for row in fitted_rows(fit_m, fit_n)) if f)


def _family(op, target: Target, layout: str, name: str, over: dict, eff: float,
            needs_company: bool = False) -> Family | None:
    k = dict(op.default_knobs(), **over)
    k.update(op.layout_knobs(layout, k["copy"], k["bm"]))
    if k["copy"] == "cp_async" and Operands(layout).b_t:
        return None         # B's 4-byte copies: slower than the register-copied tiles (module doc)
    try:
        kernel = op.kernel(op.schedule_from_knobs(**k), target, None, layout)
    except KernelgenError:
        return None
    resident = target.resident(op.threads(k), op.shared_bytes(k), kernel.registers_estimate)
    # K tiles in flight: the dot layout's trip, two where the next is loaded during its math
    in_flight = k["stages"] if k["layout"] == "dot" else k["stages"] - 1 if k["copy"] == "cp_async" else 1
    return Family(name, k, eff, resident, in_flight, op.k_tile(k), needs_company)


def estimate(fam: Family, split_k: int, reduce_k: str, M: int, N: int, K: int, target: Target,
             layout: str = "NN", stream_k: bool = False) -> float:
    """Seconds for `fam` with K in `split_k` slices summed by `reduce_k` (see the module doc); with `stream_k`
    (K whole) the waves are evenly spread, at STREAM_K_COST more."""
    c = COSTS
    k = fam.knobs
    bm, bn, bk = k["bm"], k["bn"], fam.k_tile
    flops, bw = (target.peaks.fp32, target.peaks.bytes_per_s) if target.peaks else DEFAULT_PEAK
    kchunk, slices = splitk.kchunk(K, split_k, fam.slice_tile), splitk.slices(K, split_k, fam.slice_tile)
    blocks = cdiv(M, bm) * cdiv(N, bn) * slices
    sm_flops = flops / target.sms * fam.efficiency * (1.0 if loads_aligned(k, layout, M, N, K) else c["UNALIGNED"])

    latency = cdiv(kchunk, bk) * c["DOT_LATENCY_S" if fam.dot else "LATENCY_S"] / fam.in_flight

    def wave(r: int) -> float:
        return max(r * 2.0 * bm * bn * kchunk / sm_flops, latency,
                   r * 4.0 * (bm + bn) * kchunk / c["SM_BYTES_PER_S"])

    if stream_k:
        main = blocks / (target.sms * fam.resident) * wave(fam.resident) * (1.0 + c["STREAM_K_COST"])
    else:
        full, rest = divmod(blocks, target.sms * fam.resident)
        main = full * wave(fam.resident) + (wave(cdiv(rest, target.sms)) if rest else 0.0)
    main = max(main, 4.0 * (M * K + K * N + M * N) / (bw * c["DRAM_EFFICIENCY"]))
    if slices == 1:
        reduce = 0.0
    elif reduce_k == "atomic":
        reduce = c["LAUNCH_S"] + 4.0 * M * N / bw + 4.0 * M * N * slices / c["ATOMIC_BYTES_PER_S"]
    else:
        reduce = c["LAUNCH_S"] + 4.0 * M * N * (2 * slices + 1) / c["WORKSPACE_BYTES_PER_S"]
    return c["LAUNCH_S"] + main + reduce


def loads_aligned(k: dict, layout: str, M: int, N: int, K: int) -> bool:
    """The kernel twin these sizes launch loads A and B in vectors (C's rows alone at any offset cost only
    the stores: M = 8457, N = 35, K = 4096 NT ran 204 us all element-wise, 167 us with A's and B's vectors,
    in one call on the H100, bench_results/2026-11-24-s12/sgemm_unaligned_rows.md)."""
    o = Operands(layout)
    twin = o.twin((k["vec_a"], k["vec_b"], k["vec_c"]), {"M": M, "N": N, "K": K}, mixed_twins(k))
    return all(twin.aligned(o.lead(x)) for x in "AB")


def legal_here(fam: Family, split_k: int, reduce_k: str, M: int, N: int, K: int, sms: int,
               stream_k: bool = False, layout: str = "NN") -> bool:
    """What the plan checks for these sizes (grid rows, the blocks' int number), no empty slices, a
    workspace within MAX_WORKSPACE_BYTES, more blocks than `sms` for a family that needs company, and for
    stream-K K whole, a tile family and a last wave the tiles fill in part (else it changes nothing)."""
    k = fam.knobs
    if cdiv(M, k["bm"]) > 65535 or cdiv(M, k["bm"]) * cdiv(N, k["bn"]) > INT_MAX:
        return False
    if split_k > 1 and splitk.slices(K, split_k, fam.slice_tile) < split_k:
        return False
    if fam.needs_company and cdiv(M, k["bm"]) * cdiv(N, k["bn"]) * split_k <= sms:
        return False
    if stream_k and (split_k > 1 or not stream_k_family(k) or
                     not stream_k_region(cdiv(M, k["bm"]) * cdiv(N, k["bn"]), sms * fam.resident) or
                     fam.resident == 1 and not stream_k_prefetches(k, layout, M, N, K)):
        return False
    return not (split_k > 1 and reduce_k == "workspace"
                and 4 * split_k * splitk.slab(M, N) > COSTS["MAX_WORKSPACE_BYTES"])


def candidates(op, problem: Problem, target: Target | None = None) -> list[Choice]:
    """Every legal candidate for `problem`, cheapest first (atomics weighed with DETERMINISM_PREMIUM)."""
    target = target or default_target()
    M, N, K = problem["M"], problem["N"], problem["K"]
    layout = problem.layout or "NN"
    out = []
    fams = families_for(op, target, layout, M, N)
    # K whole: tiles one a block, or stream-K where the epilogue allows it; K in slices: summed either way
    whole = (("atomic", False), ("atomic", True)) if stream_k_fits(problem.epilogue) else (("atomic", False),)
    for fam in fams:
        for s in SPLITS:
            for reduce_k, sk in whole if s == 1 else (("workspace", False), ("atomic", False)):
                if legal_here(fam, s, reduce_k, M, N, K, target.sms, sk, layout):
                    sec = estimate(fam, s, reduce_k, M, N, K, target, layout, sk)
                    knobs = dict(fam.knobs, split_k=s, reduce_k=reduce_k, **({"stream_k": True} if sk else {}))
                    out.append(Choice(fam.name, s, reduce_k, sec, tuple(knobs.items())))
    eff = {f.name: f.efficiency for f in fams}
    # ties (several candidates at one bound, e.g. launch and latency): fewer slices, then fewer rows and columns
    # computed past C's edges, then the more efficient tile
    def padded(ch: Choice) -> int:
        k = dict(ch.knobs)
        return cdiv(M, k["bm"]) * k["bm"] * cdiv(N, k["bn"]) * k["bn"]
    return sorted(out, key=lambda ch: (weighed(ch.seconds, ch.split_k, ch.reduce_k), ch.split_k, padded(ch),
                                       -eff[ch.family]))


def stream_k_family(k: dict) -> bool:
    """Stream-K's families: the register-copied warp tiles, where it was measured (256x128, 128x128). A cp.async
    family lost with it (2047x2049x1023, 32x128/cp.async: 357 -> 403 us, bench_results/2026-11-29-s20/
    s20_stream_k_probe.md)."""
    return k["layout"] == "warp" and k["copy"] == "sync"


# The stream-K kernel's twins of a tile an SM holds one of (256x128) whose next K tile's loads ptxas keeps ahead of
# the math (tests/test_op_sgemm.py checks their SASS); in the others it sank them to their stores, which one block an
# SM cannot hide (a GELU's tile, sunk so: 1.4x slower). With two or more blocks an SM the other's math covers them
# (128x128, 7133x2048x2048 TN: 0.80x -> 0.91x cuBLAS, bench_results/2026-11-29-s20/s20_suite_stream_k_slots.md).
STREAM_K_PREFETCHES = {"NN": ("", "_unaligned", "_unaligned_k", "_unaligned_n"), "NT": ("", "_unaligned", "_unaligned_k")}


def stream_k_prefetches(k: dict, layout: str, M: int, N: int, K: int) -> bool:
    """Whether the stream-K twin these sizes launch keeps its loads ahead of the math (STREAM_K_PREFETCHES)."""
    twin = Operands(layout).twin((k["vec_a"], k["vec_b"], k["vec_c"]), {"M": M, "N": N, "K": K}, mixed_twins(k))
    return twin.suffix in STREAM_K_PREFETCHES.get(layout, ())


def stream_k_fits(epilogue: str | None) -> bool:
    """Whether stream-K is a candidate with this fused epilogue. Its units loop holds ~10 registers more than the
    tile one a block (221 -> 231 at 256x128); where an epilogue already takes the tile to the 255 cap (a GELU's or
    SiLU's helper, or a residual read in the store) ptxas then sank the next tile's loads to their stores: GELU
    at 2048x8448x4096 NT 4044 against 2880 us (H200, bench_results/2026-11-29-s20/s20_gelu_probe.txt); pinning
    them cost every stream-K tile 5-8% (s20_stream_k_pinned.md). A bias, a scale or a relu keeps the registers."""
    if not epilogue:
        return True
    ep = Epilogue.parse(epilogue)
    return not set(ep.helpers) - {"relu"} and "res" not in ep.inputs


def weighed(seconds: float, split_k: int, reduce_k: str) -> float:
    """An estimate as candidates ranks it: slices summed by atomics (C's last bits vary between runs) must be
    DETERMINISM_PREMIUM faster than the workspace to win."""
    return seconds * (1.0 + COSTS["DETERMINISM_PREMIUM"] if reduce_k == "atomic" and split_k > 1 else 1.0)


def choose(op, problem: Problem, target: Target | None = None) -> Choice:
    """The cheapest candidate (the default tile, K whole, when nothing else is legal)."""
    found = candidates(op, problem, target)
    if found:
        return found[0]
    knobs = dict(op.default_knobs(), **op.layout_knobs(problem.layout or "NN"))
    return Choice("256x128", 1, "atomic", float("inf"), tuple(knobs.items()))
