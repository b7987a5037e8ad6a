"""Matrix-vector product y = A x in float32, A row-major M x N, any M, N >= 1.

>>> from kernelgen.ops import get_op
>>> op = get_op("gemv")
>>> s = op.schedule(lanes=8, vec=4, unroll=2)
>>> k = op.knobs_from_schedule(s)
>>> (k["lanes"], k["vec"], k["unroll"])
(8, 4, 2)

Loop `i` (rows) is split as i = (block * warps + warp) * rows_per_warp + group:
`split("i", rows_per_block, rows_per_warp)` gives i.0 (blockIdx.x), i.1 (the warp) and i.2 (a
group of `lanes` = 32 / rows_per_warp lanes that shares one row). Loop `j` (columns) is split as
`split("j", unroll*lanes*vec, lanes*vec, vec)`: j.0 a serial loop over chunks, j.1 the loads each
lane issues before its first multiply (unrolled, so that many are in flight), j.2 the lane in the
group and j.3 the vector lane (vectorize(j.3, 1|2|4)). `reduction("j", "shuffle")` adds the
group's partial sums with butterfly shuffles; with one lane per row (the naive thread-per-row
kernel) there is nothing to reduce and the step is absent.

Rows are 16-byte aligned only when N % 4 == 0: otherwise each row starts with up to 3 scalar
products up to its first aligned element, and x (then misaligned with the row) is read as scalars.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import Dim, Kernel, Knob, LadderStep, Launch, Limits, Op, Plan, Problem, Scalar, cdiv, pow2

VEC_TYPES = {1: "float", 2: "float2", 4: "float4"}


class Gemv(Op):
    name = "gemv"
    summary = "y[M] = A[M,N] @ x[N], float32, A row-major"
    dims = (Dim("M", 8192, 133), Dim("N", 8192, 1001))
    loops = ("i", "j")
    inputs = ("A", "x")
    outputs = ("y",)
    knobs = (
        Knob("threads", 256, (64, 128, 256, 512, 1024), "threads per block (warps x 32)", "t"),
        Knob("lanes", 32, (1, 2, 4, 8, 16, 32), "lanes sharing one row (j.2); 1 = a thread per row", "l"),
        Knob("vec", 4, (1, 2, 4), "floats per load of A and x (vectorize j.3)", "v"),
        Knob("unroll", 2, (1, 2, 4, 8), "vector loads per lane in flight before the first multiply (j.1)", "u"),
        Knob("grid_stride", 0, (0, 1, 2, 4, 8), "blocks per SM looping over row groups; 0 = one block per group "
             "(fewer rows streaming from DRAM at once)", "g"),
    )
    primitives_help = ("split(i, rows_per_block, rows_per_warp); bind(i.0, blockIdx.x); bind(i.1, warp); "
                       "bind(i.2, lane); split(j, unroll*lanes*vec, lanes*vec, vec); bind(j.2, lane); "
                       "unroll(j.1); vectorize(j.3, 1|2|4); reduction(j, shuffle) when lanes > 1; "
                       "annotate(grid_stride, blocks per SM)")

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def schedule_from_knobs(self, threads, lanes, vec, unroll, grid_stride=0) -> Schedule:
        check(threads % 32 == 0 and threads >= 32, "split", "i.1", threads, limit="whole warps per block")
        rows_per_warp = 32 // lanes if lanes <= 32 and 32 % lanes == 0 else 1
        s = (schedule(self.name).split("i", threads // 32 * rows_per_warp, rows_per_warp)
             .bind("i.0", "blockIdx.x").bind("i.1", "warp").bind("i.2", "lane")
             .split("j", unroll * lanes * vec, lanes * vec, vec).bind("j.2", "lane")
             .unroll("j.1").vectorize("j.3", vec))
        if lanes > 1:
            s = s.reduction("j", "shuffle")
        if grid_stride:
            s = s.annotate("grid_stride", grid_stride)
        return s

    def read_knobs(self, r: ScheduleReader) -> dict:
        rows_per_block, rows_per_warp = r.split("i", 2, (8, 1))
        check(rows_per_block % rows_per_warp == 0, "split", "i", (rows_per_block, rows_per_warp),
              limit="rows per warp must divide rows per block")
        unroll, lanes, vec = r.vector_split("j", (32, 32, 1))
        r.bind("i.0", "blockIdx.x", allowed=("blockIdx.x",))
        r.bind("i.1", "warp", allowed=("warp",))
        r.bind("i.2", "lane", allowed=("lane",))
        r.bind("j.2", "lane", allowed=("lane",))
        r.unroll("j.1")
        strategy = r.reduction("j", "serial", ("serial", "shuffle"))
        check((strategy == "shuffle") == (lanes > 1), "reduction", "j", strategy,
              limit=f"{lanes} lane(s) per row", allowed="shuffle" if lanes > 1 else "serial (omit the step)")
        check(lanes * rows_per_warp == 32, "split", "i.2", rows_per_warp,
              limit=f"rows per warp x lanes per row (j.2 = {lanes}) must be 32")
        return {"threads": rows_per_block // rows_per_warp * 32, "lanes": lanes, "vec": vec,
                "unroll": unroll, "grid_stride": r.annotate("grid_stride", 0, (0, 1, 2, 4, 8, 16))}

    def check_knobs(self, k: dict, limits: Limits) -> None:
        check(k["threads"] % 32 == 0 and 32 <= k["threads"] <= limits.max_threads, "split", "i.1",
              k["threads"] // 32, limit=f"1..{limits.max_threads // 32} warps per block")
        check(pow2(k["lanes"]) and k["lanes"] <= 32, "split", "j.2", k["lanes"],
              limit="lanes per row is a power of two <= 32", allowed="1, 2, 4, 8, 16, 32")
        check(k["vec"] in VEC_TYPES, "vectorize", "j.3", k["vec"], limit="16 bytes per load", allowed="1, 2, 4")
        check(1 <= k["unroll"] <= 16, "split", "j.1", k["unroll"], limit="1..16 loads in flight per lane")

    # -- lowering ----------------------------------------------------------------------------------
    def template_params(self, k: dict) -> tuple[dict, int, int]:
        params = dict(k, rows_per_warp=32 // k["lanes"], rows_per_block=k["threads"] // k["lanes"],
                      vec_type=VEC_TYPES[k["vec"]],
                      comps=("x", "y", "z", "w")[:k["vec"]],
                      shuffle_offsets=tuple(1 << b for b in reversed(range(int(math.log2(k["lanes"]))))))
        # Registers: one accumulator and 2 vectors per unrolled load, plus pointers and indices.
        return params, 0, 24 + k["unroll"] * (2 * k["vec"] + 1)

    def plan(self, kernel: Kernel, problem: Problem, limits: Limits | None = None) -> Plan:
        k = dict(kernel.knobs)
        m, n = problem["M"], problem["N"]
        rows_per_block = k["threads"] // 32 * (32 // k["lanes"])
        # Rows are all vector-aligned only when N % vec == 0; otherwise the kernel with scalar heads.
        symbol = kernel.name if n % k["vec"] == 0 else kernel.name + "_unaligned"
        groups = cdiv(m, rows_per_block)
        blocks = min(groups, (limits or Limits()).sms * k["grid_stride"]) if k["grid_stride"] else groups
        launch = Launch(symbol, (blocks, 1, 1), (k["threads"], 1, 1), ("A", "x", "y", "M", "N"))
        return Plan(kernel, problem, (launch,), (), (Scalar("M", "int", m), Scalar("N", "int", n)),
                    (("A", 4 * k["vec"]), ("x", 4 * k["vec"])))

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # N % 4 == 0 takes the aligned kernel; odd N the unaligned one (heads of 1..3 scalars per row);
        # N < 4 rows are all head; 4099 leaves a ragged unrolled tail.
        return ({"M": 1, "N": 1}, {"M": 133, "N": 1001}, {"M": 67, "N": 4}, {"M": 31, "N": 1030},
                {"M": 5, "N": 4099}, {"M": 9, "N": 3}, {"M": 40, "N": 2048})

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        m, n = problem["M"], problem["N"]
        return {"A": rng.uniform(-1, 1, size=(m, n)).astype(np.float32),
                "x": rng.uniform(-1, 1, size=n).astype(np.float32)}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"y": (problem["M"],)}

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"A": (problem["M"], problem["N"]), "x": (problem["N"],)}

    def reference(self, inputs, problem):
        return {"y": inputs["A"].astype(np.float64) @ inputs["x"].astype(np.float64)}

    def tolerance(self, problem: Problem) -> float:
        # float32 sums of N random-signed products: the relative error grows like eps * sqrt(N)
        # when one thread adds a whole row (lanes = 1).
        return max(self.rel_tolerance, 4e-7 * math.sqrt(problem["N"]))

    def bytes_moved(self, problem: Problem) -> int:
        m, n = problem["M"], problem["N"]
        return 4 * (m * n + n + m)

    def flops(self, problem: Problem) -> int:
        return 2 * problem["M"] * problem["N"]

    def vendor(self, dev_inputs, problem):
        a, x = dev_inputs["A"], dev_inputs["x"]
        try:
            import torch
            ta, tx = torch.as_tensor(a, device="cuda"), torch.as_tensor(x, device="cuda")
            return "torch.mv", lambda: torch.mv(ta, tx)
        except ImportError:
            return "cupy matmul (cuBLAS)", lambda: a @ x

    def ladder(self) -> tuple[LadderStep, ...]:
        steps = [
            ("naive: a thread per row (uncoalesced: a warp reads 32 rows)",
             dict(threads=256, lanes=1, vec=1, unroll=1), ""),
            ("a warp per row, shuffle reduction (coalesced)", dict(threads=256, lanes=32, vec=1, unroll=1),
             "seed: each warp owns a row, warp-level shuffle reduction"),
            ("several rows per warp (8 lanes per row) for short rows", dict(threads=256, lanes=8, vec=1, unroll=1),
             "seed: when n is small, one warp owns several rows; helps N <~ 256, not 8192"),
            ("float4 loads, 2 in flight per lane (long rows)", dict(threads=256, lanes=32, vec=4, unroll=2),
             "seed: vectorised reads when n is large; 32 registers: 64 warps/SM, 8192 rows in one wave"),
            ("float4 loads, 4 in flight per lane", dict(threads=256, lanes=32, vec=4, unroll=4),
             "43 registers: 40 warps/SM, 8192 rows take 1.6 waves"),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps)

    def space(self, problem: Problem, limits: Limits):
        n = problem["N"]
        for threads in (128, 256, 512):
            for lanes in (4, 8, 16, 32):
                for vec in (2, 4):
                    if lanes * vec > 2 * n:   # most lanes of a group would idle
                        continue
                    for unroll in (1, 2, 4, 8):
                        yield dict(threads=threads, lanes=lanes, vec=vec, unroll=unroll, grid_stride=0)
        for threads in (256, 512):       # grid-stride over row groups: fewer rows streaming at once
            for unroll in (4, 8):
                for grid_stride in (1, 2, 4):
                    yield dict(threads=threads, lanes=32, vec=4, unroll=unroll, grid_stride=grid_stride)
