"""Out-of-place transpose of a float32, float16 or bfloat16 matrix, out[N, M] = x[M, N]^T, any M x N, with its ladder.

>>> from kernelgen.ops import get_op
>>> op = get_op("transpose")
>>> s = op.schedule(tile=32, rows=8, vec=4)
>>> op.knobs_from_schedule(s)["vec"]
4
>>> op.plan(op.kernel(s), op.problem({"M": 67, "N": 1001})).launches[0].block
(8, 8, 1)

Loops: `i` over the rows of x (M), `j` over its columns (N). `split("i", tile, rows)` gives i.0
(tiles), i.1 (the tile/rows items a thread moves, unrolled) and i.2 (rows, threadIdx.y);
`split("j", tile[, vec])` gives j.0 (tiles), j.1 (tile/vec lanes, threadIdx.x) and j.2 (the vector
lane). `fuse("i.0", "j.0")` + `bind("i.0.j.0", "blockIdx.x")`: the grid is one-dimensional, so no
size runs into the 65535 limit of gridDim.y. `cache_read("x", "shared")` stages a tile in shared
memory so both the read and the write are coalesced; `storage_align("x", 1)` pads each tile row by
one float so the column-wise read is bank-conflict-free; `annotate("block_order", "diagonal")`
walks the tiles along diagonals; `annotate("grid_stride", k)` launches k blocks per SM that loop
over the tiles (fewer, longer-lived blocks); `vectorize("j.2", 4)` moves float4s: rows of x are read as float4
and rows of out are written as float4, the 4x4 turn happening through the padded tile (scalar
shared accesses, which a 32-wide padded tile serves without bank conflicts). Whole tiles run without
bounds tests; a side whose rows are not 16-byte aligned (N % vec for x, M % vec for out) moves coalesced
scalars instead (consecutive threads, consecutive elements of a tile row), and only tiles on the
matrix's edge test bounds.

Where rows of out do not start on a sector (M * itemsize % 32: M odd, say), tiles on the matrix grid leave
every block's rows of out starting and ending inside sectors that a neighbour also writes, and with M % vec
the stores are scalars. `annotate("store_align", 32)` skews the tiles per row of out instead: block (by, bx)
writes columns i0 - d_j .. i0 - d_j + tile - 1 of row j, d_j = row j's start past a 32-byte boundary, so
its stores are whole aligned vectors and whole sectors (a partition of out whatever its address); it reads
rows i0 - 32/itemsize .. of x, a halo above its tile (one more row of tiles covers M). With it,
`annotate("load_align", True)` reads rows of x that are not 16-byte aligned as the aligned vectors around
each row's window, dropping the extra elements:

>>> op.kernel(op.schedule_for(op.problem({"M": 12345, "N": 6789}))).name
'transpose_f32_sm90_t64_r32_v4_s1_p1_orow_g0_a32_l1'

16-bit types (float16, bfloat16) are copied as they are (out has x's type). `vec` counts elements,
so a 16-byte access is `vectorize("j.2", 8)`, and `storage_align("x", pad)` pads by `pad` elements:
two 16-bit elements share a 4-byte bank, so the padding that keeps a column read conflict-free is 2
(one bank), not 1 (`shared_conflicts` counts the ways for any layout):

>>> op.kernel(op.schedule_for(op.problem(dtype="float16")), types=op.types("float16")).name
'transpose_f16_sm90_t64_r16_v8_s1_p2_orow_g0'
>>> shared_conflicts(32, 8, 1, 2, 2), shared_conflicts(32, 8, 1, 1, 2)
((1, 1), (1, 2))
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..errors import check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import INT_MAX, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, cdiv, pow2
from .knobs import Prim
from ..dtypes import Types
from .io import element_io, torch_tensor, vector_widths
from ..target import Target, default_target

ORDERS = ("row", "diagonal")
SECTOR = 32                  # bytes: the unit of DRAM and L2 traffic
ALIGNS = (0, 16, SECTOR)     # store_align: off, a 16-byte vector, a sector
SPLITS = Prim("split", ("i", "j"), args="tile, rows (i) | tile[, vec] (j)")


class Transpose(Op):
    name = "transpose"
    summary = "out[N, M] = x[M, N]^T, float32, float16 or bfloat16, out of place"
    dtypes = ("float32", "float16", "bfloat16")
    dims = tuple(Dim(d, 8192, small, maximum=INT_MAX - 64, why="the int row and column indexes run up to a tile (64) "
                                                                 "past the matrix") for d, small in (("M", 67), ("N", 1001)))
    loops = ("i", "j")
    inputs = ("x",)
    outputs = ("out",)
    knobs = (
        Knob("tile", 32, (16, 32, 64), "square tile side a block moves (split i and j)", "t",
             SPLITS),
        Knob("rows", 8, (1, 2, 4, 8, 16, 32, 64), "thread rows per block (i.2); each thread moves tile/rows items",
             "r", SPLITS),
        Knob("vec", 4, (1, 2, 4, 8), "elements per global access (j.2): float32 1|2|4, 16-bit types 1|2|4|8", "v",
             Prim("vectorize", "j.2", absent=1)),
        Knob("staged", True, (False, True), "stage the tile in shared memory", "s",
             Prim("cache_read", "x", absent=False, values=((True, "shared"),))),
        Knob("pad", 1, (0, 1, 2), "elements of padding per shared tile row (16-bit types want 2: a bank)", "p",
             Prim("storage_align", "x", absent=0), when=("staged", (True,)), unused=0),
        Knob("order", "row", ORDERS, "block order over tiles", "o", Prim("annotate", "block_order", absent="row")),
        Knob("grid_stride", 0, (0, 1, 2, 4, 8, 16, 32), "blocks per SM looping over tiles; 0 = one block per tile",
             "g", Prim("annotate", "grid_stride", absent=0)),
        Knob("store_align", 0, ALIGNS, "bytes each block's rows of out start on, whatever M: tiles skewed per row "
             "of out, read with that many elements' rows of halo; 0 = tiles on the matrix grid", "a",
             Prim("annotate", "store_align", absent=0), when=("staged", (True,)), unused=0),
        Knob("load_align", False, (False, True), "rows of x not vector-aligned (N % vec) read as aligned vectors "
             "from before each row's window, the extra elements dropped (else coalesced scalars)", "l",
             Prim("annotate", "load_align", absent=False), when=("store_align", (16, 32)), unused=False),
    )
    structure_help = "i.0 and j.0 (tiles) are fused and bound to blockIdx.x; j.1 is threadIdx.x, i.2 threadIdx.y"

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        tile, vec = k["tile"], k["vec"]
        s = schedule(self.name).split("i", tile, k["rows"])
        s = s.split("j", tile, vec) if vec > 1 else s.split("j", tile)
        s = (s.fuse("i.0", "j.0").bind("i.0.j.0", "blockIdx.x")
             .bind("j.1", "threadIdx.x").bind("i.2", "threadIdx.y").unroll("i.1"))
        return self.put(s, k, "staged", "pad", "vec", "order", "grid_stride", "store_align", "load_align")

    def read_knobs(self, r: ScheduleReader) -> dict:
        tile, rows = r.split("i", 2, (32, 8))
        jf = r.split("j", (1, 2), (tile,))
        check(jf[0] == tile, "split", "j", jf, limit=f"square tiles: split(i)'s tile is {tile}")
        vec = jf[1] if len(jf) == 2 else 1
        width = self.take(r, "vec")
        check(width == vec, "vectorize", "j.2", width, limit=f"split(j)'s innermost factor is {vec}")
        check(r.fuse(("i.0", "j.0")), "fuse", "i.0, j.0", "missing",
              limit="the tile grid is one-dimensional: fuse(i.0, j.0) then bind(i.0.j.0, blockIdx.x)")
        r.expect("bind", "i.0.j.0", "blockIdx.x")
        r.expect("bind", "j.1", "threadIdx.x")
        r.expect("bind", "i.2", "threadIdx.y")
        r.expect("unroll", "i.1", 0)
        return {"tile": tile, "rows": rows, "vec": vec}

    def check_knobs(self, k: dict, target: Target) -> None:
        tile, rows, vec = k["tile"], k["rows"], k["vec"]
        check(pow2(tile) and 16 <= tile <= 64, "split", "i", tile, limit="tile side is a power of two in 16..64")
        check(pow2(rows) and rows <= tile, "split", "i.2", rows, limit=f"a power of two dividing the tile ({tile})")
        check(vec == 1 or k["staged"], "vectorize", "j.2", vec,
              limit="float4 rows of out are assembled from a shared tile: needs cache_read(x, shared)")
        threads = tile // vec * rows
        check(threads <= target.max_threads, "split", "i.2", rows,
              limit=f"{tile // vec} x {rows} = {threads} threads > {target.max_threads} per block")
        check(threads >= 32, "split", "i.2", rows, limit=f"{tile // vec} x {rows} = {threads} threads: at least a warp")
        check(k["pad"] in (0, 1, 2), "storage_align", "x", k["pad"], limit="0, 1 or 2 elements per row",
              allowed="0, 1, 2")
        check(not k["load_align"] or vec > 1, "annotate", "load_align", True,
              limit="aligned vector loads of x need vectorize(j.2, >1)")

    # -- lowering ----------------------------------------------------------------------------------
    def name_knobs(self, k: dict) -> dict:
        """store_align is named only where it is on: the grid-aligned kernels keep their names."""
        return {n: v for n, v in k.items() if n not in ("store_align", "load_align") or v}

    def template(self, knobs: dict) -> str:
        return "transpose_aligned.cu.j2" if knobs["store_align"] else "transpose.cu.j2"

    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        d = types.input
        widths = vector_widths(d, (1, 2, 4))
        check(k["vec"] in widths, "vectorize", "j.2", k["vec"], limit=f"16 bytes per access of {d.name}",
              allowed=", ".join(map(str, widths)))
        io = element_io(d, k["vec"])
        items = k["tile"] // k["rows"]
        params = dict(k, ld=k["tile"] + k["pad"], lanes=k["tile"] // k["vec"], items=items,
                      flat=items * k["vec"],          # elements a thread moves on the scalar paths

                      vec_type=io["vtype"], comps=io["lanes"], io=io, unit=d.ctype if d.itemsize == 4 else d.name,
                      conflicts=shared_conflicts(k["tile"], k["rows"], k["vec"], k["pad"], d.itemsize))
        smem = d.itemsize * k["tile"] * (k["tile"] + k["pad"]) if k["staged"] else 0
        if k["store_align"]:
            params.update(aligned_params(k, d.itemsize))
            smem = d.itemsize * (k["tile"] + params["halo"]) * params["ld"]
        # `items` vectors in flight per thread, twice (loaded, then gathered for the store), in 4-byte registers.
        return params, smem, 16 + 2 * items * k["vec"] * d.itemsize // 4

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        target = target or default_target()
        k = dict(kernel.knobs)
        m, n = problem["M"], problem["N"]
        item = problem.dtype("x").itemsize
        halo = k["store_align"] // item
        check(not halo or m <= INT_MAX - k["tile"] - halo, "annotate", "store_align", k["store_align"],
              limit=f"M={m}: the kernel's int tile rows reach {k['tile'] + halo} past M; M <= {INT_MAX - k['tile'] - halo}")
        tiles = tile_rows(m, k["tile"], halo) * cdiv(n, k["tile"])
        blocks = min(tiles, target.sms * k["grid_stride"]) if k["grid_stride"] else tiles
        most = INT_MAX - (blocks - 1 if k["grid_stride"] else 0)    # a block's int tile number steps by the grid
        check(tiles <= most, "split", "i", k["tile"],
              limit=f"M={m}, N={n} make {tiles} tiles of {k['tile']}x{k['tile']}; gridDim.x and the kernel's int "
                    f"tile number hold at most {most}")
        launch = Launch(kernel.name, (blocks, 1, 1), (k["tile"] // k["vec"], k["rows"], 1), ("x", "out", "M", "N"))
        access = item * k["vec"]
        # store_align finds each row's alignment from out's address: any element-aligned out will do
        return Plan(kernel, problem, (launch,), (), (Scalar("M", "int", m), Scalar("N", "int", n)),
                    (("x", access), ("out", item if halo else access)))

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k = dict(kernel.knobs)
        item = (kernel.types or self.types())["x"].itemsize
        halo = k["store_align"] // item
        rows = f"kg_cdiv(M + {halo - 1}, {k['tile']})" if halo else f"kg_cdiv(M, {k['tile']})"
        tiles = f"kg_ll({rows}) * kg_cdiv(N, {k['tile']})"
        lets = (("tiles", "long long", tiles),
                ("blocks", "long long", f"kg_min(tiles, sms * {k['grid_stride']})" if k["grid_stride"] else "tiles"))
        most = f"{INT_MAX} - (blocks - 1)" if k["grid_stride"] else str(INT_MAX)
        step = Step(kernel.name, ("blocks", "1", "1"), (k["tile"] // k["vec"], k["rows"], 1), ("x", "out", "M", "N"))
        access = item * k["vec"]
        requires = ((f"M <= {INT_MAX - k['tile'] - halo}", "the kernel's int tile rows, which reach past M"),) if halo else ()
        return Recipe(kernel.arch, ("M", "N"), self.recipe_buffers(kernel), (step,), lets,
                      alignment=(("x", access, ""), ("out", item if halo else access, "")),
                      requires=requires + ((f"tiles <= {most}", "gridDim.x and the kernel's int tile number"),))

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # partial tiles both ways; one element; whole aligned tiles (the float4 path); a thin matrix; whole
        # tiles whose rows of x (then of out) are not 16-byte aligned while the other side's are; M and N
        # one short of a whole tile (M, N % 16, 32 and 64 = T - 1: a last tile row that a test of `full`
        # one off would take as whole); M = 62 (M % 16, 32 and 64 = T - 2): store_align's last row of tiles is
        # needed only by rows of out that start 3 floats past a 16-byte boundary, which an out that starts an
        # odd number of elements past one has every other row (the emulator places out so). 131x901: 145
        # tiles of 32 (513 of 16), more than the 132 blocks of grid_stride 1, so a block comes round to a second
        return ({"M": 67, "N": 1001}, {"M": 1, "N": 1}, {"M": 64, "N": 96}, {"M": 1000, "N": 3},
                {"M": 96, "N": 67}, {"M": 130, "N": 96}, {"M": 127, "N": 63}, {"M": 62, "N": 40},
                {"M": 131, "N": 901})

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"x": (problem["M"], problem["N"])}

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": problem.dtype("x").encode(rng.standard_normal((problem["M"], problem["N"]), dtype=np.float32))}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"out": (problem["N"], problem["M"])}

    def reference(self, inputs, problem):
        return {"out": np.ascontiguousarray(problem.dtype("x").decode(inputs["x"]).T)}

    def tolerance(self, problem: Problem) -> float:
        return 0.0  # a copy: every element exact

    def bytes_moved(self, problem: Problem) -> int:
        return 2 * problem.dtype("x").itemsize * problem["M"] * problem["N"]

    def vendor(self, dev_inputs, problem):
        x, d = dev_inputs["x"], problem.dtype("x")
        try:
            import torch
            t = torch_tensor(x, d).reshape(problem["M"], problem["N"])
            return "torch .t().contiguous()", lambda: t.t().contiguous()
        except ImportError:
            if d.name == "bfloat16":
                return None           # cupy has no bfloat16
            import cupy
            x2 = x.reshape(problem["M"], problem["N"])
            return "cupy.ascontiguousarray(x.T)", lambda: cupy.ascontiguousarray(x2.T)

    def ladder(self) -> tuple[LadderStep, ...]:
        base = dict(tile=32, rows=8, vec=1, staged=False, pad=0, order="row", grid_stride=0)
        steps = [
            ("naive: coalesced reads, strided writes", base, "writes touch one 32-byte sector per float"),
            ("shared-memory tile: cache_read(x, shared)", dict(base, staged=True),
             "both sides coalesced; the column read of the tile is a 32-way bank conflict"),
            ("padded tile: storage_align(x, 1)", dict(base, staged=True, pad=1), "no bank conflicts"),
            ("diagonal block order", dict(base, staged=True, pad=1, order="diagonal"),
             "spreads concurrent blocks over memory partitions (partition camping on older GPUs)"),
            ("4 items per thread, float4 rows in and out", dict(base, staged=True, pad=1, vec=4),
             "LDG.E.128 / STG.E.128; 64 threads move a 32x32 tile"),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps)

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """64x64 tiles moved as 16-byte vectors by 16 rows of threads, for every type: a tile row is 256 bytes
        in float32 (128 in 16-bit types, a whole cache line), and 16 rows keep several loads in flight per
        thread at 32 registers. Rows are padded by one 4-byte bank (float32: 1 element; 16-bit types 2: the
        row store is conflict-free and the column gather 2-way). Measured on the H100 (2026-11-23, probe in
        bench_results/2026-11-23-s3/rows_probe.md): float32 64x64 beat the 32x32 default on all three shapes
        (8192^2 2.91 vs 2.77x torch; 12345 x 6789, both sides unaligned, 1.97 vs 1.56x), fp16/bf16 8192^2
        2.70 TB/s.

        Where rows of out do not start on a 32-byte sector (M * itemsize % 32), blocks on the matrix grid
        share a partly written sector at both ends of each of their rows of out, and with M % vec the
        stores are scalars straddling sectors: 1.87 TB/s at 12345 x 6789 against 2.55 at 5000 x 7001 (only
        x's rows unaligned). There the tiles are skewed per row of out (store_align 32: whole sectors, vector
        stores), and rows of x that are not 16-byte aligned are read as aligned vectors (load_align), by
        32 rows of threads (the skewed tile reads a halo of rows above it; more rows a block share it).
        Measured on the H100 (2026-11-24, bench_results/2026-11-24-s5/transpose_probe.md): 12345 x 6789
        float32 1.87 -> 2.70 TB/s (copy 2.94), float16 1.39 -> 2.55; 8190^2 float32 2.01 -> 2.73; 32 rows
        beat 16 on every shape tried (fp16 2.26 -> 2.55 TB/s at 12345 x 6789)."""
        d = problem.dtype("x")
        vec = 16 // d.itemsize
        knobs = dict(tile=64, rows=16, vec=vec, pad=4 // d.itemsize)
        if problem["M"] * d.itemsize % SECTOR:
            knobs.update(rows=32, store_align=SECTOR, load_align=problem["N"] % vec != 0)
        return self.schedule(**knobs)

    def space(self, problem: Problem, target: Target):
        # 16-byte accesses on 32x32 and 64x64 tiles; float32 pads rows by 1 float, 16-bit types try both
        # paddings (1 and 2 elements trade which side conflicts).
        vec, tiles, pads = (4, (32, 64), (1,)) if problem.dtype("x").itemsize == 4 else (8, (32, 64), (1, 2))
        for tile in tiles:
            for pad in pads:
                for rows in (4, 8, 16, 32):
                    if not 32 <= tile // vec * rows <= target.max_threads:
                        continue
                    for grid_stride in (0, 8, 16, 32):
                        for order in ORDERS:
                            yield dict(tile=tile, rows=rows, vec=vec, staged=True, pad=pad, order=order,
                                       grid_stride=grid_stride)
        for tile, rows in ((32, 8), (64, 8), (64, 16)):
            yield dict(tile=tile, rows=rows, vec=1, staged=True, pad=pads[-1], order="row", grid_stride=0)
        # rows of out off the sector grid: tiles skewed per row of out, x read as aligned vectors or scalars
        if problem["M"] * problem.dtype("x").itemsize % SECTOR:
            for tile, rows in ((32, 8), (64, 8), (64, 16), (64, 32)):
                for align in ALIGNS[1:]:
                    for load_align in (False, True):
                        for grid_stride in (0, 8):
                            yield dict(tile=tile, rows=rows, vec=vec, staged=True, pad=pads[-1], order="row",
                                       grid_stride=grid_stride, store_align=align, load_align=load_align)


def tile_rows(m: int, tile: int, halo: int) -> int:
    """Rows of tiles over M: with store_align (halo > 0) a block's rows of out are shifted back by up to
    halo - 1 elements, so the tiles reach that far past M."""
    return cdiv(m + max(halo - 1, 0), tile)


def aligned_params(k: dict, itemsize: int) -> dict:
    """The store_align template's sizes: `halo` (elements per aligned piece of out, and rows of x read above
    the tile), the shared row (`ld`) and where the tile's columns start in it (`col0`), the loads of the (tile + halo) x tile window: vector rows per thread and flat elements per
    thread, each with whether the last one runs past the window (a tail test), and the flat stores."""
    tile, threads = k["tile"], k["tile"] // k["vec"] * k["rows"]
    halo = k["store_align"] // itemsize
    window = (tile + halo) * tile
    # load_align stores whole vectors: vec spare columns either side of the tile's, 2 * vec keeping the row's
    # words odd (with pad), so the column gathers stay conflict-free
    col0 = k["vec"] if k["load_align"] else 0
    return dict(halo=halo, align=k["store_align"], threads=threads, itemsize=itemsize,
                col0=col0, ld=tile + 2 * col0 + k["pad"],
                # load_align: the last vector of each row, one row per thread
                window_last=cdiv(tile + halo, threads), window_last_tail=(tile + halo) % threads != 0,
                load_vec=cdiv(tile + halo, k["rows"]), load_vec_tail=(tile + halo) % k["rows"] != 0,
                load_flat=cdiv(window, threads), load_flat_tail=window % threads != 0,
                store_flat=tile * tile // threads)


@lru_cache(maxsize=None)
def shared_conflicts(tile: int, rows: int, vec: int, pad: int, itemsize: int) -> tuple[int, int]:
    """(ways of the worst bank conflict when a warp stores a row of the staged tile, ways when it reads
    a column), for the template's thread layout: 32 banks of 4 bytes, a conflict being distinct
    4-byte words in one bank (2-byte elements of one word are served together).

    >>> shared_conflicts(32, 8, 1, 0, 4), shared_conflicts(32, 8, 4, 1, 4), shared_conflicts(64, 8, 8, 2, 2)
    ((1, 32), (1, 1), (1, 2))
    """
    lanes, ld = tile // vec, tile + pad
    threads = lanes * rows

    def ways(element_of) -> int:
        worst = 1
        for warp in range(0, threads, 32):
            for it in range(0, tile, rows):
                for c in range(vec):
                    banks: dict[int, set] = {}
                    for t in range(warp, min(warp + 32, threads)):
                        word = element_of(t % lanes, t // lanes + it, c) * itemsize // 4
                        banks.setdefault(word % 32, set()).add(word)
                    worst = max(worst, max(len(w) for w in banks.values()))
        return worst

    # vec 1: thread (tx, row) stores tile[row][tx] and reads tile[tx][row]; vec > 1: element c of its vector.
    return (ways(lambda tx, row, c: row * ld + vec * tx + c), ways(lambda tx, row, c: (vec * tx + c) * ld + row))
