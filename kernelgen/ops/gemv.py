"""Matrix-vector product y = A x, A row-major M x N, any M, N >= 1: float32, or float16/bfloat16 A and x
with fp32 accumulation (y in their type or float32).

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

Long rows are shared by several warps (`lanes` = 64 .. 1024 threads per row, up to the whole
block): then `split("i", rows_per_block)` gives i.0 (blockIdx.x) and i.1 (threadIdx.y, the row in
the block), `bind("j.2", "threadIdx.x")` spreads a row over `lanes` threads, and
`reduction("j", "shuffle")` is, as for the row ops (softmax, layer norm), butterfly shuffles inside
each warp and then the warps' partial sums through shared memory, added by the row's first warp.
A block then finishes its row(s) quickly, and the block scheduler balances the end of the kernel
with many short blocks instead of each warp streaming one row to the end.
The default, a block of 1024 threads per row with 2 float4 loads each (a whole 32 KB row in flight),
takes 92.7 us at 8192 x 8192 on the H100 against 100.7 us for the best warp-per-row kernel;
`schedule_for` gives shorter rows fewer threads.

>>> k = op.knobs_from_schedule(op.schedule(threads=512, lanes=256, vec=4, unroll=8))
>>> (k["threads"], k["lanes"], op.plan(op.kernel(op.schedule(threads=512, lanes=256)),
...                                    op.problem({"M": 5, "N": 7})).launches[0].block)
(512, 256, (256, 2, 1))

`prefetch("A", D, scope, mode)` with its twin on x (and `storage_align` for shared slots: see
kernelgen/ops/prefetch.py) loads D of a thread's vectors of the row ahead, in place of `unroll`
(which must be 1): a thread's loop over its row's vectors v = sub, sub + lanes, ... is the loop it
serves. The kernel for rows that are not vector-aligned prefetches A only (its x is read as scalars).

>>> op.kernel(op.schedule(unroll=1, prefetch=4, prefetch_scope="shared", prefetch_mode="rolling",
...                       prefetch_pad=1)).name
'gemv_f32_sm90_t1024_l1024_v4_u1_g0_p4_psshared_pmrolling_pp1_plinterleaved'

Rows are 16-byte aligned only when N % 4 == 0: otherwise each row starts with up to 3 scalar
products up to its first aligned element, and x (then misaligned with the row) is read as scalars.

16-bit A and x: `vec` counts elements, so a 16-byte load is `vectorize("j.3", 8)` (rows are then
vector-aligned when N % 8 == 0); each product is formed in fp32 from the converted elements (exact:
two 16-bit significands fit in fp32's) and summed in fp32. `schedule_for` keeps the float32 rule in
bytes: two 16-byte loads per thread cover about the row.

>>> p = op.problem({"M": 8192, "N": 8192}, dtype="bf16")
>>> op.kernel(op.schedule_for(p), types=p.types).name
'gemv_bf16_sm90_t512_l512_v8_u2_g0'
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import INT_MAX, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, cdiv, pow2
from . import prefetch
from .knobs import Prim, Range
from ..dtypes import Types
from .io import element_io, torch_tensor, vector_widths, zero_vector
from ..target import Target, default_target

VEC_TYPES = {1: "float", 2: "float2", 4: "float4"}
SPLIT_I = Prim("split", "i", args="rows_per_block, rows_per_warp")
SPLIT_J = Prim("split", "j", args="unroll*lanes*vec, lanes*vec, vec")


class Gemv(Op):
    name = "gemv"
    summary = "y[M] = A[M,N] @ x[N], A row-major; float32, float16 or bfloat16 (y in their type or float32), fp32 sums"
    error_measure = "||y - ref|| / max(||ref||, ||a * x||: the L2 size of the rows' products)"
    dtypes = ("float32", "float16", "bfloat16")
    dims = (Dim("M", 8192, 133, maximum=INT_MAX - 1024, why="the int row index runs up to a block of rows (1024) past M"),
            Dim("N", 8192, 1001, maximum=INT_MAX - 16 * 1024 * 4,
                why="int column indexes run up to unroll*lanes*vec (at most 65536) past the row"))
    loops = ("i", "j")
    inputs = ("A", "x")
    outputs = ("y",)
    knobs = (
        Knob("threads", 1024, (32, 64, 128, 256, 512, 1024), "threads per block (warps x 32)", "t", SPLIT_I,
             tune=(64, 128, 256, 512, 1024)),
        Knob("lanes", 1024, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
             "threads sharing one row (j.2); 1 = a thread per row; > 32: several warps, a block reduction", "l",
             SPLIT_J),
        Knob("vec", 4, (1, 2, 4, 8), "elements per load of A and x (j.3): float32 1|2|4, 16-bit types 1|2|4|8", "v",
             Prim("vectorize", "j.3", always=True)),
        Knob("unroll", 2, Range(1, 16), "vector loads per lane in flight before the first multiply (j.1)", "u",
             SPLIT_J, tune=(1, 2, 4, 8)),
        Knob("grid_stride", 0, (0, 1, 2, 4, 8, 16), "blocks per SM looping over row groups; 0 = one block per group "
             "(fewer rows streaming from DRAM at once)", "g", Prim("annotate", "grid_stride", absent=0)),
    ) + prefetch.knobs(("A", "x"), "vectors of its row each thread loads ahead, A's and x's (needs unroll 1)")
    structure_help = ("lanes 64..1024 (several warps per row): split(i, rows_per_block) with bind(i.1, threadIdx.y) "
                      "and bind(j.2, threadIdx.x), and reduction(j, shuffle) adds warp shuffles, then the warps' sums "
                      "through shared memory; one lane per row has no reduction step")

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        threads, lanes, vec, unroll = k["threads"], k["lanes"], k["vec"], k["unroll"]
        check(threads % 32 == 0 and threads >= 32, "split", "i.1", threads, limit="whole warps per block")
        if lanes > 32:   # several warps per row: a 2-D block of lanes x rows_per_block threads
            check(lanes % 32 == 0 and threads % lanes == 0, "split", "j.2", lanes,
                  limit=f"a row's threads span whole warps and divide the block's {threads} threads",
                  allowed=", ".join(str(t) for t in (64, 128, 256, 512, 1024) if t <= threads))
            s = (schedule(self.name).split("i", threads // lanes)
                 .bind("i.0", "blockIdx.x").bind("i.1", "threadIdx.y")
                 .split("j", unroll * lanes * vec, lanes * vec, vec).bind("j.2", "threadIdx.x"))
        else:
            rows_per_warp = 32 // lanes if 32 % lanes == 0 else 1
            s = (schedule(self.name).split("i", threads // 32 * rows_per_warp, rows_per_warp)
                 .bind("i.0", "blockIdx.x").bind("i.1", "warp").bind("i.2", "lane")
                 .split("j", unroll * lanes * vec, lanes * vec, vec).bind("j.2", "lane"))
        s = self.put(s.unroll("j.1"), k, "vec")
        if lanes > 1:
            s = s.reduction("j", "shuffle")
        s = prefetch.build(self.put(s, k, "grid_stride"), k, self.inputs)
        return self.put(s, k, "prefetch_pad", "prefetch_slots")

    def read_knobs(self, r: ScheduleReader) -> dict:
        unroll, lanes, vec = r.vector_split("j", (32, 32, 1))   # widths per type: template_params
        block_rows = r.read("bind", "j.2", "lane", ("lane", "threadIdx.x")) == "threadIdx.x"
        r.expect("bind", "i.0", "blockIdx.x")
        r.expect("unroll", "j.1", 0)
        strategy = r.read("reduction", "j", "serial", ("serial", "shuffle"))
        check((strategy == "shuffle") == (lanes > 1), "reduction", "j", strategy,
              limit=f"{lanes} lane(s) per row", allowed="shuffle" if lanes > 1 else "serial (omit the step)")
        if block_rows:
            check(lanes > 32 and lanes % 32 == 0, "bind", "j.2", f"threadIdx.x with {lanes} threads per row",
                  limit="threadIdx.x spreads a row over several whole warps",
                  allowed="64, 128, 256, 512, 1024 threads per row; bind(j.2, lane) for <= 32")
            (rows_per_block,) = r.split("i", 1, (1,))
            r.expect("bind", "i.1", "threadIdx.y")
            return {"threads": rows_per_block * lanes, "lanes": lanes, "vec": vec, "unroll": unroll,
                    **prefetch.read(r, self.inputs)}
        rows_per_block, rows_per_warp = r.split("i", 2, (8, 1))
        check(rows_per_block % rows_per_warp == 0, "split", "i", (rows_per_block, rows_per_warp),
              limit="rows per warp must divide rows per block")
        r.expect("bind", "i.1", "warp")
        r.expect("bind", "i.2", "lane")
        check(lanes <= 32, "bind", "j.2", f"lane with {lanes} threads per row",
              limit=f"{lanes} threads per row span {lanes // 32} warps",
              allowed="threadIdx.x, with split(i, rows_per_block) and bind(i.1, threadIdx.y)")
        check(lanes * rows_per_warp == 32, "split", "i.2", rows_per_warp,
              limit=f"rows per warp x lanes per row (j.2 = {lanes}) must be 32")
        return {"threads": rows_per_block // rows_per_warp * 32, "lanes": lanes, "vec": vec, "unroll": unroll,
                **prefetch.read(r, self.inputs)}

    def name_knobs(self, k: dict) -> dict:
        return prefetch.name_knobs(self, k)

    def check_knobs(self, k: dict, target: Target) -> None:
        check(k["threads"] % 32 == 0 and 32 <= k["threads"] <= target.max_threads, "split", "i.1",
              k["threads"] // 32, limit=f"1..{target.max_threads // 32} warps per block")
        check(pow2(k["lanes"]) and k["lanes"] <= k["threads"], "split", "j.2", k["lanes"],
              limit=f"threads per row is a power of two <= the block's {k['threads']} threads",
              allowed="1, 2, 4, 8, 16, 32 (lanes of a warp); 64, 128, 256, 512, 1024 (warps, bind(j.2, threadIdx.x))")
        check(1 <= k["unroll"] <= 16, "split", "j.1", k["unroll"], limit="1..16 loads in flight per lane")

    # -- lowering ----------------------------------------------------------------------------------
    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        d, o = types.input, types.output
        widths = vector_widths(d, (1, 2, 4))
        check(k["vec"] in widths, "vectorize", "j.3", k["vec"], limit=f"16 bytes per load of {d.name}",
              allowed=", ".join(map(str, widths)))
        lanes, block_rows = k["lanes"], k["lanes"] > 32
        warps_per_row = lanes // 32 if block_rows else 1
        io, out_io = element_io(d, k["vec"]), element_io(o, 1)
        params = dict(k, rows_per_warp=max(1, 32 // lanes), rows_per_block=k["threads"] // lanes,
                      block_rows=block_rows, warps_per_row=warps_per_row,
                      vec_type=io["vtype"], comps=io["lanes"], io=io, itemsize=d.itemsize,
                      access_bytes=k["vec"] * d.itemsize,
                      out_ctype=out_io["ctype"], out_from_float=out_io["from_float"],
                      headers=tuple(dict.fromkeys(h for h in (d.header, o.header) if h)),
                      warps=k["threads"] // 32)
        # Rows over several warps: one partial sum per warp in shared memory.
        shared = 4 * (k["threads"] // 32) if block_rows else 0
        vbytes = params["access_bytes"]
        prefetch.check_legal(k, target, "A", k["threads"], [vbytes, vbytes], shared, ("j", "unroll"), grid_stride=False)
        # A row's vectors and x's: the unaligned kernel's x is misaligned with the row, read as scalars.
        bufs = [dict(name=b, vtype=io["vtype"], src=f"{b.lower()}v", zero=zero_vector(io, k["vec"]), vbytes=vbytes)
                for b in ("A", "x")]
        pf = prefetch.params(k, target, bufs)
        params.update(pf, pf_a=pf.get("prefetch_bufs", [])[:1],
                      pf_tid=f"(int)(threadIdx.y * {lanes} + threadIdx.x)" if block_rows else "(int)threadIdx.x")
        # Registers: one accumulator and 2 vectors (of 4-byte registers) per unrolled load, plus pointers and indices.
        regs = 24 + k["unroll"] * (2 * k["vec"] * d.itemsize // 4 + 1) + prefetch.registers(k, 2 * max(1, vbytes // 4))
        return params, shared + prefetch.shared_bytes(k, k["threads"], [vbytes, vbytes]), regs

    def prefetch_bytes(self, kernel: Kernel) -> int:
        """Dynamic shared memory: the prefetch slots of A and x, if in shared memory."""
        vbytes = (kernel.types or self.types())["A"].itemsize * kernel.knob("vec")
        return prefetch.shared_bytes(dict(kernel.knobs), kernel.knob("threads"), [vbytes, vbytes])

    def out_dtypes(self, dtype_name: str) -> tuple[str, ...]:
        """y in A's type, or float32 for 16-bit A and x (the fp32 sum stored without rounding it to 16 bits)."""
        return (dtype_name,) if dtype_name == "float32" else (dtype_name, "float32")

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        k = dict(kernel.knobs)
        m, n = problem["M"], problem["N"]
        rows_per_block = k["threads"] // k["lanes"]
        # Rows are all vector-aligned only when N % vec == 0; otherwise the kernel with scalar heads.
        symbol = kernel.name if n % k["vec"] == 0 else kernel.name + "_unaligned"
        groups = cdiv(m, rows_per_block)
        blocks = min(groups, (target or default_target()).sms * k["grid_stride"]) if k["grid_stride"] else groups
        most = INT_MAX - (blocks - 1) * rows_per_block
        check(m <= most, "annotate", "grid_stride", k["grid_stride"],
              limit=f"M={m}: the int row index steps {blocks} blocks x {rows_per_block} rows past M; M <= {most}")
        # Rows over several warps: a 2-D block, threadIdx.x along the row (j.2), threadIdx.y the row (i.1).
        block = (k["lanes"], rows_per_block, 1) if k["lanes"] > 32 else (k["threads"], 1, 1)
        launch = Launch(symbol, (blocks, 1, 1), block, ("A", "x", "y", "M", "N"), self.prefetch_bytes(kernel))
        access = problem.dtype("A").itemsize * k["vec"]
        return Plan(kernel, problem, (launch,), (), (Scalar("M", "int", m), Scalar("N", "int", n)),
                    (("A", access), ("x", access)))

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k = dict(kernel.knobs)
        rpb = k["threads"] // k["lanes"]
        lets = (("groups", "long long", f"kg_cdiv(M, {rpb})"),
                ("blocks", "long long", f"kg_min(groups, sms * {k['grid_stride']})" if k["grid_stride"] else "groups"))
        block = (k["lanes"], rpb, 1) if k["lanes"] > 32 else (k["threads"], 1, 1)
        args, smem = ("A", "x", "y", "M", "N"), self.prefetch_bytes(kernel)
        if k["vec"] > 1:
            steps = (Step(kernel.name, ("blocks", "1", "1"), block, args, smem, when=f"N % {k['vec']} == 0"),
                     Step(kernel.name + "_unaligned", ("blocks", "1", "1"), block, args, smem, when=f"N % {k['vec']} != 0"))
        else:
            steps = (Step(kernel.name, ("blocks", "1", "1"), block, args, smem),)
        access = (kernel.types or self.types())["A"].itemsize * k["vec"]
        return Recipe(kernel.arch, ("M", "N"), self.recipe_buffers(kernel), steps, lets,
                      alignment=(("A", access, ""), ("x", access, "")),
                      requires=((f"M <= {INT_MAX} - (blocks - 1) * {rpb}", "the int row index steps the grid past M"),))

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # N % 4 == 0 takes the aligned kernel; odd N the unaligned one (heads of 1..3 scalars per row);
        # N < 4 rows are all head; 4099 leaves a ragged unrolled tail; a column of one: rows whose distance
        # to the next vector boundary (up to vec - 1) is longer than the row. 9001: past 2 x 1024 float4s,
        # so at the default 1024 lanes and unroll 2 every lane runs the unrolled loop (4099 is one short).
        return ({"M": 1, "N": 1}, {"M": 133, "N": 1001}, {"M": 67, "N": 4}, {"M": 31, "N": 1030},
                {"M": 5, "N": 4099}, {"M": 9, "N": 3}, {"M": 40, "N": 2048}, {"M": 7, "N": 1}, {"M": 3, "N": 9001})

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        m, n, d = problem["M"], problem["N"], problem.dtype("A")
        return {"A": d.encode(rng.uniform(-1, 1, size=(m, n)).astype(np.float32)),
                "x": d.encode(rng.uniform(-1, 1, size=n).astype(np.float32))}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"y": (problem["M"],)}

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"A": (problem["M"], problem["N"]), "x": (problem["N"],)}

    def reference(self, inputs, problem):
        d = problem.dtype("A")
        return {"y": d.decode(inputs["A"]) @ d.decode(inputs["x"])}

    def sum_error(self, n: int) -> float:
        """The fp32 sum's error relative to the size of the sum (float32 sums of N random-signed
        products: it grows like eps * sqrt(N) when one thread adds a whole row, lanes = 1)."""
        return max(self.rel_tolerance, 4e-7 * math.sqrt(n))

    def half_output(self, problem: Problem) -> bool:
        return problem.dtype("y").itemsize == 2

    def measure(self, problem: Problem) -> str:
        if not self.half_output(problem):
            return self.error_measure
        return "max |y - ref| / (|ref| + the row's fp32 sum error / y's unit roundoff), per element"

    def error(self, name, out, ref, inputs, problem) -> float:
        """float32 y: the L2 error relative to ||ref||, or to the rows' products' size ||a * x|| where the
        products cancel (M = 1 with a small sum: its fp32 error is the products' size's, not the sum's).
        16-bit y: the worst element's relative error, with the size below which the fp32 sum's own error
        (sum_error x the row's ||a * x||) outweighs y's rounding added to |ref| (a row whose products
        cancel is only as exact as its sum)."""
        out = np.asarray(out, dtype=np.float64)
        if not np.all(np.isfinite(out)):
            return float("inf")
        d = problem.dtype("A")
        size = np.sqrt(((d.decode(inputs["A"]) * d.decode(inputs["x"])) ** 2).sum(axis=1))
        if not self.half_output(problem):
            scale = max(float(np.linalg.norm(ref)), float(np.linalg.norm(size)))
            return float(np.linalg.norm(out - ref)) / scale if scale > 0 else float(np.abs(out).max(initial=0.0))
        scale = self.sum_error(problem["N"]) / problem.dtype("y").unit_roundoff * size
        return float(np.max(np.abs(out - ref) / (np.abs(ref) + scale)))

    def tolerance(self, problem: Problem) -> float:
        """float32 y (any inputs): the fp32 sum's error. 16-bit y: twice its unit roundoff (the rounding
        of y is one), so an element off by an ulp of y's type more than rounding fails."""
        return 2 * problem.dtype("y").unit_roundoff if self.half_output(problem) else self.sum_error(problem["N"])

    def bytes_moved(self, problem: Problem) -> int:
        m, n = problem["M"], problem["N"]
        return problem.dtype("A").itemsize * (m * n + n) + problem.dtype("y").itemsize * m

    def flops(self, problem: Problem) -> int:
        return 2 * problem["M"] * problem["N"]

    def vendor(self, dev_inputs, problem):
        a, x, d = dev_inputs["A"], dev_inputs["x"], problem.dtype("A")
        try:
            import torch
            ta, tx = torch_tensor(a, d), torch_tensor(x, d)
            # torch.mv writes y in A's type: with a float32 y that is M elements fewer bytes than ours.
            return "torch.mv", lambda: torch.mv(ta, tx)
        except ImportError:
            if d.name == "bfloat16":
                return None           # cupy has no bfloat16
            return "cupy matmul (cuBLAS)", lambda: a @ x

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """Threads per row so that one trip of 2 float4 loads per thread covers about the row: the
        power of two <= N / 8, 1 .. 1024 (1024 from N = 8192 on: the default), at least 256 threads
        per block. Measured on the H100 (bench_results/gemv_multiwarp_h100.txt) within 5% of the
        tuned best at N = 128, 1024, 4096, 8192 and 32768; the default (1024 threads per row) is
        2.9x slower at N = 1024 and 19x at N = 128, where most of its threads idle.
        16-bit types: the same rule in bytes, 2 loads of 16 bytes (8 elements) per thread, so the
        power of two <= N / 16 (512 threads per row at N = 8192; not yet timed on a GPU)."""
        vec = 16 // problem.dtype("A").itemsize
        lanes = min(1024, 1 << max(0, (problem["N"] // (2 * vec)).bit_length() - 1))
        return self.schedule_from_knobs(threads=max(lanes, 256), lanes=lanes, vec=vec, unroll=2, grid_stride=0)

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
            ("a block of 32 warps per row: the whole row in flight, shuffles then shared memory",
             dict(threads=1024, lanes=1024, vec=4, unroll=2),
             "1024 threads x 2 float4 = one 32 KB row per block: short blocks the block scheduler balances, "
             "instead of each warp streaming a row to the end; 32 registers, 2 blocks/SM"),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps)

    def space(self, problem: Problem, target: Target):
        n = problem["N"]
        vec = 16 // problem.dtype("A").itemsize          # 16-byte loads: float4, or 8 elements of a 16-bit type
        # A warp (or part of one) per row: the best of the earlier searches (bench_results/gemv_tune*.txt,
        # where 128..512 threads, 4..32 lanes, float2 and grid_stride never won at 8192x8192).
        for threads in (128, 256):
            for lanes in (8, 16, 32):
                if lanes * vec > 2 * n:     # most lanes of a group would idle
                    continue
                for unroll in (4, 8):
                    yield dict(threads=threads, lanes=lanes, vec=vec, unroll=unroll, grid_stride=0)
        # Several warps per row, a block reduction: short blocks the block scheduler balances.
        for lanes in (64, 128, 256, 512, 1024):
            if lanes * vec > 2 * n:
                continue
            for rows_per_block in (1, 2, 4):
                if lanes * rows_per_block > target.max_threads:
                    continue
                for unroll in (1, 2, 4, 8):
                    if unroll > 1 and unroll * lanes * vec > n:   # past the row: the loads would not batch
                        continue
                    point = dict(threads=lanes * rows_per_block, lanes=lanes, vec=vec, unroll=unroll, grid_stride=0)
                    yield point
                    if unroll == 1:
                        yield from self.prefetched(point, n, problem, target)
        # The same, with 1 or 2 blocks per SM looping over the rows (no block launches after the first wave):
        # each trip covers 8192 elements of a row; prefetching in place of the unrolled loads.
        for lanes, unroll in ((1024 * 4 // vec, 2), (512 * 4 // vec, 4)):
            if lanes * vec * unroll <= max(n, 4096):
                for grid_stride in (1, 2):
                    point = dict(threads=lanes, lanes=lanes, vec=vec, unroll=unroll, grid_stride=grid_stride)
                    yield point
                    yield from self.prefetched(dict(point, unroll=1), n, problem, target)

    def prefetched(self, point: dict, n: int, problem: Problem, target: Target):
        """`point` with each prefetch form (prefetch.forms) whose distance the row's vectors cover and
        whose slots are legal."""
        vbytes = problem.dtype("A").itemsize * point["vec"]
        static = 4 * (point["threads"] // 32) if point["lanes"] > 32 else 0
        for pf in prefetch.forms():
            k = dict(point, **pf)
            if pf["prefetch"] * point["lanes"] * point["vec"] <= n and \
                    prefetch.legal(k, target, k["threads"], [vbytes, vbytes], static, split=("j", "unroll"), grid_stride=False):
                yield k
