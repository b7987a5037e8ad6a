"""Half-precision matrix product on tensor cores: C[M,N] = A[M,K] @ B[K,N] (row-major), fp16 or bf16
inputs, fp32 accumulation, output in the input type or float32.

>>> from kernelgen.ops import get_op
>>> op = get_op("gemm")
>>> s = op.default_schedule()
>>> print(s.to_python()[:128])
schedule("gemm").split("i", 128, 64).bind("i.0", "blockIdx.y").bind("i.1", "warp").split("j", 128, 64).bind("j.0", "blockIdx.x")
>>> k = op.kernel(s, types=op.types("float16"))
>>> k.name.startswith("gemm_f16_sm90_"), op.threads(op.knobs_from_schedule(s))
(True, 128)

Loops are i (rows of C), j (columns of C) and k (the sum):

    split(i, BM, WM)  bind(i.0, blockIdx.y) bind(i.1, warp)   BM rows a block, WM rows a warp
    split(j, BN, WN)  bind(j.0, blockIdx.x) bind(j.1, warp)   BN columns a block, WN a warp
    split(k, BK)      tensorize(k.1, INTRINSIC)                K through shared memory BK at a time;
                      inside a tile the instruction computes: "mma.m16n8k16" (mma.sync, sm_80+) or
                      "wmma.m16n16k16" (nvcuda::wmma, sm_70+)

A and B are staged through shared memory in 16-byte vectors (element-wise where K or N is not a
multiple of 8: the plan then picks the `_unaligned` kernel; wgmma's TMA instead reads a copy of such an
operand with padded rows, kernelgen/ops/pitch.py). `annotate(split_k, s)` cuts K into s slices over
blockIdx.z: each stores its fp32 partial tile in a workspace slab and a second kernel sums the slabs in
order, applies a fused epilogue and converts (kernelgen/ops/splitk.py); `schedule_for` picks tiles and
slices by a cost model (kernelgen/ops/gemm_cost.py). `double_buffer(A|B, n)` keeps n tiles:
copied through registers (`annotate(copy, sync)`, n <= 2) or by an n-stage cp.async pipeline
(`annotate(copy, cp_async)`, 2..6), or (sm_90, bk 64) brought by the TMA unit (`annotate(copy, tma)`): thread
0 issues each stage's copies and every warp waits on that stage's mbarrier, not on a block barrier, the tiles in
TMA's 128-byte swizzle (operands TMA cannot read go through a padded copy, as for wgmma);
`storage_align(A|B, pad)` pads shared rows by pad halves;
`annotate(shared_layout, xor)` instead swizzles 16-byte chunks of a row by XOR with the row, so that
the 8 rows ldmatrix reads at once fall in 8 different bank groups (mma only); `annotate(ldmatrix, 1)`
loads mma fragments with ldmatrix.x4 (B with .x4.trans) instead of 32- and 16-bit shared loads;
`annotate(warp_fragments, 2)` double-buffers them in registers across k16 steps and K tiles (the next
tile's first fragments load while the tile's last mma run: CUTLASS's sm80 order);
`swizzle(g)` walks blocks in groups of g block rows (L2 reuse). On wgmma, `annotate(persistent, coop)`
launches one block an SM that walks the tiles in that order, its producer loading the next tile's K tiles
while the consumers store this one (`pingpong`: the two consumer warpgroups take alternate tiles, their main
loops in turn). The accumulators stay in registers in
fp32; the epilogue converts them and stores with guards at M and N, from the fragments or, with
`cache_write(C, shared)`, staged through shared memory and stored in 16-byte chunks of rows. Inputs are small integers, so the
fp32 sums are exact and a 16-bit output is the correctly rounded exact product.
"""
from __future__ import annotations

import math

import numpy as np

from ..dtypes import FLOAT32, Types, dtype
from ..errors import check
from ..schedule import Schedule, ScheduleReader, schedule
from ..target import Target, default_target, target
from .base import INT_MAX, LAYOUTS, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, TensorMap, cdiv
from .knobs import Prim, Range
from .io import torch_tensor
from .operands import Operands, chunk_widths
from .fusion import Fusing
from .sgemm import MAX_GRID_Y, check_grid
from . import pitch
from .splitk import MAX_SPLIT_K, REDUCE_VEC, reduce_launch, reduce_recipe, workspace as splitk_workspace

INTRINSICS = {"mma": "mma.m16n8k16", "wmma": "wmma.m16n16k16", "wgmma": "wgmma.m64nNk16"}
SHAPES = {"mma": (16, 8, 16), "wmma": (16, 16, 16), "wgmma": (64, 64, 16)}   # (m, n, k) of one instruction
# (wgmma's n is the block's whole width, any multiple of 8 up to 256; B arrives in TMA boxes of 64
# columns, hence 64 here.) wgmma reads K in steps of 64: one 128-byte swizzle atom of 16-bit values.
WGMMA_BK = 64
PRODUCER_REGS, CONSUMER_REGS = 40, 232   # setmaxnreg: 128 * 40 + 256 * 232 <= 65536 registers per SM
STORER_REGS = 72                         # the async epilogue's: 128 * 72 + 256 * 216 <= 65536
# The sm_90a tile: 128x256 blocks, two consumer warpgroups of 64x256, K by 64 in 4 TMA stages.
WGMMA_KNOBS = dict(instr="wgmma", bm=128, bn=256, bk=64, wm=64, wn=256, stages=4, copy="tma", pad=0, smem="xor",
                   ldmatrix=False, swizzle=8, ws=False, epilogue="direct", cluster=1, persistent="off")
# What schedule_for takes on sm_90a: warp-specialised, C staged through shared memory (the fastest
# measured: 0.96x cuBLAS at 4096^3, 1.01x at 8192^3). Clusters of 2 measured 0.56x and are left out.
WGMMA_HEURISTIC = dict(WGMMA_KNOBS, ws=True, epilogue="smem")
PERSISTENT = ("off", "coop", "pingpong")
# A persistent block's epilogue stages C 64 rows (one m64 tile) at a time in an area of each consumer
# warpgroup's own, the stages being refilled meanwhile; 32 rows where 64 would not fit beside the stages
# in sm_90a's shared memory (128x256 tiles in 4 stages: 4 stages ran 1.2x faster than 3 where A streams
# from DRAM).
PASS_ROWS = (64, 32)
# mma.sync's staged epilogue: each warp stages 16 rows of its tile at a time (one row of m16 tiles), so the
# staging areas fit in the stages of any tile (fp32 accumulators included) and hold few registers.
STAGED_ROWS = 16


