"""Single-precision matrix product C[M,N] = A[M,K] @ B[K,N] (row-major), with the seed notes' ladder.

>>> from kernelgen.ops import get_op
>>> op = get_op("sgemm")
>>> s = op.schedule(layout="strided", wm=0, wn=0, bm=128, bn=128, tm=8, tn=8)
>>> print(s.to_python()[:93])
schedule("sgemm").split("i", 128, 64, 4).bind("i.0", "blockIdx.y").bind("i.2", "threadIdx.y")
>>> op.knobs_from_schedule(s)["tm"], op.threads(op.knobs_from_schedule(s))
(8, 256)

Loops are i (rows of C), j (columns of C) and k (the sum). How `split(i, ...)` lays a block's
rows over threads is decided by which loop is bound to a thread axis (j likewise, with blockIdx.x
and threadIdx.x):

    split(i, BM)             i.0 blocks (blockIdx.y), i.1 threads (threadIdx.y): one row each
    split(i, BM, TM)         i.1 threads (threadIdx.y), i.2 TM adjacent rows per thread
    split(i, BM, S, 4)       i.1 BM/S runs per thread, i.2 threads (threadIdx.y), i.3 4 rows:
                             a thread's rows are runs of 4 spaced S apart (seed 003's bank-conflict fix)
    split(i, BM, WM, S, 4)   i.1 warps (warp), i.2 WM/S runs, i.3 lanes (lane), i.4 4 rows: warp tiles
    split(i, BM, WM, S, 1)   the same with runs of 1 row: a warp's lanes on adjacent rows (K vectors, below)

`cache_read(A|B, shared)` with `split(k, BK)` stages K through shared memory; without it every
thread reads A and B from global memory (the naive kernel). `annotate("A.shared", "km")` stores A's
tile transposed so a thread's rows are adjacent (128-bit shared loads); `annotate("B.shared", "nk")` keeps B's
tile with its rows along K (as NT and TT store B: cp.async copies it 16 bytes at a time). A tile whose rows run
along K (A's mk, B's nk) is read 4 values of K at a time where the warp's lanes sit on adjacent rows (runs of 1:
`split(i, BM, WM, S, 1)`, `split(j, ...)` likewise; rows of a multiple of 4 floats): the K loop then takes 4 steps a
time, the other operand's 4 steps held in registers; `storage_align(A|B, pad)`
pads shared rows; `vectorize(A|B|C, 4)` makes global accesses 128-bit; `double_buffer(A|B, n)`
keeps n tiles in flight, copied through registers (`annotate("copy", "sync")`, n <= 2) or with
cp.async (`annotate("copy", "cp_async")`); `unroll(k.1)` unrolls the tile's K loop;
`annotate("min_blocks", n)` caps registers so n blocks fit an SM; `swizzle(g)` walks blocks in
groups of g block rows so neighbours share tiles in L2; `annotate("split_k", s)` cuts K into s slices
over blockIdx.z (for grids too small to fill the SMs: long K, skinny or small products), summed as
`annotate("reduce_k", ...)` says: `atomic` adds them into C after a launch zeroes it (the order of the
additions, and so C's last bits, can differ between runs), `workspace` stores each slice's partial
tile in a slab of a workspace and a second kernel sums the slabs in order (the same bits every run).
`annotate("stream_k", True)` (K whole) evens out a last wave the tiles fill only in part: the last partial wave's
tiles and one whole wave before them are cut along K into equal runs, one for each block the SMs hold at once, so
every SM finishes together; a tile two blocks share is summed by the second to finish, from both partials (the
same bits every run; ops/streamk.py, templates/lib/streamk.j2).
The dot layout (`layout=dot`, shared false, layout NT only: x . W^T, both operands' rows along K) binds K to
lanes instead: `split(i, BM, TM).bind(i.1, warp)` and `split(j, BN, TN).bind(j.1, warp)` give each warp a TM x TN
tile of C, `split(k, 128, 4).bind(k.1, lane)` gives each lane 4 floats of every 128 of K (one 128-bit load a
row), and `reduction(k, shuffle)` adds the lanes' shares; `unroll(k.0, n)` loads n chunks a trip and
`double_buffer(A|B, 2)` loads the streamed operand's next trip during this one's math. It serves products with
a side of 1-16 (nn.Linear at a few tokens): the thin side's rows are held (read by every warp of the block,
from L1), the other side's stream from DRAM once, with no shared memory and no barrier.
Tile 0 of K holds K's remainder and is the only tile whose loads are tested; blocks wholly inside C
test nothing else, and blocks on an edge of C clamp their loads into C and test only their stores.
Inputs are small integers, so the check against the float64 reference is exact. `schedule_for` is a
cost model over tile families and K slices: kernelgen/ops/sgemm_cost.py.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np

from ..errors import ScheduleError, UsageError, check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import INT_MAX, LAYOUTS as OPERAND_LAYOUTS, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, \
    Scalar, cdiv
from .knobs import Prim, Range
from .operands import Operands, mixed_twins
from .fusion import Fusing
from .splitk import MAX_SPLIT_K, reduce_launch, reduce_recipe, workspace as splitk_workspace
from .streamk import STREAM_K_ARGS, stream_k_blocks, stream_k_recipe, stream_k_workspaces
from ..dtypes import FLOAT32, Types
from ..target import Target, default_target

LAYOUTS = ("contiguous", "strided", "warp", "dot")
DOT_CHUNK = 128          # the dot layout's K a warp reads at once: 32 lanes of 4 floats (one 128-bit load each)
TILES = Prim("split", ("i", "j"), args="BM | BM, TM | BM, S, 4 | BM, WM, S, 4 (j alike: BN, TN, WN)")
SHARED = ("shared", (True,))      # the knobs of the shared-memory kernel apply with these
RUN = 4                  # rows (columns) per run in the strided and warp layouts: one 128-bit shared load
RUNS = (4, 1)            # the warp layout's runs: 4 (vectors along M or N), or 1 (lanes on adjacent rows: K vectors)
MAX_GRID_Y = 65535
REDUCE_K = ("atomic", "workspace")
# Block tiles: powers of two (1-4: the dot layout's single warps over a side of C that thin), and the
# multiples of 8 between them that fit a thin side of C (N = 35 in 40 columns, not 64) as 8 threads of 3,
# 5, 6 or 7 (sgemm_cost.fitted_families).
BLOCK_TILES = (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 128, 256)
THREAD_TILES = (1, 2, 3, 4, 5, 6, 7, 8, 16)


def powers_of_two(values: tuple[int, ...]) -> tuple[int, ...]:
    """The values the default tuning space tries of a tile knob (the fitted widths come from the cost model)."""
    return tuple(v for v in values if v & (v - 1) == 0)


def check_grid(op: str, problem: Problem, grid: tuple[int, int, int], bm: int, swizzle: int,
               stream_k: bool = False) -> None:
    """The block rows fit gridDim.y; with grouped block order (swizzle > 1) the blocks' linear number,
    blockIdx.y * gridDim.x + blockIdx.x, fits the kernel's int (sgemm and gemm); with stream-K, which numbers
    the tiles in one int, so does their count."""
    if stream_k and grid[0] * grid[1] > INT_MAX:
        raise UsageError(f"{op}: M={problem['M']}, N={problem['N']} make {grid[0] * grid[1]} tiles; stream-K numbers "
                         f"them as an int: at most {INT_MAX} (use stream_k False)")
    if grid[1] > MAX_GRID_Y:
        raise UsageError(f"{op}: M={problem['M']} needs {grid[1]} block rows of {bm}; the grid holds {MAX_GRID_Y} "
                         f"(M <= {MAX_GRID_Y * bm} with bm={bm})")
    if swizzle > 1 and grid[0] * grid[1] > INT_MAX:
        raise UsageError(f"{op}: M={problem['M']}, N={problem['N']} make {grid[0] * grid[1]} blocks; with swizzle "
                         f"{swizzle} their number is an int: at most {INT_MAX} (use swizzle 1)")


class Sgemm(Fusing, Op):
    name = "sgemm"
    summary = "C[M,N] = A[M,K] @ B[K,N], float32, row-major; A and B each as is or transposed (--layout)"
    dims = (Dim("M", 2048, 131, maximum=MAX_GRID_Y * 256, why=f"gridDim.y holds {MAX_GRID_Y} block rows of at most 256; "
                f"a schedule's own limit is {MAX_GRID_Y} x its bm"),
            Dim("N", 2048, 67, maximum=INT_MAX - 256, why="the kernel's int column index runs up to a block tile (256) past N"),
            Dim("K", 1024, 37, maximum=INT_MAX - 256, why="K is rounded up to whole K tiles (up to 256) in int"))
    loops = ("i", "j", "k")
    inputs = ("A", "B")
    outputs = ("C",)
    layouts = OPERAND_LAYOUTS
    fuses = ("epilogue", "batch")
    knobs = (
        Knob("shared", True, (False, True), "stage A and B tiles in shared memory (else: the naive kernel)", "s",
             Prim("cache_read", ("A", "B"), absent=False, values=((True, "shared"),))),
        Knob("bm", 256, BLOCK_TILES, "rows of C per block (24-56: a thin M fitted, contiguous layout)", "bm", TILES,
             tune=powers_of_two(BLOCK_TILES)),
        Knob("bn", 128, BLOCK_TILES, "columns of C per block (24-56: a thin N fitted, contiguous layout)", "bn", TILES,
             tune=powers_of_two(BLOCK_TILES)),
        Knob("tm", 16, THREAD_TILES, "rows of C per thread", "tm", TILES, tune=powers_of_two(THREAD_TILES)),
        Knob("tn", 8, THREAD_TILES, "columns of C per thread", "tn", TILES, tune=powers_of_two(THREAD_TILES)),
        Knob("layout", "warp", LAYOUTS, "how thread tiles sit in the block tile: the split's form and the loop bound "
             "to threads (see the module doc); dot: a warp's lanes split K (layout NT, without shared)", "l", TILES),
        Knob("wm", 64, (0, 8, 16, 32, 64, 128), "rows per warp tile (layout warp; else 0)", "wm", TILES),
        Knob("wn", 64, (0, 8, 16, 32, 64, 128), "columns per warp tile (layout warp; else 0)", "wn", TILES),
        Knob("bk", 8, (0, 8, 16, 32), "K per shared tile; 0 (without shared) k is not split", "bk",
             Prim("split", "k", args="BK"), when=SHARED, unused=0),
        Knob("a_layout", "km", ("mk", "km"), "A's shared tile: mk as in memory, km transposed", "a",
             Prim("annotate", "A.shared", absent="mk", always=True), when=SHARED, unused="mk"),
        Knob("b_layout", "kn", ("kn", "nk"), "B's shared tile: kn as NN stores B, nk with rows along K (as NT and TT "
             "store B: cp.async copies it 16 bytes at a time)", "b", Prim("annotate", "B.shared", absent="kn"),
             when=SHARED, unused="kn"),
        Knob("run_m", 4, RUNS, "adjacent rows of a thread's tile (layout warp): 4 (128-bit shared loads along M) or "
             "1 (a warp's lanes on adjacent rows: A's mk tile read 4 values of K at a time, without bank conflicts)",
             "rm", TILES, when=("layout", ("warp",)), unused=4),
        Knob("run_n", 4, RUNS, "adjacent columns of a thread's tile (layout warp): 4 or 1 (B's nk tile read 4 values "
             "of K at a time; C stored a float at a time)", "rn", TILES, when=("layout", ("warp",)), unused=4),
        Knob("pad_a", 4, (0, 1, 2, 4, 8), "floats of padding per shared row of A", "pa",
             Prim("storage_align", "A", absent=0, always=True), when=SHARED, unused=0),
        Knob("pad_b", 0, (0, 1, 2, 4, 8), "floats of padding per shared row of B", "pb",
             Prim("storage_align", "B", absent=0, always=True), when=SHARED, unused=0),
        Knob("vec_a", 4, (1, 2, 4), "floats per global load of A", "va",
             Prim("vectorize", "A", absent=1, always=True), when=SHARED, unused=1),
        Knob("vec_b", 4, (1, 2, 4), "floats per global load of B", "vb",
             Prim("vectorize", "B", absent=1, always=True), when=SHARED, unused=1),
        Knob("vec_c", 4, (1, 2, 4), "floats per global store of C", "vc",
             Prim("vectorize", "C", absent=1, always=True), when=SHARED, unused=1),
        Knob("stages", 2, (1, 2, 3, 4), "shared tiles in flight (dot: 2 loads the stream's next trip during this "
             "trip's math)", "st", Prim("double_buffer", ("A", "B"), absent=1, always=True),
             when=(SHARED, ("layout", ("dot",))), unused=1),
        Knob("copy", "sync", ("sync", "cp_async"), "global->shared copy through registers, or cp.async", "c",
             Prim("annotate", "copy", absent="sync", always=True), when=SHARED, unused="sync"),
        Knob("unroll_k", 0, (0, 1, 2, 4), "unroll the K loop inside a tile: 0 fully (naive: unroll(k, n); dot: unroll(k.0, n), chunks "
             "of 128 a lane loads a trip, 0 one)", "u",
             Prim("unroll", "k.1", absent=0, always=True)),
        Knob("min_blocks", 1, (1, 2, 3, 4), "blocks per SM the registers must allow (> 1: a __maxnreg__ budget)", "mb",
             Prim("annotate", "min_blocks", absent=1)),
        Knob("swizzle", 8, (1, 2, 4, 8, 16), "block rows per group when walking the blocks (L2 reuse)", "sw",
             Prim("swizzle", absent=1)),
        Knob("split_k", 1, Range(1, MAX_SPLIT_K), "slices of K, one per blockIdx.z, summed as reduce_k says: more, "
             "shorter blocks where the tiles cannot fill the SMs (long K, skinny or small products)", "sk",
             Prim("annotate", "split_k", absent=1), tune=(1, 2, 3, 4, 8)),
        Knob("reduce_k", "atomic", REDUCE_K, "how the K slices are summed: atomic (added into C, zeroed first; the "
             "order of the additions, and so C's last bits, can differ between runs) or workspace (each slice "
             "stores its partial tile in a workspace slab, a second kernel sums the slabs in order: the same bits "
             "every run)", "r", Prim("annotate", "reduce_k", absent="atomic"), when=("split_k", Range(2, MAX_SPLIT_K)),
             unused="atomic"),
        Knob("stream_k", False, (False, True), "stream-K (K whole, one product): where the tiles fill their last "
             "wave only in part, that wave's tiles and one whole wave before them are cut along K into equal runs of "
             "K tiles, one for each block the SMs hold at once, so every SM finishes together; a tile two "
             "blocks share is summed by the second to finish (the same bits every run)", "stk",
             Prim("annotate", "stream_k", absent=False), when=SHARED, unused=False),
    )
    structure_help = ("split(i, BM) and bind(i.1, threadIdx.y): one row a thread; split(i, BM, TM): TM adjacent rows; "
                      "split(i, BM, S, 4) with bind(i.2, threadIdx.y): runs of 4 rows spaced S apart; "
                      "split(i, BM, WM, S, 4 | 1) with bind(i.1, warp), bind(i.3, lane): warp tiles (runs of 1: K "
                      "vectors); j likewise "
                      "(blockIdx.x, threadIdx.x)")

    def all_loops(self) -> tuple[str, ...]:
        return self.loops + tuple(f"{l}.{i}" for l in self.loops for i in range(5))

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        s = schedule(self.name)
        for loop, b, t, w, thread_axis in (("i", k["bm"], k["tm"], k["wm"], "y"), ("j", k["bn"], k["tn"], k["wn"], "x")):
            # (a split written by hand cannot say this: its innermost factor is the run itself)
            run = self._run(k, "m" if loop == "i" else "n")
            check(k["layout"] in ("contiguous", "dot") or t % run == 0, "split", loop, f"t{'mn'[loop == 'j']}={t}",
                  limit=f"the {k['layout']} layout gives a thread runs of {run} adjacent {('rows', 'columns')[loop == 'j']}",
                  allowed=f"multiples of {run}, or layout contiguous or dot")
            if k["layout"] == "warp":
                s = (s.split(loop, b, w, w * run // max(t, 1), run).bind(f"{loop}.0", f"blockIdx.{thread_axis}")
                     .bind(f"{loop}.1", "warp").bind(f"{loop}.3", "lane"))
            elif k["layout"] == "dot":      # warps of t rows (columns), their lanes along K (below)
                s = s.split(loop, b, t).bind(f"{loop}.0", f"blockIdx.{thread_axis}").bind(f"{loop}.1", "warp")
            elif k["layout"] == "strided":
                s = (s.split(loop, b, b * RUN // max(t, 1), RUN).bind(f"{loop}.0", f"blockIdx.{thread_axis}")
                     .bind(f"{loop}.2", f"threadIdx.{thread_axis}"))
            else:
                s = (s.split(loop, b, t) if t > 1 else s.split(loop, b))
                s = s.bind(f"{loop}.0", f"blockIdx.{thread_axis}").bind(f"{loop}.1", f"threadIdx.{thread_axis}")
        if k["layout"] == "dot":
            s = s.split("k", DOT_CHUNK, 4).bind("k.1", "lane").reduction("k", "shuffle")
            s = s.unroll("k.0", k["unroll_k"]) if k["unroll_k"] != 0 else s
            return self.put(s, k, "shared", "stages", "min_blocks", "split_k", "reduce_k", "swizzle")
        if not k["shared"]:
            s = s.unroll("k", k["unroll_k"]) if k["unroll_k"] != 0 else s
            return self.put(s, k, "min_blocks", "split_k", "reduce_k", "swizzle")
        return self.put(s.split("k", k["bk"]), k, "shared", "a_layout", "b_layout", "pad_a", "pad_b", "vec_a", "vec_b",
                        "vec_c", "stages", "copy", "unroll_k", "min_blocks", "split_k", "reduce_k", "swizzle",
                        "stream_k")

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """The cheapest of a few tile families and numbers of K slices by a cost model of the shape and
        the target: wave quantisation over target.sms, loads in flight per latency, a roofline, the
        price of summing the slices (a workspace, so C's bits repeat between runs, unless atomics are
        clearly faster). The model, its constants and the regimes it yields: kernelgen/ops/sgemm_cost.py."""
        from .sgemm_cost import choose
        k = dict(choose(self, problem, target or default_target()).knobs)
        if problem.batch is not None:          # the products take blockIdx.z
            k["split_k"], k["reduce_k"] = 1, "atomic"
        elif problem.epilogue and k["split_k"] > 1:    # applied once, after the slices are summed in order
            k["reduce_k"] = "workspace"
        return self.schedule_from_knobs(**k)

    @staticmethod
    def layout_knobs(layout: str, copy: str = "sync", bm: int = 256) -> dict:
        """What an operand layout changes in a schedule of `copy` and `bm` rows a block. B stored transposed
        is loaded along K and stored transposed into B's [k][n] tile, 4 floats of a column each: rows
        padded 4 floats put the 16 columns a warp writes at once in distinct banks (unpadded: 2-way
        conflicts). A block makes bm FMAs per value of B it stores, so the conflicts weigh where bm is
        small: padded rows ran 3-7% faster at bm 16-64 (split K over skinny M) and 1-5% slower at bm
        128-256 (H100, bench_results/2026-11-24-s12/: sgemm_nt_pad.md, gemm_suite_*.md), where they
        stay unpadded. (A stored transposed needs nothing: its rows run along M, as the default km tile
        does.) cp.async copies without transposing in registers: A stored transposed goes 16 bytes at a
        time into the km tile, B stored transposed 4 bytes at a time into padded rows."""
        o = Operands(layout)
        knobs = dict(pad_b=4) if o.b_t and (copy == "cp_async" or bm <= 64) else {}
        if copy == "cp_async":
            knobs.update({"a_layout": "km", "run_m": RUN} if o.a_t else {}, **({"vec_b": 1} if o.b_t else {}))
        return knobs

    def _read_dim(self, r: ScheduleReader, loop: str, axis: str, default: tuple) -> tuple[str, int, int, int, int]:
        """(layout, block extent, thread extent, warp extent, run) of loop i or j."""
        f = r.split(loop, (1, 2, 3, 4), default)
        r.expect("bind", f"{loop}.0", f"blockIdx.{axis}")
        if len(f) <= 2:
            by = r.read("bind", f"{loop}.1", f"threadIdx.{axis}", (f"threadIdx.{axis}", "warp"))
            return "dot" if by == "warp" else "contiguous", f[0], f[1] if len(f) == 2 else 1, 0, RUN
        if len(f) == 3:
            check(f[-1] == RUN, "split", loop, f, limit=f"the innermost factor is a run of {RUN} (one 128-bit load)")
            check(f[1] > 0 and f[0] % f[1] == 0, "split", loop, f, limit="the run stride S divides the block extent")
            r.expect("bind", f"{loop}.2", f"threadIdx.{axis}")
            return "strided", f[0], f[0] // f[1] * RUN, 0, RUN
        check(f[-1] in RUNS, "split", loop, f, allowed=" or ".join(map(str, RUNS)),
              limit="the innermost factor is a run: 4 adjacent rows (one 128-bit load) or 1 (lanes on adjacent rows)")
        check(f[2] > 0 and f[0] % f[1] == 0 and f[1] % f[2] == 0, "split", loop, f,
              limit="each factor divides the one before it (block, warp, run stride)")
        r.expect("bind", f"{loop}.1", "warp")
        r.expect("bind", f"{loop}.3", "lane")
        return "warp", f[0], f[1] // f[2] * f[-1], f[1], f[-1]

    def read_knobs(self, r: ScheduleReader) -> dict:
        li, bm, tm, wm, run_m = self._read_dim(r, "i", "y", (128, 8))
        lj, bn, tn, wn, run_n = self._read_dim(r, "j", "x", (128, 8))
        layouts = {li, lj}
        check(len(layouts) == 1, "split", "j", lj, limit=f"i and j use the same layout; split(i) gives {li}")
        k = dict(shared=self.take(r, "shared"), bm=bm, bn=bn, tm=tm, tn=tn, layout=li, wm=wm, wn=wn, run_m=run_m,
                 run_n=run_n)
        if li == "dot":
            check(not k["shared"], "cache_read", "A", "shared",
                  limit="the dot layout reads A and B from global memory (its lanes split K; nothing is staged)")
            f = r.split("k", 2, (DOT_CHUNK, 4))
            check(f == (DOT_CHUNK, 4), "split", "k", f, allowed=f"({DOT_CHUNK}, 4)",
                  limit=f"the dot layout's 32 lanes take 4 floats each of every {DOT_CHUNK} of K")
            r.expect("bind", "k.1", "lane")
            check(r.read("reduction", "k", None) == "shuffle", "reduction", "k", None, allowed="shuffle",
                  limit="the dot layout's lanes each sum a share of K: their sums are added by shuffles")
            return dict(k, unroll_k=r.read("unroll", "k.0", 0))
        if not k["shared"]:
            return dict(k, unroll_k=r.read("unroll", "k", 0))
        (bk,) = r.split("k", 1, (8,))
        return dict(k, bk=bk)

    # -- legality ----------------------------------------------------------------------------------
    def check_knobs(self, k: dict, target: Target, layout: str = "NN") -> None:
        self._check_fusion(k)
        for loop, b, t, w in (("i", k["bm"], k["tm"], k["wm"]), ("j", k["bn"], k["tn"], k["wn"])):
            check(t >= 1 and b % t == 0, "split", loop, (b, t), limit=f"the thread tile {t} divides the block tile {b}")
            if k["layout"] == "warp":
                check(w % t == 0 and b % w == 0, "split", loop, (b, w, t),
                      limit="the warp tile divides the block tile and is a whole number of thread tiles")
        threads = self.threads(k)
        check(threads * k["min_blocks"] <= 2048, "annotate", "min_blocks", k["min_blocks"],
              limit=f"{k['min_blocks']} blocks of {threads} threads exceed 2048 threads per SM")
        check(threads <= target.max_threads, "split", "i", f"{threads} threads",
              limit=f"{target.max_threads} threads per block on {target.arch}")
        if k["layout"] == "warp":
            lanes = (k["wm"] // k["tm"]) * (k["wn"] // k["tn"])
            check(lanes == 32, "split", "i", f"warp tile {k['wm']}x{k['wn']} of {k['tm']}x{k['tn']} thread tiles",
                  limit=f"a warp tile holds 32 thread tiles, this one {lanes}")
        if k["layout"] == "dot":
            self._check_dot(k, layout)
            return
        if not k["shared"]:
            check(k["tm"] == 1 and k["tn"] == 1, "cache_read", "A", None,
                  limit=f"without shared memory each thread computes one element, not {k['tm']}x{k['tn']}")
            check(k["split_k"] == 1, "annotate", "split_k", k["split_k"], allowed="1",
                  limit="the naive kernel sums each element's whole K in one thread (slices of K need "
                        "cache_read(A|B, shared) or the dot layout)")
            return
        bk, va, vb, vc = k["bk"], k["vec_a"], k["vec_b"], k["vec_c"]
        o = Operands(layout)
        check(bk >= 1, "split", "k", bk, limit="at least 1")
        if o.a_t:
            check(k["bm"] % va == 0, "vectorize", "A", va,
                  limit=f"a vector of A (stored transposed, layout {layout}) lies in one row of the {k['bm']}-wide M tile")
        else:
            check(bk % va == 0, "vectorize", "A", va,
                  limit=f"a vector of A lies in one row of the {bk}-wide K tile")
        if o.b_t:
            check(bk % vb == 0, "vectorize", "B", vb,
                  limit=f"a vector of B (stored transposed, layout {layout}) lies in one row of the {bk}-wide K tile")
        else:
            check(k["bn"] % vb == 0, "vectorize", "B", vb,
                  limit=f"a vector of B lies in one row of the {k['bn']}-wide tile")
        run_n = self._run(k, "n")
        check(run_n % vc == 0, "vectorize", "C", vc, limit=f"a vector of C lies in a run of {run_n} adjacent columns")
        if k["copy"] == "cp_async":
            target.require("cp_async", "annotate", "copy", "cp_async")
            check(k["stages"] >= 2, "double_buffer", "A", k["stages"], limit="cp.async pipelines need 2..4 stages")
            check(va in (1, 4) and vb in (1, 4), "vectorize", "A" if va not in (1, 4) else "B", (va, vb),
                  limit="cp.async copies 4 or 16 bytes", allowed="1, 4")
            # cp.async cannot transpose: an operand its shared tile stores transposed is copied 4 bytes at a time
            a_t_store, b_t_store = self._stores_transposed(k, o)
            check(va == 1 or not a_t_store, "vectorize", "A", va, allowed="1", limit="cp.async cannot transpose: " + (
                f"A stored transposed (layout {layout}) into annotate(A.shared, mk) is copied 4 bytes at a time"
                if o.a_t else "annotate(A.shared, km) copies A 4 bytes at a time"))
            check(vb == 1 or not b_t_store, "vectorize", "B", vb, allowed="1", limit="cp.async cannot transpose: " + (
                f"B stored transposed (layout {layout}) is copied into its [k][n] tile 4 bytes at a time"
                if o.b_t else f"B as stored in layout {layout} (rows along N) is copied into annotate(B.shared, nk) "
                              "4 bytes at a time"))
            for buf, v, ld in (("A", va, self._lda(k)), ("B", vb, self._ldb(k))):
                check(v == 1 or ld % 4 == 0, "storage_align", buf, k[f"pad_{buf.lower()}"],
                      limit=f"16-byte cp.async needs shared rows of a multiple of 4 floats, here {ld}")
        else:
            check(k["stages"] <= 2, "double_buffer", "A", k["stages"],
                  limit="copies through registers keep at most 2 stages; use annotate(copy, cp_async)", allowed="1, 2")
        smem = self.shared_bytes(k)
        check(smem <= target.max_smem, "double_buffer", "A", k["stages"],
              limit=f"{smem} bytes of shared memory > {target.max_smem} on {target.arch}")

    @staticmethod
    def _check_dot(k: dict, layout: str) -> None:
        """The dot layout reads a row of A and a row of B along K in each lane: both stored along K (NT)."""
        check(layout == "NT", "split", "k", "lanes (layout dot)", allowed="operand layout NT",
              limit=f"the dot layout's lanes read rows of A and of B along K: both stored K-contiguous "
                    f"(layout NT, x . W^T), not {layout}")
        check(k["stages"] <= 2, "double_buffer", "B", k["stages"], allowed="1, 2",
              limit="the dot layout keeps at most the stream's next trip in registers")

    def _check_fusion(self, k: dict) -> None:
        """An epilogue is applied once, after the slices of K are summed: atomics leave no pass after
        the sum, so they are refused; a batch takes blockIdx.z, which the slices would share."""
        if k["split_k"] > 1 and self.epilogue and k["reduce_k"] == "atomic":
            raise ScheduleError("annotate", "reduce_k", "atomic", allowed="workspace",
                                limit=f"the epilogue {self.epilogue.expr!r} runs once on the summed slices of K; "
                                      "atomics add into C with no pass after them")
        if k["split_k"] > 1 and self.batched:
            raise ScheduleError("annotate", "split_k", k["split_k"], allowed="1",
                                limit="a batched product runs its products on blockIdx.z, where the slices of K would go")
        if k["stream_k"] and k["split_k"] > 1:
            raise ScheduleError("annotate", "stream_k", True, allowed="False with split_k > 1",
                                limit=f"stream-K cuts K into runs of its own; split_k={k['split_k']} cuts it into slices")
        if k["stream_k"] and self.batched:
            raise ScheduleError("annotate", "stream_k", True, allowed="False",
                                limit="stream-K walks one product's tiles; a batched product runs its products on blockIdx.z")

    def name_knobs(self, knobs: dict) -> dict:
        # One slice of K is how every kernel was named before split_k existed, atomics how every split kernel
        # was named before reduce_k, B's kn tile and runs of 4 how every kernel was before K vectors, tiles one a
        # block how every kernel was before stream-K: keep those names.
        before = {"split_k": 1, "reduce_k": "atomic", "b_layout": "kn", "run_m": RUN, "run_n": RUN, "stream_k": False}
        return {n: v for n, v in knobs.items() if n not in before or v != before[n]}

    # -- derived sizes -----------------------------------------------------------------------------
    @staticmethod
    def threads(k: dict) -> int:
        if k["layout"] == "warp":
            return 32 * (k["bm"] // max(k["wm"], 1)) * (k["bn"] // max(k["wn"], 1))
        lanes = 32 if k["layout"] == "dot" else 1        # dot: a warp a thread tile
        return lanes * (k["bm"] // k["tm"]) * (k["bn"] // k["tn"])

    @staticmethod
    def _run(k: dict, dim: str) -> int:
        """Adjacent rows (dim m) or columns (n) of one thread's tile."""
        t = k["tm" if dim == "m" else "tn"]
        if k["layout"] == "warp":
            return k["run_" + dim]
        return t if k["layout"] == "contiguous" else RUN

    @staticmethod
    def _lda(k: dict) -> int:
        return (k["bm"] if k["a_layout"] == "km" else k["bk"]) + k["pad_a"]

    @staticmethod
    def _ldb(k: dict) -> int:
        return (k["bk"] if k["b_layout"] == "nk" else k["bn"]) + k["pad_b"]

    def shared_bytes(self, k: dict) -> int:
        if not k["shared"]:
            return 0
        return 4 * k["stages"] * (self._a_tile(k) + self._b_tile(k))

    def _a_tile(self, k: dict) -> int:
        return (k["bk"] if k["a_layout"] == "km" else k["bm"]) * self._lda(k)

    def _b_tile(self, k: dict) -> int:
        return (k["bn"] if k["b_layout"] == "nk" else k["bk"]) * self._ldb(k)

    @staticmethod
    def _stores_transposed(k: dict, o: Operands) -> tuple[bool, bool]:
        """Whether the copy into A's (B's) shared tile transposes the tile as stored: A's km tile of an A stored
        along K, B's nk tile of a B stored along N, and the other way round."""
        return (k["a_layout"] == "km") != o.a_t, (k["b_layout"] == "nk") != o.b_t

    def k_vectors(self, k: dict) -> tuple[bool, bool]:
        """Whether a thread reads its fragment of A (of B) 4 values of K at a time: a shared tile with rows along K
        (mk, nk), read by a warp's lanes on adjacent rows (layout warp, run 1), rows of whole 16-byte vectors."""
        kv = lambda tile, run, ld: tile and k["layout"] == "warp" and run == 1 and k["bk"] % 4 == 0 and ld % 4 == 0
        return (kv(k["a_layout"] == "mk", self._run(k, "m"), self._lda(k)),
                kv(k["b_layout"] == "nk", self._run(k, "n"), self._ldb(k)))

    # -- lowering ----------------------------------------------------------------------------------
    def template(self, knobs: dict) -> str:
        if knobs["layout"] == "dot":
            return "sgemm_dot.cu.j2"
        return "sgemm.cu.j2" if knobs["shared"] else "sgemm_naive.cu.j2"

    @staticmethod
    def k_tile(k: dict) -> int:
        """K in a tile: the whole tiles K's slices are cut in (splitk.kchunk) and the cost model's latency unit."""
        return DOT_CHUNK if k["layout"] == "dot" else k["bk"]

    @staticmethod
    def vector_widths(k: dict) -> tuple[int, int, int]:
        """Floats per access of A, B and C: the dot layout's loads are 128-bit along K, its stores one float."""
        return (4, 4, 1) if k["layout"] == "dot" else (k["vec_a"], k["vec_b"], k["vec_c"])

    def template_params(self, k: dict, types: Types, target: Target, layout: str = "NN") -> tuple[dict, int, int]:
        nt = self.threads(k)
        if k["layout"] in ("warp", "dot"):
            block = (nt, 1, 1)
        else:
            block = (k["bn"] // k["tn"], k["bm"] // k["tm"], 1)
        p = dict(k, threads=nt, block=block, warps_n=k["bn"] // max(k["wn"], 1), lanes_n=k["wn"] // k["tn"],
                 atomic=k["split_k"] > 1 and k["reduce_k"] == "atomic",
                 workspace=k["split_k"] > 1 and k["reduce_k"] == "workspace")
        p.update(self._fusion_params(p, types))
        if k["layout"] == "dot":
            return self._dot_params(p, k, Operands(layout))
        if not k["shared"]:
            return dict(p, **self._naive_operands(Operands(layout))), 0, 24
        for d, t in (("m", k["tm"]), ("n", k["tn"])):
            run = self._run(k, d)
            b = k["bm" if d == "m" else "bn"]
            p[f"run_{d}"] = run                                 # adjacent elements per run
            p[f"runs_{d}"] = t // run                           # runs per thread
            # distance between a thread's runs; and between neighbouring threads' first elements
            if k["layout"] == "strided":
                p[f"run_stride_{d}"], p[f"step_{d}"] = b * RUN // t, RUN
            elif k["layout"] == "warp":
                p[f"run_stride_{d}"], p[f"step_{d}"] = k["wm" if d == "m" else "wn"] * run // t, run
            else:
                p[f"run_stride_{d}"], p[f"step_{d}"] = 0, t
        lda, ldb = self._lda(k), self._ldb(k)
        km, nk = k["a_layout"] == "km", k["b_layout"] == "nk"
        kvec_a, kvec_b = self.k_vectors(k)
        p.update(lda=lda, ldb=ldb, a_tile=self._a_tile(k), b_tile=self._b_tile(k), km=km, nk=nk,
                 # 128-bit shared loads of a thread's fragment when its runs are 16-byte aligned
                 frag_vec_a=4 if km and p["run_m"] % 4 == 0 and lda % 4 == 0 else 1,
                 frag_vec_b=4 if not nk and p["run_n"] % 4 == 0 and ldb % 4 == 0 else 1,
                 # or 4 values of K at a time (k_vectors): the K loop then takes 4 a step, one operand's
                 # vectors streamed row by row against 4 steps' fragments of the other, held (the side with
                 # fewer elements where both are K vectors: its 4 x t floats are the registers it adds)
                 kvec_a=kvec_a, kvec_b=kvec_b,
                 stream=("a" if kvec_a and (not kvec_b or k["tm"] >= k["tn"]) else "b") if kvec_a or kvec_b else "",
                 a_vecs=k["bm"] * k["bk"] // k["vec_a"], b_vecs=k["bk"] * k["bn"] // k["vec_b"],
                 # one vector store per staged vector where the shared rows keep it aligned
                 a_sts_vec=lda % k["vec_a"] == 0, b_sts_vec=ldb % k["vec_b"] == 0,
                 lanes_m=k["wm"] // k["tm"], vec_bc=max(k["vec_b"], k["vec_c"]), f32=FLOAT32)
        p.update(self._operands(k, Operands(layout)))
        p.update(a_iters=cdiv(p["a_vecs"], nt), b_iters=cdiv(p["b_vecs"], nt), b_offset=k["stages"] * p["a_tile"])
        staged = (p["a_iters"] * k["vec_a"] + p["b_iters"] * k["vec_b"]) if k["copy"] == "sync" else 0
        held = {"a": k["tn"], "b": k["tm"]}.get(p["stream"], 0)     # 4 K steps of the held side: 3 x more
        regs = k["tm"] * k["tn"] + k["tm"] + k["tn"] + 3 * held + staged + 28
        p["max_regs"] = self._register_cap(k, nt, regs, "the tile")
        if k["stream_k"]:   # its runs, one for each block an SM holds at once (SMs x min_blocks alone left 32x128
            # tiles, which an SM holds five of, a fifth of the GPU: 700x1024x512 0.88x -> 0.36x cuBLAS, H200,
            # bench_results/2026-11-29-s20/s20_suite_stream_k.md)
            p["sk_per_sm"] = target.resident(nt, self.shared_bytes(k), regs)
        return p, self.shared_bytes(k), regs

    @staticmethod
    def _register_cap(k: dict, threads: int, regs: int, what: str) -> int:
        """Registers a thread has where min_blocks blocks of `threads` share an SM (the __maxnreg__ budget), after
        checking that `what`'s estimate of `regs` fits them."""
        cap = min(255, 65536 // (threads * k["min_blocks"]) // 8 * 8)
        check(regs <= cap, "annotate", "min_blocks", k["min_blocks"],
              limit=f"{k['min_blocks']} blocks of {threads} threads leave {cap} registers per thread; {what} needs ~{regs}")
        return cap

    @staticmethod
    def dot_held(k: dict) -> str:
        """The dot layout's held operand ("A" or "B"): the one whose rows every warp of the block reads (A where
        the block is one warp row, bm = tm; B where it is one warp column; else the one with more rows a warp).
        Its loads, one row at a time, mostly hit L1; the other streams from DRAM, each row read by one warp."""
        one_row, one_col = k["bm"] == k["tm"], k["bn"] == k["tn"]
        if one_row != one_col:
            return "A" if one_row else "B"
        return "A" if k["tm"] >= k["tn"] else "B"

    def _dot_params(self, p: dict, k: dict, o: Operands) -> tuple[dict, int, int]:
        """The dot layout: no shared memory. Registers, estimated: the tile, a trip's loads (the compiler issued
        two chunks' ahead at most), the stream's next trip where it is prefetched (stages 2), the rows' pointers
        (ptxas's counts for the cost model's dot families ran 0.85-1.46x of it, 2026-11-25: the 8x8 tiles take
        what they are given, without spilling)."""
        held = self.dot_held(k)
        unroll, stream = max(k["unroll_k"], 1), k["tn"] if held == "A" else k["tm"]
        regs = (k["tm"] * k["tn"] + 3 * (k["tm"] + k["tn"]) * min(unroll, 2) + 4 * stream * unroll * (k["stages"] - 1)
                + 24)
        cap = self._register_cap(k, p["threads"], regs, "the dot tile")
        twins = tuple(dict(suffix=t.suffix, flags="false" if t.unaligned else "true",
                           note="K any: rows start at any 4-byte offset, so the loads are element-wise (the plan "
                                f"picks this kernel when {t.when})" if t.unaligned else "")
                      for t in o.twins(self.vector_widths(k)))
        return dict(p, chunk=DOT_CHUNK, unroll=unroll, held=held.lower(), max_regs=cap, twins=twins, f32=FLOAT32,
                    layout_note=o.describe()), 0, regs

    def _fusion_params(self, p: dict, types: Types) -> dict:
        """The epilogue goes into the tile's store, or (slices summed in a workspace) into the reduction."""
        f = self.fusion_params(types)
        ep = f["ep"]
        return dict(ep=None if p["workspace"] else ep, reduce_ep=ep if p["workspace"] else None, batched=f["batched"],
                    batch_params=", int batch, long long stride_a, long long stride_b" if f["batched"] else "")

    @staticmethod
    def _operands(k: dict, o: Operands) -> dict:
        """How the global->shared copies address A and B in layout `o`. A's stored tile is bm x bk
        (rows m, vectors along k) or, transposed, bk x bm (rows k, vectors along m: the km shared tile's
        own order); B's bk x bn, or transposed bn x bk (vectors along k, stored transposed into [k][n]).
        Tile 0 (`a_first`, `b_first`) holds K's remainder: every access tested, from A and B. The main
        loop's whole tiles (`a_src`, `b_src`, taking the tile's first k by `%`) read Ak and Bk, A and B
        shifted back along K (`a_shift`, `b_shift`) so that no K bound needs testing; an edge block
        (CHECK) clamps the M (N) index into C instead of testing it, whole vectors where rows are
        ALIGNED, and tests element-wise vectors along M (N) (`a_check`, `b_check`). The tile function's
        stride argument is the whole K (a slice of K starts inside rows that are K long)."""
        va, vb = k["vec_a"], k["vec_b"]
        widths = (va, vb, k["vec_c"])
        stride = "ldA" if o.layout == "NN" else "ldK"       # NN kernels read as before layouts existed
        shift = f"(kfirst - {k['bk']})"
        al_a, al_b = (f"AL_{o.lead(x)}" for x in "AB")       # the tile's flags: A's (B's) rows start aligned

        def clamp(index: str, size: str, v: int = 1, al: str = "") -> str:    # v > 1: a vector along `size`
            return (f"CHECK && {al} ? min({index}, {size} - {v}) : {index}" if v > 1 else
                    f"CHECK ? min({index}, {size} - 1) : {index}")
        along = lambda v, al: f"CHECK && !{al}" if v > 1 else "false"     # the vectors' test in the loop
        if o.a_t:
            a = dict(a_src=f"Ak, %s + r, {clamp('m0 + c', 'M', va, al_a)}, kend, M, M", a_check=along(va, al_a),
                     a_first="A, r, m0 + c, kfirst, M, M", a_shift=f"A + (ptrdiff_t){shift} * M")
        else:
            a = dict(a_src=f"Ak, {clamp('m0 + r', 'M')}, %s + c, M, kend, {stride}", a_check="false",
                     a_first=f"A, m0 + r, c, M, kfirst, {stride}", a_shift=f"A + {shift}")
        if o.b_t:
            b = dict(b_src=f"Bk, {clamp('n0 + r', 'N')}, %s + c, N, kend, {stride}", b_check="false",
                     b_first=f"B, n0 + r, c, N, kfirst, {stride}", b_shift=f"B + {shift}")
        else:
            b = dict(b_src=f"Bk, %s + r, {clamp('n0 + c', 'N', vb, al_b)}, kend, N, N", b_check=along(vb, al_b),
                     b_first="B, r, n0 + c, kfirst, N, N", b_shift=f"B + (ptrdiff_t){shift} * N")
        return dict(
            a, **b,
            a_per_row=(k["bm"] if o.a_t else k["bk"]) // va, b_per_row=(k["bk"] if o.b_t else k["bn"]) // vb,
            **dict(zip(("a_sts_t", "b_sts_t"), Sgemm._stores_transposed(k, o))),
            a_slice="A + (size_t)kbeg * M" if o.a_t else "A + kbeg",
            b_slice="B + kbeg" if o.b_t else "B + (size_t)kbeg * N",
            kstride=stride, kstride_note=("ldA A's row stride (the whole K)" if o.layout == "NN" else
                                          f"ldK the whole K (the row stride of {o.layout}'s operands stored along K)"),
            al_a=al_a, al_b=al_b, al_c=f"AL_{o.lead('C')}", twins=Sgemm._twins(o, widths, mixed_twins(k)),
            # Where the peeled double-buffered loop issues tile kt+1's loads (C++ condition): at the top of
            # iteration kt (870f29a's schedule) where A's and B's loads are vectors with registers uncapped;
            # with element-wise loads or min_blocks > 1 ptxas sank that block to its stores, so there they
            # close the iteration before (tests/test_op_sgemm.py checks the SASS).
            prefetch_top=f"({al_a} && {al_b})" if k["min_blocks"] == 1 and va > 1 and vb > 1 else "false",
            # A K slice's tile (split_k > 1) had those loads sunk to their stores, after the math, all the same
            # (SASS of the 128x128 tiles in every layout; 128x4096x4096 NN at 8 slices 125.5 -> 107.0 us on the
            # H100 pinned, 2026-11-25): a __syncwarp after them keeps them there. Tiles of one slice keep ptxas's
            # order: pinned, the large ones ran 5-9% slower (bench_results/2026-11-25-s16/suite_pinned/).
            pin_prefetch=k["split_k"] > 1,
            aligned_note=o.condition(widths, ", ") or "no vector accesses",
            layout_note="" if o.layout == "NN" else o.describe())

    @staticmethod
    def _twins(o: Operands, widths: tuple[int, int, int], mixed: bool) -> tuple[dict, ...]:
        """The template's entry points: a suffix, the tile's AL_M, AL_N, AL_K flags and a comment each."""
        out = []
        for t in o.twins(widths, mixed):
            loose = [x for x, w in zip("ABC", widths) if w > 1 and not t.aligned(o.lead(x))]
            note = ("Every row of A, B and C starts vector-aligned" if not t.unaligned else
                    f"{' and '.join(t.unaligned)} any: the rows of {', '.join(loose)} start at any 4-byte offset, so "
                    f"their accesses are element-wise{'' if len(loose) == 3 else '; the rest keep their vectors'}")
            out.append(dict(suffix=t.suffix, flags=", ".join("true" if t.aligned(d) else "false" for d in "MNK"),
                            note=f"{note} (the plan picks this kernel when {t.when})" if t.when else ""))
        return tuple(out)

    @staticmethod
    def _naive_operands(o: Operands) -> dict:
        """The naive kernel's walk along K: A's row m (or column, stored transposed), B's column n (or row)."""
        return dict(a_row="A + (size_t)m * K" if not o.a_t else "A + m", a_k="a[(size_t)k * M]" if o.a_t else "a[k]",
                    b_col="B + (size_t)n * K" if o.b_t else "B + n", b_k="b[k]" if o.b_t else "b[(size_t)k * N]",
                    layout_note="" if o.layout == "NN" else o.describe())

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        k, p = dict(kernel.knobs), dict(kernel.params)
        self.same_layout(kernel, problem)
        self.same_fusion(kernel, problem)
        M, N, K = problem["M"], problem["N"], problem["K"]
        grid = (cdiv(N, k["bn"]), cdiv(M, k["bm"]), problem.batch.count if problem.batch else k["split_k"])
        check_grid(self.name, problem, grid, k["bm"], k["swizzle"], k["stream_k"])
        # An operand's rows start vector-aligned when their length (K or N for NN's A and B) is a multiple
        # of its width: the twin whose accesses are element-wise for the others alone.
        widths = self.vector_widths(k)
        symbol = kernel.name + Operands(kernel.layout).twin(widths, problem, mixed_twins(k)).suffix
        out = "partials" if p["workspace"] else "C"
        args = ("A", "B", out, "M", "N", "K") + (() if p["workspace"] else self.fusion_args())
        scalars = tuple(Scalar(n, "int", v) for n, v in (("M", M), ("N", N), ("K", K))) + self.fusion_scalars(problem)
        workspaces = ()
        if k["stream_k"]:      # one launch of the region's runs and the other tiles (lib/streamk.j2)
            slots = (target or default_target()).sms * p["sk_per_sm"]
            grid = (stream_k_blocks(grid[0] * grid[1], slots), 1, 1)
            args += STREAM_K_ARGS
            scalars += (Scalar("slots", "int", slots),)
            workspaces = stream_k_workspaces(slots, k["bm"], k["bn"])
        launches = (Launch(symbol, grid, tuple(p["block"]), args, kernel.static_smem),)
        if p["atomic"]:      # the slices of K add into C: zero it first
            fill = Launch(kernel.name + "_zero", (min(cdiv(M * N, 256), 4096), 1, 1), (256, 1, 1), ("C", "MN"), role="fill")
            launches, scalars = (fill,) + launches, scalars + (Scalar("MN", "long long", M * N),)
        elif p["workspace"]:  # each slice stores its slab; a second kernel sums the slabs into C
            total, mn = reduce_launch(kernel.name + "_reduce", M, N, self.epilogue.inputs if self.epilogue else None)
            launches, scalars = launches + (total,), scalars + (mn,)
            workspaces = (splitk_workspace(k["split_k"], M, N),)
        align = tuple((b, 4 * v) for b, v in zip("ABC", widths) if v > 1)
        return Plan(kernel, problem, launches, workspaces, scalars, align)

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k, p = dict(kernel.knobs), dict(kernel.params)
        grid = (f"kg_cdiv(N, {k['bn']})", f"kg_cdiv(M, {k['bm']})", str(k["split_k"]))
        requires = [(f"kg_cdiv(M, {k['bm']}) <= {MAX_GRID_Y}", f"gridDim.y holds {MAX_GRID_Y} block rows of {k['bm']}")]
        if k["swizzle"] > 1 or k["stream_k"]:
            requires.append((f"kg_cdiv(M, {k['bm']}) * kg_cdiv(N, {k['bn']}) <= {INT_MAX}",
                             "stream-K numbers the tiles in an int" if k["stream_k"] else
                             "with swizzle the blocks' linear number is an int"))
        args = ("A", "B", "partials" if p["workspace"] else "C", "M", "N", "K") + \
            (() if p["workspace"] else self.fusion_args())
        if self.batched:
            grid = grid[:2] + ("batch",)
        steps = tuple(Step(kernel.name + t.suffix, grid, tuple(p["block"]), args, kernel.static_smem, when=t.when)
                      for t in Operands(kernel.layout).twins(self.vector_widths(k), mixed_twins(k)))
        lets, workspaces = (), ()
        if k["stream_k"]:   # as plan: one launch, the SMs' slots and the two workspaces
            lets, sk_grid, workspaces = stream_k_recipe(p["sk_per_sm"], k["bm"], k["bn"])
            steps = tuple(replace(st, grid=sk_grid, args=st.args + STREAM_K_ARGS) for st in steps)
        if p["atomic"]:   # the slices of K add into C: zero it first
            steps = (Step(kernel.name + "_zero", ("kg_min(kg_cdiv(MN, 256), 4096)", "1", "1"), (256, 1, 1), ("C", "MN")),) + steps
            lets = (("MN", "long long", "kg_ll(M) * N"),)
        elif p["workspace"]:   # each slice stores its slab of the workspace; a second kernel sums them in order
            step, mn, ws = reduce_recipe(kernel.name + "_reduce", k["split_k"], self.epilogue.inputs if self.epilogue else None)
            steps, lets, workspaces = steps + (step,), (mn,), (ws,)
        align = tuple((b, 4 * v, "") for b, v in zip("ABC", self.vector_widths(k)) if v > 1)
        return self.fusion_recipe(Recipe(kernel.arch, ("M", "N", "K"), self.recipe_buffers(kernel), steps, lets,
                                         workspaces, alignment=align, requires=tuple(requires), layout=kernel.layout))

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # Each size alone at any value takes a twin of its own: K = 37 with N = 68 (A element-wise; TN: M = 131
        # alone), N = 511 (B and C), and odd K and N every access element-wise (67, 131, 13; 2100, 9, 5).
        # (130, 260, 20) takes the 128-bit kernel with ragged tiles. (260, 516, 32) and (260, 511, 32) have
        # blocks wholly inside C (no bounds tests) beside ragged ones, rows aligned and not.
        # (67, 131, 13): two K tiles of the default bk 8 in the element-wise kernel, whose peeled loop
        # fetches tile 1 before its first iteration (no other size has exactly two tiles). (2100, 9, 5): more
        # block rows (9 of the default 256, 17 of 128) than the default swizzle's group of 8, so the blocks'
        # walk comes to a second group (a last one shorter than the rest). N = 511: one column short of a
        # whole last block column for every power-of-two bn (a test of `inside` one off takes it as inside).
        return ({"M": 1, "N": 1, "K": 1}, {"M": 131, "N": 68, "K": 37}, {"M": 130, "N": 260, "K": 20},
                {"M": 260, "N": 516, "K": 32}, {"M": 260, "N": 511, "K": 32}, {"M": 67, "N": 131, "K": 13},
                {"M": 2100, "N": 9, "K": 5})

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        # Small integers make every product and partial sum exact in float32 (|partial| <= 9K < 2^24),
        # so the check can demand the exact answer: one dropped, doubled or misplaced term fails it.
        shapes = self.input_shapes(problem)
        return {b: rng.integers(-3, 4, size=shapes[b]).astype(np.float32) for b in ("A", "B")}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"C": (problem["M"], problem["N"])}

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return Operands(problem.layout).stored(problem)      # as stored: K x M for A transposed

    device_reference = True     # validate on a GPU computes the float64 product there (xp=cupy)

    def reference(self, inputs, problem, xp=np):
        a, b = Operands(problem.layout).product(inputs["A"], inputs["B"])
        return {"C": a.astype(xp.float64) @ b.astype(xp.float64)}

    error_measure = "max absolute error"

    def error(self, name, out, ref, inputs, problem) -> float:
        return float(np.abs(out.astype(np.float64) - ref).max()) if np.all(np.isfinite(out)) else math.inf

    def tolerance(self, problem: Problem) -> float:
        K = problem["K"]
        # Exact below 2^24; past it, K roundings of at most half an ulp of 9K each.
        return 0.5 if 9 * K < 2 ** 24 else 9.0 * K * K * 2.0 ** -24

    def bytes_moved(self, problem: Problem) -> int:
        M, N, K = problem["M"], problem["N"], problem["K"]
        return 4 * (M * K + K * N + M * N)

    def flops(self, problem: Problem) -> int:
        return 2 * problem["M"] * problem["N"] * problem["K"]

    def vendor(self, dev_inputs, problem):
        # The same stored arrays, transposed as views (cuBLAS takes the transpose flags; nothing is copied
        # inside the timed call).
        o = Operands(problem.layout)
        try:
            import torch
            torch.backends.cuda.matmul.allow_tf32 = False   # plain FP32, as the kernels compute
            ta, tb = o.product(torch.as_tensor(dev_inputs["A"], device="cuda"),
                               torch.as_tensor(dev_inputs["B"], device="cuda"))
            return "torch.matmul (cuBLAS, TF32 off)", lambda: torch.matmul(ta, tb)
        except ImportError:
            a, b = o.product(dev_inputs["A"], dev_inputs["B"])
            return "cupy.matmul (cuBLAS)", lambda: a @ b

    # -- ladders and search ------------------------------------------------------------------------
    def ladder(self) -> tuple[LadderStep, ...]:
        off = dict(layout="contiguous", wm=0, wn=0, a_layout="mk", pad_a=0, pad_b=0, vec_a=1, vec_b=1, vec_c=1,
                   stages=1, copy="sync", unroll_k=0, min_blocks=1, swizzle=1)
        naive = dict(off, shared=False, bm=16, bn=16, bk=0, tm=1, tn=1)
        tiled = dict(off, shared=True, bm=32, bn=32, bk=32, tm=1, tn=1)
        blk1 = dict(tiled, bm=64, bn=64, bk=8, tm=8)
        blk2 = dict(blk1, bm=128, bn=128, tn=8)
        vec = dict(blk2, a_layout="km", vec_a=4, vec_b=4, vec_c=4)
        strided = dict(vec, layout="strided", pad_a=4)
        # 8x8 warp tiles need ~150 registers left alone, which lets one block of 256 threads onto an SM;
        # capping them at 128 (two blocks) spills nothing and runs 1.5x faster on the H100.
        warp = dict(strided, layout="warp", wm=64, wn=32, min_blocks=2)
        dbuf = dict(warp, stages=2)
        steps = [
            ("naive: one thread per element of C", naive, "seed 000: 5.2 ms; seed 003: 10.7% of torch"),
            ("shared-memory tiles 32x32", tiled, "seed 000: 3.7 ms; seed 003: 21.6% of torch"),
            ("1-D block tiling: 8 rows of C per thread", blk1, "seed 000: 1.3 ms"),
            ("2-D block tiling: 8x8 per thread, 128x128 per block", blk2,
             "seed 000: 0.9 ms; seed 003: 48.5% of torch"),
            ("float4 global loads and stores, A transposed in shared memory", vec,
             "seed 000: 0.7 ms; seed 003: 82.6% of torch"),
            ("runs of 4 spaced BM/2 apart, padded A rows: no bank conflicts", strided, "seed 003 (e)"),
            ("warp tiles: each warp owns a 64x32 tile of C", warp, "seed 000: warp tiling"),
            ("double buffering: next tile prefetched through registers", dbuf,
             "seed 000: 0.62 ms; seed 003: 99.5% of torch"),
            ("tuned: 256x128 blocks of 64x64 warp tiles, 16x8 per thread, grouped block order",
             self.default_knobs(), "beyond the seeds: the fastest of `kernelgen tune sgemm` on an H100"),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps)

    def wide_axes(self, problem: Problem, target: Target) -> dict[str, tuple]:
        """The block walk's group, the K loop's unrolling and two blocks an SM under a register budget,
        crossed onto every tiling of the space."""
        return dict(swizzle=(1, 8, 16), unroll_k=(0, 2), min_blocks=(1, 2))

    def space(self, problem: Problem, target: Target):
        base = self.default_knobs()
        o = Operands(problem.layout or "NN")
        # cp.async copies without transposing: 16 bytes of A into km where A is stored transposed (else
        # into mk), B as layout_knobs says
        cp_a_refused = ("mk", 4) if o.a_t else ("km", 4)
        cp_vec_b = self.layout_knobs(o.layout, "cp_async").get("vec_b", 4)
        for bm, bn, wm, wn, tm, tn in ((128, 128, 64, 32, 8, 8), (128, 128, 32, 64, 8, 8), (128, 64, 64, 32, 8, 8),
                                       (64, 128, 32, 64, 8, 8), (128, 128, 64, 64, 16, 8), (128, 256, 64, 64, 8, 16),
                                       (256, 128, 64, 64, 16, 8), (64, 64, 32, 32, 4, 8)):
            for bk in (8, 16, 32):
                for stages, copy in ((2, "sync"), (2, "cp_async"), (3, "cp_async"), (4, "cp_async")):
                    # B's kn tile; where B is stored along K, its nk tile read in K vectors too
                    bs = [dict(pad_b=self.layout_knobs(o.layout, copy, bm).get("pad_b", 0),
                               **({"vec_b": cp_vec_b} if copy == "cp_async" else {}))]
                    bs += [dict(b_layout="nk", run_n=1, vec_b=4, vec_c=1, pad_b=4)] if o.b_t else []
                    for a_layout, vec_a in (("km", 4), ("km", 1), ("mk", 4)):
                        if copy == "sync" and vec_a == 1 or copy == "cp_async" and (a_layout, vec_a) == cp_a_refused:
                            continue
                        runs_m = RUNS if a_layout == "mk" else (RUN,)       # A's mk tile in K vectors too
                        for run_m, b_knobs, swizzle in itertools.product(runs_m, bs, (1, 8)):
                            yield dict(base, bm=bm, bn=bn, wm=wm, wn=wn, tm=tm, tn=tn, bk=bk, stages=stages, copy=copy,
                                       a_layout=a_layout, vec_a=vec_a, swizzle=swizzle, run_m=run_m, **b_knobs)
        for over in (dict(), dict(bm=128, bn=128)):   # K slices, for grids that cannot fill the SMs
            for split_k in (2, 3, 4, 8):
                k = dict(base, **over, split_k=split_k)
                yield dict(k, **self.layout_knobs(o.layout, k["copy"], k["bm"]))
            # stream-K, for a last wave the tiles fill in part
            yield dict(base, **over, stream_k=True, **self.layout_knobs(o.layout, base["copy"], over.get("bm", base["bm"])))
        from .sgemm_cost import dot_rows, dot_side, fitted_rows, fitted_side
        # a thin side no power of two fits (N = 35): the cost model's tiles of its own width, K in slices
        for _, over, _ in fitted_rows(fitted_side(problem["M"]), fitted_side(problem["N"])):
            for split_k in (1, 4, 8, 12, 16):
                k = dict(base, **over, split_k=split_k, reduce_k="workspace" if split_k > 1 else "atomic")
                yield dict(k, **self.layout_knobs(o.layout, k["copy"], k["bm"]))
        # a side of 1-16 of x . W^T (layout NT): the cost model's dot tiles, K in slices
        if o.layout == "NT":
            for _, over, _ in dot_rows(dot_side(problem["M"]), dot_side(problem["N"])):
                for split_k in (1, 2, 4, 8, 16):
                    yield dict(base, **over, split_k=split_k, reduce_k="workspace" if split_k > 1 else "atomic")
