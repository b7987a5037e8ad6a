"""Out-of-place transpose of a float32 matrix, out[N, M] = x[M, N]^T, any M x N, with its ladder.

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
shared accesses, which a 32-wide padded tile serves without bank conflicts). Tiles that are partial
or rows that are not 16-byte aligned (M or N not a multiple of vec) take a guarded scalar path.
"""
from __future__ import annotations

import numpy as np

from ..errors import check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import INT_MAX, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, cdiv, pow2
from .knobs import Prim
from ..dtypes import Types
from ..target import Target, default_target

ORDERS = ("row", "diagonal")
SPLITS = Prim("split", ("i", "j"), args="tile, rows (i) | tile[, vec] (j)")


class Transpose(Op):
    name = "transpose"
    summary = "out[N, M] = x[M, N]^T, float32, out of place"
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
        Knob("vec", 4, (1, 2, 4), "floats per global access (j.2)", "v", Prim("vectorize", "j.2", absent=1)),
        Knob("staged", True, (False, True), "stage the tile in shared memory", "s",
             Prim("cache_read", "x", absent=False, values=((True, "shared"),))),
        Knob("pad", 1, (0, 1), "floats of padding per shared tile row", "p",
             Prim("storage_align", "x", absent=0), when=("staged", (True,)), unused=0),
        Knob("order", "row", ORDERS, "block order over tiles", "o", Prim("annotate", "block_order", absent="row")),
        Knob("grid_stride", 0, (0, 1, 2, 4, 8, 16, 32), "blocks per SM looping over tiles; 0 = one block per tile",
             "g", Prim("annotate", "grid_stride", absent=0)),
    )
    structure_help = "i.0 and j.0 (tiles) are fused and bound to blockIdx.x; j.1 is threadIdx.x, i.2 threadIdx.y"

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        tile, vec = k["tile"], k["vec"]
        s = schedule(self.name).split("i", tile, k["rows"])
        s = s.split("j", tile, vec) if vec > 1 else s.split("j", tile)
        s = (s.fuse("i.0", "j.0").bind("i.0.j.0", "blockIdx.x")
             .bind("j.1", "threadIdx.x").bind("i.2", "threadIdx.y").unroll("i.1"))
        return self.put(s, k, "staged", "pad", "vec", "order", "grid_stride")

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
        check(vec in (1, 2, 4), "vectorize", "j.2", vec, limit="16 bytes per access", allowed="1, 2, 4")
        check(vec == 1 or k["staged"], "vectorize", "j.2", vec,
              limit="float4 rows of out are assembled from a shared tile: needs cache_read(x, shared)")
        threads = tile // vec * rows
        check(threads <= target.max_threads, "split", "i.2", rows,
              limit=f"{tile // vec} x {rows} = {threads} threads > {target.max_threads} per block")
        check(threads >= 32, "split", "i.2", rows, limit=f"{tile // vec} x {rows} = {threads} threads: at least a warp")
        check(k["pad"] in (0, 1), "storage_align", "x", k["pad"], limit="0 or 1 float per row", allowed="0, 1")

    # -- lowering ----------------------------------------------------------------------------------
    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        params = dict(k, ld=k["tile"] + k["pad"], lanes=k["tile"] // k["vec"], items=k["tile"] // k["rows"],
                      vec_type={1: "float", 2: "float2", 4: "float4"}[k["vec"]],
                      comps=("x", "y", "z", "w")[:k["vec"]])
        smem = 4 * k["tile"] * (k["tile"] + k["pad"]) if k["staged"] else 0
        return params, smem, 16 + 2 * (k["tile"] // k["rows"]) * k["vec"]

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        target = target or default_target()
        k = dict(kernel.knobs)
        m, n = problem["M"], problem["N"]
        tiles = cdiv(m, k["tile"]) * cdiv(n, k["tile"])
        blocks = min(tiles, target.sms * k["grid_stride"]) if k["grid_stride"] else tiles
        most = INT_MAX - (blocks - 1 if k["grid_stride"] else 0)    # a block's int tile number steps by the grid
        check(tiles <= most, "split", "i", k["tile"],
              limit=f"M={m}, N={n} make {tiles} tiles of {k['tile']}x{k['tile']}; gridDim.x and the kernel's int "
                    f"tile number hold at most {most}")
        launch = Launch(kernel.name, (blocks, 1, 1), (k["tile"] // k["vec"], k["rows"], 1), ("x", "out", "M", "N"))
        return Plan(kernel, problem, (launch,), (), (Scalar("M", "int", m), Scalar("N", "int", n)),
                    (("x", 4 * k["vec"]), ("out", 4 * k["vec"])))

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # partial tiles both ways; one element; whole aligned tiles (the float4 path); a thin matrix
        return ({"M": 67, "N": 1001}, {"M": 1, "N": 1}, {"M": 64, "N": 96}, {"M": 1000, "N": 3})

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"x": (problem["M"], problem["N"])}

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": rng.standard_normal((problem["M"], problem["N"]), dtype=np.float32)}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"out": (problem["N"], problem["M"])}

    def reference(self, inputs, problem):
        return {"out": np.ascontiguousarray(inputs["x"].astype(np.float64).T)}

    def tolerance(self, problem: Problem) -> float:
        return 0.0  # a copy: every element exact

    def bytes_moved(self, problem: Problem) -> int:
        return 8 * problem["M"] * problem["N"]

    def vendor(self, dev_inputs, problem):
        x = dev_inputs["x"]
        try:
            import torch
            t = torch.as_tensor(x, device="cuda").reshape(problem["M"], problem["N"])
            return "torch .t().contiguous()", lambda: t.t().contiguous()
        except ImportError:
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

    def space(self, problem: Problem, target: Target):
        for rows in (4, 8, 16, 32):
            for grid_stride in (0, 8, 16, 32):
                for order in ORDERS:
                    yield dict(tile=32, rows=rows, vec=4, staged=True, pad=1, order=order, grid_stride=grid_stride)
        for tile, rows in ((32, 8), (64, 8), (64, 16)):
            yield dict(tile=tile, rows=rows, vec=1, staged=True, pad=1, order="row", grid_stride=0)