def smem_tile(rows: int, cols: int, pad: int, xor: bool, threads: int) -> dict:
    """How a rows x cols tile of 16-bit elements sits in shared memory and is copied in 16-byte chunks
    by `threads` threads (the dict lib/tc_copy.j2 and lib/tc_fragment.j2 take). The XOR swizzle moves
    chunk c of row r to c ^ ((r / xor_div) % xor_mod): any 8 consecutive rows' chunk c then lie in 8
    different 16-byte bank groups of a 128-byte line, whether a row holds 2, 4, 8 or more chunks."""
    per_row = cols // 8
    chunks = rows * per_row
    swz = xor and per_row > 1
    whole_rows = threads % per_row == 0 and chunks % threads == 0
    row_step = threads // per_row if whole_rows else 0
    xor_div, xor_mod = (max(1, 8 // per_row), min(per_row, 8)) if swz else (1, 0)
    return dict(rows=rows, cols=cols, ld=cols + (0 if xor else pad), per_row=per_row, chunks=chunks,
                iters=cdiv(chunks, threads), full=chunks % threads == 0, row_step=row_step,
                xor_div=xor_div, xor_mod=xor_mod,
                # a thread's chunks lie a whole number of swizzle periods apart: the same swizzle, so
                # their shared offsets differ by constants (lib/tc_copy.j2's stream_copy: one register)
                fixed_swizzle=row_step > 0 and row_step % (xor_div * max(xor_mod, 1)) == 0)


def units(d) -> int:
    """16-bit units an element of input type `d` takes in the tiles, copies and offsets: 1, or 2 for tf32
    data (fp32 values seen as pairs of halves)."""
    return d.itemsize // 2


class Gemm(Fusing, Op):
    name = "gemm"
    summary = ("C[M,N] = A[M,K] @ B[K,N], fp16/bf16 on tensor cores, fp32 accumulation (fp32 data: as tf32 / tf32x3, "
               "or exactly on the fp64 tensor cores as dmma), row-major; A and B each as is or transposed (--layout)")
    dims = (Dim("M", 4096, 70, maximum=MAX_GRID_Y * 256, why=f"gridDim.y holds {MAX_GRID_Y} block rows of at most 256; "
                f"a schedule's own limit is {MAX_GRID_Y} x its bm"),
            Dim("N", 4096, 130, maximum=INT_MAX - 256, why="the kernel's int column index runs up to a block tile (256) past N"),
            Dim("K", 4096, 37, maximum=INT_MAX - 256, why="the int K offset runs up to the pipeline's tiles (256) past K"))
    loops = ("i", "j", "k")
    inputs = ("A", "B")
    outputs = ("C",)
    dtypes = ("float16", "bfloat16", "tf32", "tf32x3", "dmma")
    wgmma_heuristic = WGMMA_HEURISTIC      # the base of the cost model's wgmma families (gemm_cost.py)
    layouts = LAYOUTS
    fuses = ("epilogue", "batch")
    knobs = (
        Knob("instr", "mma", ("mma", "wmma", "wgmma"),
             "tensor-core instruction (mma.sync, sm_80+; nvcuda::wmma, sm_70+; wgmma fed by TMA, sm_90a)", "i",
             Prim("tensorize", "k.1", absent="mma", always=True, values=tuple(INTRINSICS.items()))),
        # Tiles are any multiple of the instructions' shapes (m16, n8, k16; wmma n16 and wgmma's m64,
        # n64 and k64 are checked with instr).
        Knob("bm", 128, Range(16, 256, 16), "rows of C per block", "bm", Prim("split", "i", args="BM, WM")),
        Knob("bn", 128, Range(8, 256, 8), "columns of C per block", "bn", Prim("split", "j", args="BN, WN")),
        Knob("bk", 32, Range(16, 64, 16), "K per shared tile", "bk", Prim("split", "k", args="BK")),
        Knob("wm", 64, Range(16, 128, 16), "rows of C per warp (per warpgroup for wgmma)", "wm",
             Prim("split", "i", args="BM, WM")),
        Knob("wn", 64, Range(8, 256, 8), "columns of C per warp (wgmma: the block's width)", "wn",
             Prim("split", "j", args="BN, WN")),
        Knob("stages", 4, (1, 2, 3, 4, 5, 6), "shared tiles in flight", "st", Prim("double_buffer", ("A", "B"), absent=1)),
        Knob("copy", "cp_async", ("sync", "cp_async", "tma"),
             "global->shared copy through registers, by cp.async, or by the TMA unit (wgmma; mma.sync with bk 64, "
             "sm_90: an mbarrier a stage instead of the block barrier)", "c",
             Prim("annotate", "copy", absent="sync", always=True)),
        Knob("pad", 0, (0, 8, 16), "halves of padding per shared row of A and B", "p",
             Prim("storage_align", ("A", "B"), absent=0)),
        Knob("smem", "xor", ("pad", "xor"), "shared rows padded, or 16-byte chunks XOR-swizzled", "s",
             Prim("annotate", "shared_layout", absent="pad")),
        Knob("ldmatrix", True, (False, True), "mma fragments through ldmatrix", "ld",
             Prim("annotate", "ldmatrix", absent=False, values=((True, 1), (False, 0)))),
        Knob("frag_buffers", 1, (1, 2), "mma fragments in registers: 1, each k16 step's loaded and used in its K tile (a "
             "barrier opens every tile); 2, double-buffered across the steps and the tiles: the next tile's first "
             "fragments are loaded before this tile's last mma step, the barrier moved ahead of that step (cp.async, "
             "3+ stages, bk 32 or 64)", "fb", Prim("annotate", "warp_fragments", absent=1), when=("instr", ("mma",)),
             unused=1),
        Knob("min_blocks", 1, (1, 2), "blocks per SM the registers must allow: __launch_bounds__(threads, n) caps a "
             "thread at 65536 / (n x threads) registers", "mb", Prim("annotate", "min_blocks", absent=1),
             when=("instr", ("mma",)), unused=1),
        Knob("ws", False, (False, True), "warp specialisation: a producer warpgroup issues the TMA copies", "ws",
             Prim("annotate", "warp_specialize", absent=False, values=((True, 1), (False, 0))),
             when=("instr", ("wgmma",)), unused=False),
        Knob("epilogue", "direct", ("direct", "smem", "async"), "C stored from the accumulators, or staged through "
             "shared memory and stored in 16-byte row chunks; async (persistent coop wgmma): the whole tile staged, "
             "then stored (the fused epilogue applied) by the producer warpgroup's three spare warps while the "
             "consumers compute the next tile", "e",
             Prim("cache_write", "C", absent="direct", values=(("smem", "shared"), ("async", "shared_async"))),
             when=("instr", ("mma", "wgmma")), unused="direct"),
        Knob("cluster", 1, (1, 2), "blocks per thread-block cluster along i, sharing B's tiles by TMA multicast", "cl",
             Prim("annotate", "cluster", absent=1), when=("instr", ("wgmma",)), unused=1),
        Knob("persistent", "off", PERSISTENT, "persistent blocks walking the tiles of C. wgmma (one block an SM): the "
             "producer loads the next tile's K tiles during the epilogue; coop, both consumer warpgroups on each tile; "
             "pingpong, each on a bm x bn tile of its own, their main loops in turn so that one's epilogue runs "
             "under the other's MMAs (warp-specialised, one slice of K). mma.sync (coop, min_blocks an SM): the "
             "cp.async pipeline runs on across tiles, C staged beside the stages (launched where every tile lies "
             "inside C and K is a multiple of stages x bk; elsewhere the per-tile kernel)", "ps",
             Prim("annotate", "persistent", absent="off"), when=("instr", ("wgmma", "mma")), unused="off"),
        Knob("swizzle", 1, (1, 2, 4, 8, 16), "block rows per group when walking the blocks (L2 reuse)", "sw",
             Prim("swizzle", absent=1)),
        Knob("split_k", 1, Range(1, MAX_SPLIT_K), "slices of K, one per blockIdx.z: each slice stores its fp32 partial "
             "tile in a workspace slab, a second kernel sums the slabs in order (the same bits every run), applies "
             "the fused epilogue and converts to C's type: more, shorter blocks where the tiles cannot fill the SMs "
             "(long K, skinny or small products)", "sk", Prim("annotate", "split_k", absent=1), tune=(1, 2, 4, 8)),
    )

    # -- problems ----------------------------------------------------------------------------------
    def out_dtypes(self, dtype_name: str) -> tuple[str, ...]:
        return ("float32",) if dtype(dtype_name).storage == "float32" else (dtype_name, "float32")

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        unit = "warpgroup" if k["instr"] == "wgmma" else "warp"    # who issues the instruction
        s = (schedule(self.name).split("i", k["bm"], k["wm"]).bind("i.0", "blockIdx.y").bind("i.1", unit)
             .split("j", k["bn"], k["wn"]).bind("j.0", "blockIdx.x").bind("j.1", unit).split("k", k["bk"]))
        return self.put(s, k, "instr", "stages", "copy", "pad", "smem", "ldmatrix", "frag_buffers", "min_blocks", "ws",
                        "epilogue", "cluster", "persistent", "swizzle", "split_k")

    def read_knobs(self, r: ScheduleReader) -> dict:
        dims, units = {}, set()
        for loop, axis in (("i", "y"), ("j", "x")):
            dims[loop] = r.split(loop, 2, (128, 64))
            r.expect("bind", f"{loop}.0", f"blockIdx.{axis}")
            units.add(r.read("bind", f"{loop}.1", "warp", ("warp", "warpgroup")))
        (bk,) = r.split("k", 1, (32,))
        instr = self.take(r, "instr")
        unit = "warpgroup" if instr == "wgmma" else "warp"
        check(units == {unit}, "bind", "i.1", "/".join(sorted(units)),
              limit=f"{INTRINSICS[instr]} is issued by a {unit}: bind i.1 and j.1 to {unit}", allowed=unit)
        return dict(instr=instr, bm=dims["i"][0], bn=dims["j"][0], bk=bk, wm=dims["i"][1], wn=dims["j"][1])

    # -- legality ----------------------------------------------------------------------------------
    def check_knobs(self, k: dict, target: Target, layout: str = "NN") -> None:
        check(k["split_k"] == 1 or not self.batched, "annotate", "split_k", k["split_k"], allowed="1",
              limit="a batched product runs its products on blockIdx.z, where the slices of K would go")
        instr, (sm, sn, sk) = k["instr"], SHAPES[k["instr"]]
        intrinsic = INTRINSICS[instr]
        check(k["epilogue"] != "async" or (instr == "wgmma" and k["persistent"] == "coop"), "cache_write", "C",
              "shared_async", allowed="shared", limit="the producer warpgroup's spare warps store the tiles of a "
              "persistent block's consumers: wgmma with annotate(persistent, coop) only")
        if instr == "wgmma":
            return self._check_wgmma(k, target, layout)
        check(k["copy"] != "tma" or instr == "mma", "annotate", "copy", "tma", allowed="sync, cp_async",
              limit=f"TMA copies feed wgmma and mma.sync; {intrinsic} takes its tiles by cp.async or through registers")
        if instr == "mma":
            target.require("mma_m16n8k16_f16", "tensorize", "k.1", intrinsic)
        else:
            target.require("wmma_f16", "tensorize", "k.1", intrinsic)
        for loop, b, w, s in (("i", k["bm"], k["wm"], sm), ("j", k["bn"], k["wn"], sn)):
            check(w % s == 0, "split", loop, (b, w), limit=f"the {intrinsic} shape {sm}x{sn}x{sk} divides the warp tile: {w} % {s} != 0")
            check(b % w == 0, "split", loop, (b, w), limit=f"the warp tile {w} divides the block tile {b}")
        check(k["bk"] % sk == 0, "split", "k", k["bk"], limit=f"the {intrinsic} shape {sm}x{sn}x{sk} divides the K tile: {k['bk']} % {sk} != 0")
        if k["copy"] == "cp_async":
            target.require("cp_async", "annotate", "copy", "cp_async")
            check(k["stages"] >= 2, "double_buffer", "A", k["stages"], limit="cp.async pipelines need 2..6 stages",
                  allowed="2, 3, 4, 5, 6")
        elif k["copy"] == "tma":
            self._check_mma_tma(k, target, layout)
        else:
            check(k["stages"] <= 2, "double_buffer", "A", k["stages"],
                  limit="copies through registers keep at most 2 stages; use annotate(copy, cp_async)", allowed="1, 2")
        check(k["pad"] % 8 == 0, "storage_align", "A", k["pad"],
              limit="shared rows stay 16-byte aligned (16-byte copies, ldmatrix): pad by a multiple of 8 halves")
        if k["smem"] == "xor":
            check(k["pad"] == 0, "storage_align", "A", k["pad"], limit="an XOR-swizzled layout has no padding",
                  allowed="0")
            check(instr == "mma", "annotate", "shared_layout", "xor",
                  limit="wmma::load_matrix_sync reads plain strided rows; pad them instead", allowed="pad")
        if k["ldmatrix"]:
            check(instr == "mma", "annotate", "ldmatrix", 1, limit="wmma loads its own fragments", allowed="0")
            target.require("ldmatrix", "annotate", "ldmatrix", 1)
        if k["frag_buffers"] == 2:
            check(k["copy"] == "cp_async" and k["stages"] >= 3, "annotate", "warp_fragments", 2,
                  limit=f"fragments double-buffered across tiles need a cp.async pipeline of 3+ stages, not "
                        f"{k['stages']} stage(s) copied by {k['copy']}", allowed="1")
            check(k["bk"] % 32 == 0, "annotate", "warp_fragments", 2, allowed="1",
                  limit=f"the two fragment buffers alternate over an even number of k16 steps a tile: bk 32 or 64, not {k['bk']}")
        if k["persistent"] != "off":
            self._check_persistent_mma(k, target, layout)
        if k["min_blocks"] > 1:
            threads, cap = self.threads(k), target.regs_per_sm // (k["min_blocks"] * self.threads(k)) // 8 * 8
            check(threads * k["min_blocks"] <= target.max_threads_per_sm and self.registers(k) <= cap,
                  "annotate", "min_blocks", k["min_blocks"], allowed="1",
                  limit=f"{k['min_blocks']} blocks of {threads} threads leave {cap} registers a thread, the tile "
                        f"needs ~{self.registers(k)} ({target.max_threads_per_sm} threads per SM)")
        self._check_block(k, target, layout)

    def _check_mma_tma(self, k: dict, target: Target, layout: str) -> None:
        """What TMA adds to mma.sync's rules: the tiles arrive as wgmma's do (128-byte swizzled rows of 64 k,
        MN-major operands in boxes of 64 columns, 2-D descriptors), the fragments by ldmatrix, and each warp's
        rows or columns of an MN-major operand lie in one box."""
        target.require("tma", "annotate", "copy", "tma")
        needs = ((k["ldmatrix"], "annotate(ldmatrix, 1)", "annotate", "ldmatrix", 0),
                 (k["smem"] == "xor" and k["pad"] == 0, "annotate(shared_layout, xor) without padding: TMA writes 128-byte "
                  "XOR-swizzled rows", "storage_align", "A", k["pad"]),
                 (not self.batched, "one product (its TMA descriptors are 2-D)", "annotate", "copy", "tma"))
        for ok, want, prim, tgt, value in needs:
            check(ok, prim, tgt, value, limit=f"mma.sync fed by TMA needs {want}")
        check(k["bk"] == WGMMA_BK, "split", "k", k["bk"], allowed=str(WGMMA_BK),
              limit="TMA fills 128-byte swizzled rows: K is read 64 at a time")
        check(2 <= k["stages"], "double_buffer", "A", k["stages"], limit="a TMA pipeline needs 2..6 stages",
              allowed="2, 3, 4, 5, 6")
        o = Operands(layout)
        for loop, b, w, mn_major in (("i", k["bm"], k["wm"], o.a_t), ("j", k["bn"], k["wn"], not o.b_t)):
            check(not mn_major or (b % 64 == 0 and 64 % w == 0), "split", loop, (b, w),
                  limit="an operand stored along this dimension arrives in TMA boxes of 64: the block tile a "
                        "multiple of 64 and each warp's share within one box (64 % warp tile == 0)")

    def _check_block(self, k: dict, target: Target, layout: str = "NN") -> None:
        """What every variant's block must fit: the arch's threads and shared memory per block."""
        threads = self.threads(k)
        check(threads <= target.max_threads, "split", "i", f"{threads} threads",
              limit=f"{target.max_threads} threads per block on {target.arch}")
        smem = self.shared_bytes(k, layout)
        check(smem <= target.max_smem, "double_buffer", "A", k["stages"],
              limit=f"{smem} bytes of shared memory > {target.max_smem} on {target.arch}")

    def _check_wgmma(self, k: dict, target: Target, layout: str = "NN") -> None:
        """wgmma.m64nNk16 with TMA copies: each consumer warpgroup computes wm rows (m64 tiles) by the
        block's whole width bn; K goes through shared memory 64 at a time (the 128-byte swizzle)."""
        target.require("wgmma", "tensorize", "k.1", INTRINSICS["wgmma"])
        check(not self.batched, "tensorize", "k.1", INTRINSICS["wgmma"], allowed=f"{INTRINSICS['mma']}, {INTRINSICS['wmma']}",
              limit="a batched product: the TMA descriptors of the wgmma kernel are 2-D (one matrix)")
        target.require("tma", "annotate", "copy", "tma")
        check(k["copy"] == "tma", "annotate", "copy", k["copy"], limit="wgmma's tiles arrive by TMA", allowed="tma")
        check(k["wm"] % 64 == 0 and k["bm"] % k["wm"] == 0, "split", "i", (k["bm"], k["wm"]),
              limit="a warpgroup's rows are whole m64 tiles (wm % 64 == 0) and divide the block's (bm % wm == 0)")
        consumers = self._consumers(k)
        check(consumers <= 2, "split", "i", (k["bm"], k["wm"]),
              limit=f"{consumers} consumer warpgroups > 2 (the register file holds two of {CONSUMER_REGS} registers)")
        check(k["wn"] == k["bn"], "split", "j", (k["bn"], k["wn"]),
              limit="a warpgroup's wgmma spans the block's whole width: wn == bn", allowed=str(k["bn"]))
        check(k["bn"] % 64 == 0 and k["bn"] <= 256, "split", "j", k["bn"],
              limit="B arrives in TMA boxes of 64 columns and wgmma's n is at most 256", allowed="64, 128, 192, 256")
        check(k["bk"] == WGMMA_BK, "split", "k", k["bk"],
              limit="K is read 64 at a time: one 128-byte swizzle row of 16-bit values", allowed=str(WGMMA_BK))
        check(2 <= k["stages"] <= 4, "double_buffer", "A", k["stages"], limit="a TMA pipeline keeps 2..4 stages",
              allowed="2, 3, 4")
        check(k["smem"] == "xor" and k["pad"] == 0, "storage_align", "A", k["pad"],
              limit="TMA writes 128-byte XOR-swizzled rows without padding", allowed="0 with shared_layout xor")
        check(not k["ldmatrix"], "annotate", "ldmatrix", 1, limit="wgmma reads its operands from shared memory itself",
              allowed="0")
        if k["ws"]:
            target.require("setmaxnreg", "annotate", "warp_specialize", 1)
        if k["cluster"] > 1:
            target.require("clusters", "annotate", "cluster", k["cluster"])
        if k["persistent"] != "off":
            self._check_persistent(k)
        self._check_block(k, target, layout)

    def _check_persistent(self, k: dict) -> None:
        """A persistent block's producer warpgroup runs ahead across tiles: warp-specialised, no cluster, one
        slice of K; ping-pong gives each consumer warpgroup a whole tile (wm == bm) and its registers."""
        mode = k["persistent"]
        self._persistent_needs(mode, "", ((k["ws"], "annotate(warp_specialize, 1)"),
                                          (k["cluster"] == 1, "annotate(cluster, 1)"),
                                          (k["split_k"] == 1, "annotate(split_k, 1)")))
        if mode == "pingpong":
            check(k["wm"] == k["bm"], "split", "i", (k["bm"], k["wm"]), allowed=f"({k['bm']}, {k['bm']})",
                  limit="ping-pong gives each consumer warpgroup a whole tile: wm == bm")
            check(self.registers(k) <= CONSUMER_REGS, "split", "i", (k["bm"], k["wm"]),
                  limit=f"a {k['bm']}x{k['bn']} tile holds ~{self.registers(k)} registers a thread > {CONSUMER_REGS}")

    @staticmethod
    def _persistent_needs(mode: str, who: str, needs) -> None:
        """annotate(persistent, mode) refused at the first of `needs` ((holds, what it needs)) that does not hold."""
        for ok, want in needs:
            check(ok, "annotate", "persistent", mode, allowed="off", limit=f"{who}persistent blocks need {want}")

    def _check_persistent_mma(self, k: dict, target: Target, layout: str) -> None:
        """mma.sync's persistent blocks run the unrolled cp.async pipeline (ldmatrix, one fragment buffer) on
        across tiles, min_blocks of them an SM: all of those must fit an SM at once, or the grid's later
        blocks would wait for the first ones' whole walks."""
        mode = k["persistent"]
        self._persistent_needs(mode, "mma.sync's ", (
            (mode == "coop", "annotate(persistent, coop): ping-pong is wgmma's"),
            (k["copy"] == "cp_async", "annotate(copy, cp_async)"), (k["ldmatrix"], "annotate(ldmatrix, 1)"),
            (k["frag_buffers"] == 1, "annotate(warp_fragments, 1)"), (k["split_k"] == 1, "annotate(split_k, 1)"),
            (not self.batched, "one product (a batched one runs its products on blockIdx.z)")))
        per_block = self.shared_bytes(k, layout) + 1024
        check(k["min_blocks"] * per_block <= target.smem_per_sm, "annotate", "min_blocks", k["min_blocks"],
              allowed=str(max(1, target.smem_per_sm // per_block)),
              limit=f"persistent blocks are launched min_blocks an SM: {k['min_blocks']} x {per_block} bytes of "
                    f"shared memory > {target.smem_per_sm} on {target.arch}")

    @staticmethod
    def _c_ld(k: dict, itemsize: int) -> int:
        """Bytes per staged row of C (the block's width for wgmma, a warp's for mma): 16 bytes of padding
        put the 8 rows a warp writes in other banks."""
        return (k["bn"] if k["instr"] == "wgmma" else k["wn"]) * itemsize + 16

    def _ep_in_registers(self, k: dict) -> bool:
        """Whether wgmma's staged epilogue runs the fused epilogue on the accumulators before staging them: it
        reads no residual (bias[col] is a fragment's column), so C is staged in its own type and drained as the
        plain GEMM's (staged as fp32 and run on the way out, even acc * 2 cost 1.027x the plain GEMM at 4096^3
        fp16 on the H100). The asynchronous store keeps it on the way out, in the storer warps."""
        return (k["instr"] == "wgmma" and k["epilogue"] == "smem" and self.epilogue is not None
                and "res" not in self.epilogue.inputs)

    def _staged_size(self, k: dict, out_itemsize: int = 2) -> int:
        """Bytes of a staged element of C: the fp32 accumulators where a fused epilogue runs on the way out,
        else C's (16-bit where the types are not known yet: the schedule's check; _wgmma_params checks the
        real size)."""
        return 4 if self.epilogue and not self._ep_in_registers(k) else out_itemsize

    @classmethod
    def _staging_bytes(cls, k: dict, itemsize: int) -> int:
        """A persistent block's staging areas of C beside the stages: _pass_rows rows a consumer warpgroup."""
        if k["persistent"] == "off" or k["epilogue"] == "direct":
            return 0
        if k["epilogue"] == "async":   # the whole tile: the consumers go on while it is stored
            return k["bm"] * cls._c_ld(k, itemsize)
        return cls._consumers(k) * cls._pass_rows(k, itemsize) * cls._c_ld(k, itemsize)

    @classmethod
    def _pass_rows(cls, k: dict, itemsize: int) -> int:
        """Rows of C a warpgroup stages at once: its whole tile in the stages' memory, or (persistent) the
        first of PASS_ROWS whose areas fit beside the stages."""
        if k["persistent"] == "off":
            return k["wm"]
        room = target("sm_90a").max_smem - cls._wgmma_fixed_bytes(k)    # wgmma runs on sm_90a only
        fits = [r for r in PASS_ROWS if cls._consumers(k) * r * cls._c_ld(k, itemsize) <= room]
        return fits[0] if fits else PASS_ROWS[-1]

    @staticmethod
    def _c_align(k: dict, itemsize: int) -> int:
        """Bytes C must be aligned to: the staged epilogue stores 16-byte chunks, the direct one pairs."""
        return 2 * itemsize if k["epilogue"] == "direct" else 16

    # -- derived sizes -----------------------------------------------------------------------------
    @staticmethod
    def _consumers(k: dict) -> int:
        """wgmma's consumer warpgroups: bm / wm sharing each tile, or two ping-pong ones, a tile each."""
        return 2 if k["persistent"] == "pingpong" else k["bm"] // max(k["wm"], 1)

    @classmethod
    def threads(cls, k: dict) -> int:
        if k["instr"] == "wgmma":
            return 128 * cls._consumers(k) + (128 if k["ws"] else 0)
        return 32 * (k["bm"] // max(k["wm"], 1)) * (k["bn"] // max(k["wn"], 1))

    @classmethod
    def _wgmma_fixed_bytes(cls, k: dict) -> int:
        """wgmma's shared memory but C's staging areas: the stages, 1024 bytes to align them, a full and an
        empty barrier a stage, and two more barriers (ping-pong's order, or the async store's staged/drained)."""
        return (k["stages"] * cls._wgmma_stage_bytes(k) + 1024 + 16 * k["stages"]
                + 16 * (k["persistent"] == "pingpong" or k["epilogue"] == "async"))

    @staticmethod
    def _wgmma_stage_bytes(k: dict) -> int:
        return 2 * (k["bm"] + k["bn"]) * k["bk"]

    def _tiles(self, k: dict, layout: str = "NN", ew: int = 1) -> tuple[dict, dict]:
        """A's and B's shared tiles: each keeps its stored rows (16-byte copies along the contiguous
        dimension), so A stored transposed is a bk x bm tile, B stored transposed bn x bk. Columns are
        16-bit units: `ew` of them an element (2 for tf32 data, whose fp32 values the copies and the
        swizzle treat as pairs of halves)."""
        xor, nt, o = k["smem"] == "xor", self.threads(k), Operands(layout)
        if k["copy"] == "tma":   # as TMA writes them (_tma): 64-element rows, MN-major operands box by box
            return (smem_tile(k["bk"] if o.a_t else k["bm"], 64, 0, True, nt),
                    smem_tile(k["bn"] if o.b_t else k["bk"], 64, 0, True, nt))
        a = (k["bk"], k["bm"] * ew) if o.a_t else (k["bm"], k["bk"] * ew)
        b = (k["bn"], k["bk"] * ew) if o.b_t else (k["bk"], k["bn"] * ew)
        # tf32 fragments of a tile whose rows run along M or N (A transposed, B as is) are 32-bit loads of 4
        # rows x 8 columns a warp: rows 8 words (16 halves) longer than a multiple of 32 words put them in 32
        # different banks, where the XOR swizzle of 16-byte chunks leaves two rows on the same chunks.
        plain = dict(pad=k["pad"], xor=xor)
        spread = dict(pad=16, xor=False) if ew == 2 else plain
        return (smem_tile(*a, **(spread if o.a_t else plain), threads=nt),
                smem_tile(*b, **(plain if o.b_t else spread), threads=nt))

    def shared_bytes(self, k: dict, layout: str = "NN", out_itemsize: int = 2, ew: int = 1) -> int:
        if k["instr"] == "wgmma":
            return self._wgmma_fixed_bytes(k) + self._staging_bytes(k, self._staged_size(k, out_itemsize))
        # mma.sync's staged C: each warp's STAGED_ROWS rows of fp32 at most
        staging = self.threads(k) // 32 * STAGED_ROWS * self._c_ld(k, 4) if k["epilogue"] == "smem" else 0
        if k["copy"] == "tma":   # whole stages (A's and B's boxes), 1024 bytes to align them, two barriers a stage
            return max(k["stages"] * self._wgmma_stage_bytes(k), staging) + 1024 + 16 * k["stages"]
        ta, tb = self._tiles(k, layout, ew)
        pipeline = 2 * k["stages"] * (ta["rows"] * ta["ld"] + tb["rows"] * tb["ld"])
        if staging:   # the stages become the warps' staging areas; a persistent block's are beside them (refilled meanwhile)
            return pipeline + staging if k["persistent"] != "off" else max(pipeline, staging)
        return pipeline + (self.threads(k) // 32 * 16 * 16 * 4 if k["instr"] == "wmma" else 0)

    def registers(self, k: dict, d=None) -> int:
        """A rough count: accumulators, one step's fragments (two with frag_buffers 2), staged copies, ~40
        for addresses; tf32x3 data (`d`) twice the fragments and their rounding's temporaries (64x64 warp tiles
        ran at 255 registers and 400 bytes of local memory on sm_90), and a second set of accumulators (a stage's
        products summed apart: 64x32 warp tiles 190 -> 241 registers); dmma the same count for its fp64 accumulators
        and widened fragments (64x32 warp tiles: 242 measured on sm_90)."""
        if k["instr"] == "wgmma":
            return k["wm"] // 64 * k["bn"] // 2 + 40
        ta, tb = self._tiles(k, ew=units(d) if d is not None else 1)   # tf32 data: twice the chunks
        staged = 4 * (ta["iters"] + tb["iters"]) if k["copy"] == "sync" and k["stages"] == 2 else 0
        if k["instr"] == "wmma":
            mi, ni = k["wm"] // 16, k["wn"] // 16
            return 8 * mi * ni + 8 * (mi + ni) + staged + 40
        mi, ni = k["wm"] // 16, k["wn"] // 8
        # tf32x3: split fragments and a stage's sums kept apart; dmma: fp64 accumulators and widened fragments (two
        # registers a value)
        extra = 2 * (4 * mi + 2 * ni) + 4 * mi * ni if d is not None and d.name in ("tf32x3", "dmma") else 0
        return 4 * mi * ni + (4 * mi + 2 * ni) * k["frag_buffers"] + extra + staged + 40

    # -- lowering ----------------------------------------------------------------------------------
    def template(self, knobs: dict) -> str:
        return "gemm_wgmma.cu.j2" if knobs["instr"] == "wgmma" else "gemm.cu.j2"

    def name_knobs(self, k: dict) -> dict:
        """wgmma kernels are named by the knobs they use; the others as before warp specialisation, the
        fragments' buffers, min_blocks and the staged epilogue (named only where not 1, 1 and direct)."""
        # as before split_k and persistent blocks existed
        k = {n: v for n, v in k.items() if (n, v) not in (("split_k", 1), ("persistent", "off"))}
        if k["instr"] == "wgmma":
            return {n: v for n, v in k.items() if n not in ("pad", "smem", "ldmatrix", "frag_buffers", "min_blocks")}
        # the knobs added since (fragments, registers, epilogue) only where they differ from the kernel before them
        return {n: v for n, v in k.items() if n not in ("ws", "cluster")
                and not (n, v) in (("frag_buffers", 1), ("min_blocks", 1), ("epilogue", "direct"))}

    def template_params(self, k: dict, types: Types, target: Target, layout: str = "NN") -> tuple[dict, int, int]:
        """With K in slices the main kernel is the one-slice kernel storing fp32 partial tiles (its output
        type float32, no epilogue), and the reduction converts to C's type and applies the epilogue."""
        if k["split_k"] == 1:
            p, smem, regs = self._params(k, types, target, layout)
            return dict(p, split_k=1, reduce_ep=None), smem, regs
        partial = Types(tuple((b, FLOAT32 if b in self.outputs else t) for b, t in types.buffers), types.acc)
        p, smem, regs = self._params(k, partial, target, layout)
        return dict(p, split_k=k["split_k"], ep=None, reduce_ep=p["ep"], c_out=types.output, reduce_vec=REDUCE_VEC,
                    **self._slices(Operands(layout), units(types.input))), smem, regs

    @staticmethod
    def _slices(o: Operands, ew: int = 1) -> dict:
        """Where a slice of K starts in A and B as stored (16-bit units past their first, `ew` an element): the
        main kernel's A and B shifted there read the slice as a product of K = klen, the stored rows' stride the
        whole K."""
        a, b = ("(size_t)kbeg * M" if o.a_t else "kbeg"), ("kbeg" if o.b_t else "(size_t)kbeg * N")
        return dict(a_slice=a if ew == 1 else f"({a}) * {ew}", b_slice=b if ew == 1 else f"({b}) * {ew}")

    def _params(self, k: dict, types: Types, target: Target, layout: str = "NN") -> tuple[dict, int, int]:
        d, o = types.input, types.output
        check(d.name in self.dtypes, "tensorize", "k.1", INTRINSICS[k["instr"]],
              limit=f"{INTRINSICS[k['instr']]} takes {', '.join(self.dtypes)} inputs, not {d.name}")
        if d.name == "bfloat16":
            target.require("bf16", "tensorize", "k.1", f"{INTRINSICS[k['instr']]} on bfloat16")
            if k["instr"] == "mma":
                target.require("mma_m16n8k16_bf16", "tensorize", "k.1", INTRINSICS["mma"])
        tf32, dmma = d.math == "tf32", d.math == "fp64"
        if tf32 or dmma:
            self._check_f32_data(k, d, target, layout)
        if k["instr"] == "wgmma":
            smem = self.shared_bytes(k, layout, o.itemsize)
            check(smem <= target.max_smem, "cache_write", "C", "shared",
                  limit=f"{smem} bytes of shared memory with C staged as {self._staged_size(k, o.itemsize)}-byte values > "
                        f"{target.max_smem} on {target.arch}")
            return self._wgmma_params(k, types, layout), smem, self.registers(k)
        ew = units(d)
        ta, tb = self._tiles(k, layout, ew)
        sm, sn, _ = SHAPES[k["instr"]]
        pipeline = 2 * k["stages"] * (ta["rows"] * ta["ld"] + tb["rows"] * tb["ld"])
        staged_type, staged_size = ("float", 4) if self.epilogue else (o.ctype, o.itemsize)   # as _wgmma_params
        p = dict(instr=k["instr"], bm=k["bm"], bn=k["bn"], bk=k["bk"], wm=k["wm"], wn=k["wn"], stages=k["stages"],
                 copy=k["copy"], ldmatrix=k["ldmatrix"], swizzle=k["swizzle"], threads=self.threads(k),
                 frag_buffers=k["frag_buffers"], min_blocks=k["min_blocks"], epilogue=k["epilogue"],
                 persistent=k["persistent"],
                 c_ld=self._c_ld(k, staged_size),
                 staged_type=staged_type, staged_rows=STAGED_ROWS,
                 warps_n=k["bn"] // k["wn"], mi=k["wm"] // sm, ni=k["wn"] // sn, ta=ta, tb=tb,
                 a_stage=ta["rows"] * ta["ld"], b_stage=tb["rows"] * tb["ld"], epilogue_offset=pipeline // 2,
                 in_ctype=d.ctype, in_header=d.header, out_header=o.header, out=o,
                 wtype=d.ctype, mma_fn=f"kg_mma_m16n8k16_{d.short}",
                 tf32=tf32, tf32x3=d.name == "tf32x3", dmma=dmma, kstep=8 if tf32 or dmma else 16,
                 **self._operands(Operands(layout), "ldk" if k["split_k"] > 1 else "K", ew),
                 **self.fusion_params(types),
                 batch_params=", int batch, long long stride_a, long long stride_b" if self.batched else "")
        if k["copy"] == "tma":   # a stage holds A's boxes, then B's: both tiles step by whole stages
            tma = self._tma_params(k, Operands(layout))
            p.update(tma, box_elems=64 * k["bk"], a_stage=tma["stage_bytes"] // 2, b_stage=tma["stage_bytes"] // 2)
        return p, self.shared_bytes(k, layout, ew=ew), self.registers(k, d)

    def _check_f32_data(self, k: dict, d, target: Target, layout: str) -> None:
        """fp32 data (tf32, tf32x3, dmma): mma.sync m16n8k8 on the per-tile kernel, each k8 step's fragments
        rounded (tf32; tf32x3 split) or widened to fp64 (dmma) in registers; its shared tiles hold fp32 values,
        twice the bytes of a 16-bit tile's."""
        shape = "m16n8k8 .f64 (DMMA)" if d.math == "fp64" else "m16n8k8 (tf32)"
        check(k["instr"] == "mma", "tensorize", "k.1", INTRINSICS[k["instr"]], allowed=INTRINSICS["mma"],
              limit=f"{d.name} data runs on mma.sync {shape}; the {k['instr']} path takes 16-bit inputs")
        target.require("mma_f64" if d.math == "fp64" else "mma_m16n8k8_tf32", "tensorize", "k.1",
                       f"mma.{shape} on {d.name}")
        check(k["frag_buffers"] == 1, "annotate", "warp_fragments", k["frag_buffers"], allowed="1",
              limit=f"{d.name} fragments are rounded where they are used, one k8 step at a time")
        check(k["copy"] != "tma", "annotate", "copy", "tma", allowed="cp_async, sync",
              limit=f"TMA fills 16-bit tiles; {d.name} data takes cp.async or register copies")
        check(k["persistent"] == "off", "annotate", "persistent", k["persistent"], allowed="off",
              limit=f"the persistent walk runs 16-bit tiles; {d.name} takes the per-tile kernel")
        smem = self.shared_bytes(k, layout, ew=2)
        check(smem <= target.max_smem, "double_buffer", "A", k["stages"],
              limit=f"{smem} bytes of shared memory for {d.name} tiles (4 bytes a value) > {target.max_smem} on {target.arch}")

    @staticmethod
    def _operands(o: Operands, ldk: str = "K", ew: int = 1) -> dict:
        """Where a block's stored tiles of A and B lie in global memory (lib/tc_copy.j2's tile_copy: the
        tile's first element, the stored rows' stride, the rows and columns left), `{k0}` the tile's first
        k; whether the shared tiles are transposed ([k][m] for A, [n][k] for B); the alignment rule.
        `ldk`: the stride of rows stored along K (a slice of K, K = klen, starts inside rows ldk long).
        Offsets, strides and columns count 16-bit units, `ew` an element (2: tf32 data's fp32 values)."""
        ga = (dict(src="A + (size_t)({k0}) * M + m0", ld="M", rows="K - ({k0})", cols="M - m0") if o.a_t else
              dict(src=f"A + (size_t)m0 * {ldk} + ({{k0}})", ld=ldk, rows="M - m0", cols="K - ({k0})"))
        gb = (dict(src=f"B + (size_t)n0 * {ldk} + ({{k0}})", ld=ldk, rows="N - n0", cols="K - ({k0})") if o.b_t else
              dict(src="B + (size_t)({k0}) * N + n0", ld="N", rows="K - ({k0})", cols="N - n0"))
        if ew > 1:
            for g in (ga, gb):
                base, _, offset = g["src"].partition(" + ")
                g.update(src=f"{base} + ({offset}) * {ew}", ld=f"{ew} * {g['ld']}", cols=f"{ew} * ({g['cols']})")
        widths = chunk_widths(2 * ew)
        return dict(ga=ga, gb=gb, a_t=o.a_t, b_t=o.b_t, aligned_note=o.condition(widths, ", "),
                    aligned_dims=o.dims_words(widths), layout_note="" if o.layout == "NN" else o.describe())

    @staticmethod
    def _tma(k: dict, o: Operands) -> dict:
        """TMA's view of A and B ((rows, cols) of the stored tensor by size name, the box's rows and cols)
        and how a stage's tile is assembled from boxes: (byte offset in the stage, x, y) with x the
        contiguous coordinate, `{kt}` the K tile. A stored as is is one bm x 64 box (K-major: 128-byte
        rows along K); transposed, bm/64 boxes of 64 k-rows x 64 m (M-major). B as is: bn/64 boxes of
        64 k-rows x 64 n (N-major); transposed, bn/64 boxes of 64 n-rows x 64 k (K-major). Either way
        a stage holds A's 2*bm*64 bytes, then B's, and each box is 2*64*64 bytes. With K in slices, tile
        kt of a block's slice is tile kt0 + kt of K."""
        bk, box = k["bk"], 2 * 64 * k["bk"]
        kt = ("(kt0 + {kt}) * %d" if k["split_k"] > 1 else "({kt}) * %d") % bk
        a_bytes = 2 * k["bm"] * bk
        if o.a_t:
            a = dict(shape=("K", "M"), box=(bk, 64), boxes=[(c * box, f"m0 + {64 * c}", kt) for c in range(k["bm"] // 64)])
        else:
            a = dict(shape=("M", "K"), box=(k["bm"], bk), boxes=[(0, kt, "m0")])
        if o.b_t:
            b = dict(shape=("N", "K"), box=(64, bk), boxes=[(a_bytes + c * box, kt, f"n0 + {64 * c}")
                                                             for c in range(k["bn"] // 64)])
        else:
            b = dict(shape=("K", "N"), box=(bk, 64), boxes=[(a_bytes + c * box, f"n0 + {64 * c}", kt)
                                                             for c in range(k["bn"] // 64)])
        return dict(A=a, B=b)

    @classmethod
    def _tma_params(cls, k: dict, o: Operands) -> dict:
        """What a TMA-fed kernel (wgmma, mma.sync by TMA) renders its stages from: the boxes of _tma, a stage's
        bytes and A's share of them, and TMA's alignment rule for the comments."""
        tma = cls._tma(k, o)
        return dict(a_boxes=tma["A"]["boxes"], b_boxes=tma["B"]["boxes"], stage_bytes=cls._wgmma_stage_bytes(k),
                    a_bytes=2 * k["bm"] * k["bk"], aligned_note=o.condition((8, 8, 8), ", "))

    @staticmethod
    def _wgmma_operands(k: dict, o: Operands) -> dict:
        """wgmma's shared-memory descriptors per operand: a K-major tile (128-byte rows along K: k16
        steps 32 bytes along the row, leading offset unused) or an MN-major one (rows along M or N: 64-wide
        boxes 2*64*64 bytes apart, k16 steps 16 rows = 2048 bytes, imm-trans 1); 8-row groups 1024 apart."""
        box = 2 * 64 * k["bk"]
        kmajor = dict(step=32, lbo=16)
        mnmajor = dict(step=2048, lbo=box)
        a_note = ("A: M-major, 64-column boxes %d bytes apart, 8-row groups 1024 apart, k16 steps 16 rows = 2048 "
                  "bytes." % box if o.a_t else "A: K-major, 8-row groups 1024 bytes apart, k16 steps 32 bytes along the row.")
        b_note = ("B: K-major, 8-row groups 1024 bytes apart, k16 steps 32 bytes along the row." if o.b_t else
                  "B: N-major,\n64-column boxes %d bytes apart, 8-row groups 1024 apart, k16 steps 16 rows = 2048 bytes." % box)
        return dict(a_desc=mnmajor if o.a_t else kmajor, b_desc=kmajor if o.b_t else mnmajor,
                    trans_a=int(o.a_t), trans_b=int(not o.b_t),
                    desc_note=f"{a_note} {b_note}".replace(". B: K-major,", ".\nB: K-major,").split("\n"))

    def _wgmma_params(self, k: dict, types: Types, layout: str = "NN") -> dict:
        d, o = types.input, types.output
        lay = Operands(layout)
        # With a fused epilogue that reads a residual the tile is staged as the fp32 accumulators, and the
        # epilogue runs on the way out, where a warp's residual reads are whole rows of C (in the fragment
        # layout they are 8 rows' 4-byte pieces: 1.10-1.31x the plain GEMM's time at 4096^3 on the H100);
        # without one it runs on the fragments before staging (_ep_in_registers).
        staged_size = self._staged_size(k, o.itemsize)
        staged_type = "float" if staged_size == 4 else o.ctype
        if k["epilogue"] == "smem" and k["persistent"] == "off":
            staged, stages = k["bm"] * self._c_ld(k, staged_size), k["stages"] * self._wgmma_stage_bytes(k)
            check(staged <= stages, "cache_write", "C", "shared",
                  limit=f"the staged C tile ({staged} bytes of {'float32 accumulators' if self.epilogue else o.name}) reuses the {stages} bytes of the stages")
        return dict(bm=k["bm"], bn=k["bn"], bk=k["bk"], wm=k["wm"], stages=k["stages"], swizzle=k["swizzle"],
                    ws=k["ws"], threads=self.threads(k), consumers=self._consumers(k), mi=k["wm"] // 64,
                    persistent=k["persistent"], staging_bytes=self._staging_bytes(k, staged_size),
                    pass_rows=self._pass_rows(k, staged_size),
                    b_box_bytes=2 * 64 * k["bk"], **self._tma_params(k, lay), **self._setmaxnreg(k), ab=d.short,
                    epilogue=k["epilogue"], c_ld=self._c_ld(k, staged_size), cluster=k["cluster"],
                    c_vec=self._c_vec(k, o.itemsize),
                    staged_type=staged_type, ep_regs=self._ep_in_registers(k),
                    in_ctype=d.ctype, in_header=d.header, out_header=o.header, out=o,
                    **self._wgmma_operands(k, lay), layout_note="" if layout == "NN" else lay.describe(),
                    **self.fusion_params(types))

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        k = dict(kernel.knobs)
        self.same_layout(kernel, problem)
        self.same_fusion(kernel, problem)
        o = Operands(kernel.layout)
        M, N, K = problem["M"], problem["N"], problem["K"]
        split = k["split_k"] > 1
        grid = (cdiv(N, k["bn"]), self._block_rows(M, k), problem.batch.count if problem.batch else k["split_k"])
        check_grid(self.name, problem, grid, k["bm"], k["swizzle"])
        sms = (target or default_target()).sms
        if k["persistent"] != "off" and k["instr"] == "wgmma":      # one block an SM (or a tile), walking the tiles
            grid = (min(grid[0] * grid[1], sms), 1, 1)
        # Rows start 16-byte aligned only when the stored rows' lengths (K and N for NN) are multiples of 8
        # halves; otherwise the kernel with element-wise global accesses (mma, wmma), or (wgmma: TMA cannot
        # read such rows) a copy of the operand with padded rows first.
        twin = o.twin(chunk_widths(problem.dtype("A").itemsize), problem, mixed=False)
        aligned = not twin.unaligned
        scalars = tuple(Scalar(n, "int", v) for n, v in (("M", M), ("N", N), ("K", K))) + self.fusion_scalars(problem)
        block = (self.threads(k), 1, 1)
        # With K in slices the main kernel stores partial tiles in the workspace; the reduction writes C.
        args = ("partials", "M", "N", "K") if split else ("C", "M", "N", "K") + self.fusion_args()
        out = problem.dtype("C").itemsize
        if k["instr"] != "wgmma" and k["copy"] != "tma":
            symbol = kernel.name + twin.suffix
            if k["persistent"] != "off" and aligned and self.walks(k, M, N, K):   # min_blocks an SM
                symbol, grid = kernel.name + "_persistent", (min(grid[0] * grid[1], k["min_blocks"] * sms), 1, 1)
            launches = (Launch(symbol, grid, block, ("A", "B") + args, kernel.static_smem),)
            align = (("A", 16), ("B", 16)) + (() if split else (("C", self._c_align(k, out)),)) if aligned else ()
            workspaces, maps = (), ()
        else:
            c_rows = N % self._c_vec(k, out) == 0    # C's rows stored in whole vectors
            # mma.sync fed by TMA has an element-wise twin for C's other rows; wgmma tests its stores
            symbol = kernel.name + ("_unaligned" if k["instr"] == "mma" and not c_rows else "")
            launches, workspaces, maps = self._tma_launches(kernel, problem, grid, block, args, symbol)
            align = tuple((b, 16) for b in "AB" if b not in pitch.staged(o, problem))
            if not split and c_rows:
                align += (("C", self._c_vec(k, out) * out),)
        if split:
            total, mn = reduce_launch(kernel.name + "_reduce", M, N, self.epilogue.inputs if self.epilogue else None)
            launches, scalars = launches + (total,), scalars + (mn,)
            workspaces += (splitk_workspace(k["split_k"], M, N),)
            align += (("C", REDUCE_VEC * out),)
        return Plan(kernel, problem, launches, workspaces, scalars, align, maps)

    @staticmethod
    def walks(k: dict, M, N, K):
        """Where mma.sync's persistent kernel runs (C expressions given strings): every tile inside C and K
        a whole number of rounds of the pipeline's stages, so that each tile's K tiles start at stage 0."""
        conds = ((M, k["bm"]), (N, k["bn"]), (K, k["bk"] * k["stages"]))
        if isinstance(M, str):
            return " && ".join(f"{d} % {m} == 0" for d, m in conds)
        return all(d % m == 0 for d, m in conds)

    def _tma_launches(self, kernel: Kernel, problem: Problem, grid, block, args, symbol: str):
        """The TMA-fed kernel's launch of `symbol`, after a copy into a padded workspace of each operand whose
        rows TMA cannot read (kernelgen/ops/pitch.py); (launches, workspaces, tensor maps)."""
        k, o = dict(kernel.knobs), Operands(kernel.layout)
        pads, workspaces, maps = [], [], []
        staged = pitch.staged(o, problem)
        d = problem.dtype("A")
        for name, b, rows, cols, box in self._maps(k, o):
            if b in staged:
                launch, ws = pitch.launch(kernel.name + "_pad", o, b, problem, d.storage)
                pads.append(launch)
                workspaces.append(ws)
                maps.append(TensorMap(name, ws.name, problem[rows], problem[cols], *box, pitch=pitch.pitch(problem[cols]),
                                      dtype=d.name))
            else:
                maps.append(TensorMap(name, b, problem[rows], problem[cols], *box))
        main = Launch(symbol, grid, block, (*(m.name for m in maps), *args), kernel.static_smem)
        return (*pads, main), tuple(workspaces), tuple(maps)

    @staticmethod
    def _setmaxnreg(k: dict) -> dict:
        """Registers a thread of the producer and of the consumer warpgroups keep (setmaxnreg): with the async
        epilogue the producer's spare warps store C (and apply the fused epilogue), which 40 do not hold."""
        if k["epilogue"] == "async":
            return dict(producer_regs=STORER_REGS, consumer_regs=CONSUMER_REGS - 16)
        return dict(producer_regs=PRODUCER_REGS, consumer_regs=CONSUMER_REGS)

    @staticmethod
    def _c_vec(k: dict, itemsize: int) -> int:
        """Elements of C the TMA-fed kernels' epilogue (wgmma, mma.sync by TMA) stores at once where N is a
        multiple of it: a 16-byte chunk (staged), a pair (direct); elsewhere one by one."""
        return 2 if k["epilogue"] == "direct" else 16 // itemsize

    @classmethod
    def _maps(cls, k: dict, o: Operands) -> list[tuple[str, str, str, str, tuple[int, int]]]:
        """The kernel's TMA descriptor arguments, in its parameter order: (name, buffer, the size naming
        the stored rows, the size naming the stored columns, (box rows, box cols)). The plan and the
        host launcher both encode these."""
        tma = cls._tma(k, o)
        return [(f"tm{b}", b, *tma[b]["shape"], tma[b]["box"]) for b in ("A", "B")]

    @staticmethod
    def _block_rows(M: int, k: dict) -> int:
        """Row tiles of the grid, in whole clusters (a cluster's extra blocks store nothing)."""
        return cdiv(cdiv(M, k["bm"]), k["cluster"]) * k["cluster"]

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k = dict(kernel.knobs)
        types = kernel.types or self.types()
        split = k["split_k"] > 1
        rows = f"kg_cdiv(M, {k['bm']})" if k["cluster"] == 1 else \
            f"kg_cdiv(kg_cdiv(M, {k['bm']}), {k['cluster']}) * {k['cluster']}"      # as _block_rows
        grid = (f"kg_cdiv(N, {k['bn']})", rows, "batch" if self.batched else str(k["split_k"]))
        requires = [(f"{rows} <= {MAX_GRID_Y}", f"gridDim.y holds {MAX_GRID_Y} block rows of {k['bm']}")]
        if k["swizzle"] > 1:
            requires.append((f"kg_ll({rows}) * kg_cdiv(N, {k['bn']}) <= {INT_MAX}",
                             "with swizzle the blocks' linear number is an int"))
        per_sm = "sms" if k["instr"] == "wgmma" else f"{k['min_blocks']} * sms"
        walk_grid = (f"kg_min({rows} * kg_cdiv(N, {k['bn']}), {per_sm})", "1", "1")   # as plan: persistent blocks
        if k["persistent"] != "off" and k["instr"] == "wgmma":
            grid = walk_grid
        block = (self.threads(k), 1, 1)
        out = types["C"].itemsize
        common = dict(arch=kernel.arch, sizes=("M", "N", "K"), buffers=self.recipe_buffers(kernel), layout=kernel.layout)
        args = ("partials", "M", "N", "K") if split else ("C", "M", "N", "K") + self.fusion_args()
        lets, workspaces, maps, note = (), (), (), ""
        if k["instr"] == "wgmma" or k["copy"] == "tma":
            vec = self._c_vec(k, out)
            mains = (((kernel.name, ""),) if k["instr"] == "wgmma" else
                     ((kernel.name, f"N % {vec} == 0"), (kernel.name + "_unaligned", f"N % {vec} != 0")))
            steps, workspaces, maps, alignment = self._tma_recipe(kernel, grid, block, args, mains)
            if not split:
                alignment += (("C", vec * out, f"N % {vec} == 0"),)
            note = ("the kernel declares its cluster (__cluster_dims__(1, %d, 1)), so a plain <<<>>> launch forms "
                    "clusters" % k["cluster"]) if k["cluster"] > 1 else ""
        else:
            ends = Operands(kernel.layout).twins(chunk_widths(types.input.itemsize), mixed=False)
            aligned = ends[0].when
            steps = tuple(Step(kernel.name + t.suffix, grid, block, ("A", "B") + args, kernel.static_smem, when=t.when)
                          for t in ends)
            if k["persistent"] != "off":
                walk = f"{aligned} && {self.walks(k, 'M', 'N', 'K')}"
                steps = (Step(kernel.name + "_persistent", walk_grid, block, ("A", "B") + args, kernel.static_smem,
                              when=walk), Step(kernel.name, grid, block, ("A", "B") + args, kernel.static_smem,
                                               when=f"{aligned} && !({walk})")) + steps[1:]
            alignment = (("A", 16, aligned), ("B", 16, aligned)) + (() if split else (("C", self._c_align(k, out), aligned),))
        if split:
            step, mn, ws = reduce_recipe(kernel.name + "_reduce", k["split_k"], self.epilogue.inputs if self.epilogue else None)
            steps, lets, workspaces = steps + (step,), (mn,), workspaces + (ws,)
            alignment += (("C", REDUCE_VEC * out, ""),)
        return self.fusion_recipe(Recipe(steps=steps, lets=lets, workspaces=workspaces, requires=tuple(requires),
                                         tensor_maps=maps, note=note, alignment=alignment, **common))

    def _tma_recipe(self, kernel: Kernel, grid, block, args, mains):
        """_tma_launches as a recipe, the main kernel one of `mains` ((symbol, when)): (steps, workspaces,
        tensor maps, alignment of A and B)."""
        from ..recipe import Map, Step
        k, o = dict(kernel.knobs), Operands(kernel.layout)
        types = kernel.types or self.types()
        pads, workspaces, maps, alignment = [], [], [], []
        for name, b, rows, cols, box in self._maps(k, o):
            step, ws, when = pitch.recipe(kernel.name + "_pad", o, b, types[b].ctype)
            pads.append(step)
            workspaces.append(ws)
            aligned = f"{o.lead(b)} % {pitch.PITCH} == 0"
            maps += [Map(name, b, types[b].name, rows, cols, *box, when=aligned),
                     Map(name, ws[0], types[b].name, rows, cols, *box, pitch=f"kg_cdiv({cols}, {pitch.PITCH}) * {pitch.PITCH}",
                         when=when)]
            alignment.append((b, 16, aligned))
        main = tuple(Step(symbol, grid, block, (*dict.fromkeys(m.name for m in maps), *args), kernel.static_smem, when=when)
                     for symbol, when in mains)
        return (*pads, *main), tuple(workspaces), tuple(maps), tuple(alignment)

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """The cheapest of a few tile families and numbers of K slices by a cost model of the shape and
        the target (kernelgen/ops/gemm_cost.py): wgmma where the target has it and the product is one
        (an operand TMA cannot read is copied into padded rows first), else mma.sync; smaller tiles where
        M or N is small, K in slices where the tiles cannot fill the SMs."""
        from .gemm_cost import choose
        return self.schedule_from_knobs(**dict(choose(self, problem, target or default_target()).knobs))

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # 1x1x1; ragged tiles with K and N not multiples of 8 (the element-wise kernel); K and N
        # multiples of 8 with ragged tiles (16-byte loads, zero-filled chunks); and sizes where the
        # default tile has a block wholly inside C (no bounds tests) beside ragged ones; and one whose block
        # inside C in M and N still tests its loads, K being no whole number of tiles (bk 16, 32 or 64).
        # K = 200: 7 tiles of the default bk 32 (13 of bk 16, 4 of bk 64, the last partial), so the
        # pipeline's stages wrap (no other size has more than 2 tiles of bk 32, fewer than the default 4
        # stages). K = 192: a whole number of split-K slices of whole tiles at split 3 (bk 32 or 64; also 2 and
        # 6 of bk 32), where a slice length rounded up one tile too far shows (no other K is a multiple of 96)
        return ({"M": 1, "N": 1, "K": 1}, {"M": 33, "N": 17, "K": 40}, {"M": 70, "N": 130, "K": 24},
                {"M": 33, "N": 72, "K": 37}, {"M": 136, "N": 264, "K": 64}, {"M": 130, "N": 136, "K": 40},
                {"M": 24, "N": 40, "K": 200}, {"M": 33, "N": 24, "K": 192})

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        # Small integers: exact in fp16 and bf16, and every fp32 partial sum is exact (|sum| <= 9K < 2^24),
        # so the fp32 result is the exact product and a 16-bit result is its correct rounding.
        d, shapes = problem.dtype("A"), self.input_shapes(problem)
        return {b: d.encode(rng.integers(-3, 4, size=shapes[b]).astype(np.float32)) for b in ("A", "B")}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"C": (problem["M"], problem["N"])}

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return Operands(problem.layout).stored(problem)      # as stored: K x M for A transposed

    device_reference = True     # validate on a GPU computes the float64 product there (xp=cupy)

    def reference(self, inputs, problem, xp=np):
        d = problem.dtype("A")
        a, b = Operands(problem.layout).product(d.decode(inputs["A"], xp), d.decode(inputs["B"], xp))
        return {"C": a @ b}

    error_measure = "max |C - ref| / (u |ref|), u the output's unit roundoff (1: half an ulp)"

    def error(self, name, out, ref, inputs, problem) -> float:
        """The worst element's error in units of half an ulp of the output type at the reference
        (u |ref|): 0 when exact, <= 1 when correctly rounded; any error where ref is 0 is infinite.
        Past 9K >= 2^24 the fp32 sums themselves may round: their bound is added to the denominator."""
        out = np.asarray(out, dtype=np.float64)
        if not np.all(np.isfinite(out)):
            return math.inf
        K = problem["K"]
        u = problem.dtype("C").unit_roundoff
        slack = 0.0 if 9 * K < 2 ** 24 else 9.0 * K * K * 2.0 ** -24
        diff = np.abs(out - ref)
        scale = u * np.abs(ref) + slack
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(diff == 0, 0.0, diff / scale)
        return float(ratio.max()) if ratio.size else 0.0

    def tolerance(self, problem: Problem) -> float:
        return 1.0

    def bytes_moved(self, problem: Problem) -> int:
        M, N, K = problem["M"], problem["N"], problem["K"]
        a = problem.dtype("A").itemsize
        return a * (M * K + K * N) + problem.dtype("C").itemsize * M * N

    def flops(self, problem: Problem) -> int:
        return 2 * problem["M"] * problem["N"] * problem["K"]

    def math(self, problem: Problem) -> str:
        return problem.dtype("A").math

    def vendor(self, dev_inputs, problem):
        # The same stored arrays, transposed as views (cuBLAS takes the transpose flags; nothing is copied
        # inside the timed call).
        lay = Operands(problem.layout)
        d, o = problem.dtype("A"), problem.dtype("C")
        try:
            import torch
        except ImportError:
            if d.name != "float16":
                return None
            a, b = lay.product(dev_inputs["A"], dev_inputs["B"])
            return "cupy.matmul (cuBLAS, fp16 out)", lambda: a @ b
        ta, tb = lay.product(torch_tensor(dev_inputs["A"], d), torch_tensor(dev_inputs["B"], d))
        if d.math in ("tf32", "fp64"):
            # tf32: cuBLAS with TF32 allowed; tf32x3 and dmma (fp32's accuracy or better): cuBLAS in fp32, TF32 off
            allow = d.name == "tf32"

            def matmul():
                before, torch.backends.cuda.matmul.allow_tf32 = torch.backends.cuda.matmul.allow_tf32, allow
                try:
                    return torch.matmul(ta, tb)
                finally:
                    torch.backends.cuda.matmul.allow_tf32 = before
            return f"torch.matmul (cuBLAS, fp32 data, TF32 {'on' if allow else 'off'})", matmul
        if o.name == "float32":
            try:   # torch >= 2.6: cuBLAS writes fp32 directly
                torch.mm(ta[:1, :1], tb[:1, :1], out_dtype=torch.float32)
                return "torch.mm (cuBLAS, fp32 out)", lambda: torch.mm(ta, tb, out_dtype=torch.float32)
            except (TypeError, RuntimeError):
                pass
        return f"torch.matmul (cuBLAS, {d.short} out)", lambda: torch.matmul(ta, tb)

    # -- ladders and search ------------------------------------------------------------------------
    def ladder(self) -> tuple[LadderStep, ...]:
        wmma = dict(instr="wmma", bm=64, bn=64, bk=32, wm=32, wn=32, stages=1, copy="sync", pad=8, smem="pad",
                    ldmatrix=False, swizzle=1)
        mma = dict(wmma, instr="mma", bm=128, bn=128, wm=64, wn=64, ldmatrix=True)
        xor = dict(mma, pad=0, smem="xor")
        pipe = dict(xor, copy="cp_async", stages=3)
        steps = [
            ("WMMA 16x16x16: 64x64 blocks of 32x32 warp tiles, shared tiles padded, copies through registers",
             wmma, "nvcuda::wmma fragments; C staged through shared memory to be converted and stored"),
            ("mma.sync m16n8k16 with ldmatrix: 128x128 blocks of 64x64 warp tiles, padded rows", mma,
             "fragments by ldmatrix.x4 (B .x4.trans), 128 fp32 accumulators a thread in registers"),
            ("XOR-swizzled shared memory instead of padding", xor,
             "16-byte chunks XOR the row: ldmatrix and the 16-byte stores are conflict-free, no padding"),
            ("multi-stage cp.async pipeline (3 stages)", pipe, "two tiles in flight while one is used"),
            ("4 cp.async stages, C staged through shared memory and stored in 16-byte row chunks",
             dict(self.default_knobs(), epilogue="smem"),
             "the best mma.sync schedule measured on the H100 (8-warp 128x256 blocks ran slower); the aligned "
             "kernel unrolls the pipeline's stages, so every shared address is a register set up once"),
        ]
        hopper = [
            ("wgmma m64n256k16 + TMA: 128x256 blocks, 2 warpgroups of 64 rows, 4 stages, thread 0 issues the copies",
             WGMMA_KNOBS, "sm_90a: A and B by TMA (128-byte swizzle), mbarrier pipeline, wgmma from shared memory"),
            ("warp specialisation: a producer warpgroup (40 registers) feeds 2 consumer warpgroups (232)",
             dict(WGMMA_KNOBS, ws=True), "setmaxnreg; the producer waits on the consumers' empty barriers"),
            ("C staged through shared memory, stored in 16-byte row chunks", dict(WGMMA_KNOBS, ws=True, epilogue="smem"),
             "cache_write(C, shared): the stages' memory holds the tile, padded rows, coalesced stores"),
            ("clusters of 2 blocks along M: each loads half of B's tile into both (TMA multicast); slower here",
             dict(WGMMA_HEURISTIC, cluster=2),
             "a third less L2-to-SM traffic, but a stage is free only when both blocks' consumers released it: "
             "the blocks wait on each other (0.56x cuBLAS against step 8's 0.96x on the H100)"),
            ("persistent blocks: one an SM walks the tiles, the producer loading the next tile during the epilogue "
             "(3 stages beside the staging areas of C)", dict(WGMMA_HEURISTIC, stages=3, persistent="coop"),
             "annotate(persistent, coop): the pipeline fills once a block, not once a tile; C staged 64 rows (fp32: "
             "32) at a time in an area of each warpgroup's own"),
            ("ping-pong consumers: each warpgroup a 128x128 tile of its own, main loops in turn",
             dict(WGMMA_HEURISTIC, bm=128, wm=128, bn=128, wn=128, persistent="pingpong"),
             "annotate(persistent, pingpong): one warpgroup's epilogue runs under the other's MMAs"),
        ]
        # The same mma.sync, its tiles brought by the TMA unit (sm_90): what the wgmma steps then keep
        tma = [("TMA feeding mma.sync: 256x128 blocks of 8 warps, K by 64 in 3 stages, an mbarrier a stage instead of "
                "the block barrier", dict(self.default_knobs(), bm=256, bk=64, stages=3, copy="tma", epilogue="smem"),
                "thread 0 issues each stage's TMA copies (128-byte swizzle: the layout ldmatrix reads conflict-free); "
                "a warp waits only for the stage it reads, no thread computes a copy address")]
        return tuple([LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps] +
                     [LadderStep(t, self.schedule_from_knobs(**k), n, arch="sm_90") for t, k, n in tma] +
                     [LadderStep(t, self.schedule_from_knobs(**k), n, arch="sm_90a") for t, k, n in hopper])

    def test_problems_for(self, sched: Schedule) -> tuple[dict, ...]:
        """wgmma schedules are tested on sizes whose rows TMA reads as they are (K and N multiples of 8),
        none a multiple of a tile, M = 1 among them, and on the awkward ones, whose operands the plan
        copies into padded rows first and whose C it stores at an odd N."""
        if self.knobs_from_schedule(sched)["instr"] != "wgmma":
            return self.test_problems()
        return ({"M": 1, "N": 8, "K": 8}, {"M": 33, "N": 72, "K": 40}, {"M": 136, "N": 264, "K": 64},
                {"M": 300, "N": 520, "K": 1000}, {"M": 256, "N": 512, "K": 512}) + self.test_problems()

    def space(self, problem: Problem, target: Target):
        base = self.default_knobs()
        tiles = ((128, 256, 64, 64), (256, 128, 64, 64), (128, 128, 64, 64), (128, 128, 64, 32), (128, 128, 32, 64),
                 (64, 128, 32, 64), (128, 64, 64, 32), (64, 64, 32, 32))
        pipes = ((1, "sync"), (2, "sync"), (2, "cp_async"), (3, "cp_async"), (4, "cp_async"))
        for bm, bn, wm, wn in tiles:
            for bk in (32, 64):
                for stages, copy in pipes:
                    for smem, pad in (("xor", 0), ("pad", 8)):
                        for swizzle in (1, 8):
                            yield dict(base, bm=bm, bn=bn, wm=wm, wn=wn, bk=bk, stages=stages, copy=copy,
                                       smem=smem, pad=pad, swizzle=swizzle)
                for stages in (3, 4):     # fragments across tiles and C staged, where the pipeline takes them
                    for swizzle in (1, 8):
                        yield dict(base, bm=bm, bn=bn, wm=wm, wn=wn, bk=bk, stages=stages, copy="cp_async",
                                   smem="xor", pad=0, swizzle=swizzle, frag_buffers=2, epilogue="smem")
        # persistent mma.sync walks (1.07-1.15x the per-tile kernel at K <= 512 on the H100, slower at long K;
        # blocks of 8 warps gain most): two 4-warp blocks an SM, or one of 8 warps
        for bm, bn, min_blocks in ((128, 128, 2), (256, 128, 1), (128, 256, 1)):
            for stages in (3, 4):
                for swizzle in (1, 8):
                    yield dict(base, bm=bm, bn=bn, stages=stages, swizzle=swizzle, epilogue="smem", persistent="coop",
                               min_blocks=min_blocks)
        for bm, bn, wm, wn in ((64, 64, 32, 32), (128, 128, 64, 64), (128, 128, 32, 32)):
            yield dict(base, instr="wmma", bm=bm, bn=bn, wm=wm, wn=wn, stages=2, copy="cp_async", smem="pad",
                       pad=8, ldmatrix=False, swizzle=8)
        if target.has("tma") and problem.batch is None:     # mma.sync fed by TMA (schedule_for leaves it to the tuner)
            for bm, bn, wn in ((256, 128, 64), (128, 256, 64), (128, 128, 64), (128, 128, 32)):
                for stages in (2, 3, 4, 5):
                    for swizzle in (1, 8):
                        for epilogue in ("direct", "smem"):
                            yield dict(base, bm=bm, bn=bn, wn=wn, bk=64, stages=stages, copy="tma", swizzle=swizzle,
                                       epilogue=epilogue)
        wgmma = target.has("wgmma") and problem.batch is None     # any size: unaligned operands are padded first
        for split_k in (2, 4, 8):        # K slices, for grids that cannot fill the SMs
            yield dict(base, split_k=split_k)
            if wgmma:
                yield dict(WGMMA_HEURISTIC, bm=64, wm=64, bn=128, wn=128, split_k=split_k)
        if wgmma:
            for bm, wm in ((128, 64), (128, 128), (64, 64), (256, 128)):
                for bn in (64, 128, 256):
                    for stages in (2, 3, 4):
                        for swizzle in (1, 8, 16):
                            for ws in (False, True):
                                yield dict(WGMMA_KNOBS, bm=bm, wm=wm, bn=bn, wn=bn, stages=stages, swizzle=swizzle, ws=ws)
            for persistent, bm, wm, bn, stages in (("coop", 128, 64, 256, 3), ("coop", 128, 64, 256, 4),
                                                   ("coop", 128, 64, 192, 4), ("pingpong", 128, 128, 128, 4),
                                                   ("pingpong", 64, 64, 256, 3)):
                for swizzle in (1, 8, 16):
                    for epilogue in ("direct", "smem") + (("async",) if persistent == "coop" else ()):
                        yield dict(WGMMA_HEURISTIC, bm=bm, wm=wm, bn=bn, wn=bn, stages=stages, swizzle=swizzle,
                                   epilogue=epilogue, persistent=persistent)
            for bm, wm, bn in ((128, 64, 256), (128, 64, 128), (256, 128, 128)):   # epilogues and clusters
                for stages in (3, 4):
                    for swizzle in (8, 16):
                        for ws in (False, True):
                            for epilogue, cluster in (("smem", 1), ("direct", 2), ("smem", 2)):
                                yield dict(WGMMA_KNOBS, bm=bm, wm=wm, bn=bn, wn=bn, stages=stages, swizzle=swizzle,
                                           ws=ws, epilogue=epilogue, cluster=cluster)
