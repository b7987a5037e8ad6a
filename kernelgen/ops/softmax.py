"""Row softmax of a float32, float16 or bfloat16 matrix (fp32 math, y in x's type), y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)), any rows x cols.

>>> from kernelgen.ops import get_op
>>> op = get_op("softmax")
>>> s = op.schedule(threads=32, rows_per_block=4, items=8)      # a warp per row, 1024 floats in registers
>>> op.knobs_from_schedule(s)["rows_per_block"]
4
>>> plan = op.plan(op.kernel(s), op.problem({"rows": 37, "cols": 1000}))
>>> plan.launches[0].grid, plan.launches[0].block
((10, 1, 1), (32, 4, 1))

Loops: i over rows, j over the columns of one row.
`split("i", rows_per_block)` gives i.0 (blockIdx.x) and i.1 (the rows of one block, threadIdx.y);
`split("j", items*threads*vec, threads*vec, vec)` gives j.0 (chunks of a row), j.1 (the `items`
vectors a thread loads at once, unrolled), j.2 (the threads of one row, threadIdx.x) and j.3 (the
lane of a vector: float4 for float32; 2, 4 or 8 elements, up to 16 bytes, for 16-bit types). `reduction("j", ...)` is how the threads of a row combine their max
and sum (the values of every knob: `kernelgen list softmax`). The algorithm:
- `annotate("softmax", "three_pass")`: the seed notes' kernel, three passes in global memory
  (max of x; y = exp(x - max) and its sum; y /= sum): reads 3 and writes 2 floats per element.
  A 16-bit y is not a staging buffer (it would round exp(x - max) before the division): the second
  pass only sums and the third reads x again (3 reads, 1 write).
- `annotate("softmax", "online")`: running max and sum in one pass (the notes' unwritten online
  softmax), then y = exp(x - max) / sum: two reads, one write.
- `cache_read("x", "register")`: j.0 has one chunk; the row stays in registers (at most
  items*threads*vec columns, checked at plan time): one read, one write.
- `bind("j.0", "blockIdx.y")`: several blocks per row; a stats launch writes each block's
  (max, sum) to a workspace, a second launch combines them and writes y. Rows go in batches of
  `annotate("l2_batch_mb", MB)` so the second read of x comes from L2.
`prefetch("x", D, scope, mode)` loads D of a thread's vectors ahead in each pass of three_pass and
online (kernelgen/ops/rows.py): one vector an iteration (items 1), online's rescale per vector.
"""
from __future__ import annotations

import numpy as np

from ..errors import UsageError, check
from ..schedule import Schedule, ScheduleReader
from .base import INT_MAX, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, cdiv
from ..dtypes import Types
from ..target import Target, default_target
from .io import torch_tensor
from .knobs import Prim
from . import prefetch
from .rows import (ANY_SUFFIX, L2_BATCH, MAX_CHUNK, ROW_KNOBS, ROW_PREFETCH, HalfRowNumbers, RowRules, RowSchedule,
                   row_heuristic, row_space, row_wide_axes)

PASSES = ("three_pass", "online")                 # the algorithms annotate(softmax, ...) names
ALGOS = PASSES + ("registers", "split")
RULES = RowRules()                                # the heuristic's constants (bench/rows_probe.py calibrates them)


class Softmax(HalfRowNumbers, RowSchedule, Op):
    name = "softmax"
    summary = ("y[r, :] = softmax(x[r, :]) over each row, numerically stable (max subtracted); "
               "float32, float16 or bfloat16 in and out, fp32 math")
    dims = (Dim("rows", 4096, 37), Dim("cols", 4096, 1000, maximum=INT_MAX - MAX_CHUNK, why=f"int column indexes run up to a chunk of a row (items*threads*vec, "
                                                             f"at most {MAX_CHUNK}) past its end"))
    loops = ("i", "j")
    inputs = ("x",)
    outputs = ("y",)
    dtypes = ("float32", "float16", "bfloat16")
    knobs = ROW_KNOBS + (
        Knob("algo", "registers", ALGOS, "three_pass | online | registers (the row in registers) | split (j.0 on "
             "blocks)", "a", Prim("annotate", "softmax", args="three_pass|online")),
        L2_BATCH,
    ) + ROW_PREFETCH
    structure_help = ("algo registers is cache_read(x, register) instead of annotate(softmax, ...); algo split is "
                      "bind(j.0, blockIdx.y)")

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        s = self.row_steps(k)
        if k["algo"] == "registers":
            s = s.cache_read("x", "register")
        elif k["algo"] == "split":
            s = self.put(s.bind("j.0", "blockIdx.y"), k, "l2_batch_mb")
        else:
            s = s.annotate("softmax", k["algo"])
        return self.put(prefetch.build(s, k, ("x",)), k, "prefetch_pad", "prefetch_slots")

    def read_knobs(self, r: ScheduleReader) -> dict:
        k = self.read_row_steps(r)
        j0 = r.read("bind", "j.0", "serial", ("serial", "blockIdx.y"))
        cached = r.read("cache_read", "x", None, ("register",))
        annotated = r.read("annotate", "softmax", None, PASSES)
        if j0 == "blockIdx.y":
            check(cached is None and annotated is None, "bind", "j.0", j0,
                  limit="several blocks per row: the stats pass is online and nothing stays in registers")
            algo = "split"
        elif cached == "register":
            check(annotated is None, "annotate", "softmax", annotated, limit="cache_read(x, register) reads x once")
            algo = "registers"
        else:
            algo = annotated or "online"
        return dict(k, algo=algo, **prefetch.read(r, ("x",)))

    def name_knobs(self, k: dict) -> dict:
        return prefetch.name_knobs(self, k)

    def check_knobs(self, k: dict, target: Target) -> None:
        self.check_row_knobs(k, target)
        if k["algo"] == "split":
            check(k["threads"] >= 32, "bind", "j.0", "blockIdx.y", limit=f"several blocks per row need a block "
                  f"per row chunk: threads per row >= 32, not {k['threads']}")
        if k["algo"] == "registers":
            self.check_register_row(k, target)

    # -- lowering ----------------------------------------------------------------------------------
    def template(self, knobs: dict) -> str:
        return "softmax_split.cu.j2" if knobs["algo"] == "split" else "softmax.cu.j2"

    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        params, red_words = self.row_params(k, types)
        # three_pass stages exp(x - max) in a float32 y; a 16-bit y would round it twice, so its third
        # pass reads x again instead.
        params["stage_in_y"] = types.output.itemsize == 4
        params["red_floats"] = red_words * (2 if k["algo"] in ("online", "split") else 1)  # one set per statistic
        params.update(self.row_prefetch(k, types, target, PASSES, 4 * params["red_floats"]))
        regs = 24 + k["items"] * k["vec"] + prefetch.registers(k, max(1, params["access_bytes"] // 4))
        return params, 4 * params["red_floats"] + self.row_prefetch_bytes_of(k, types), regs

    def max_cols(self, k: dict) -> int:
        return k["items"] * k["threads"] * k["vec"]

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        target = target or default_target()
        k = dict(kernel.knobs)
        rows, cols = problem["rows"], problem["cols"]
        t, rpb = k["threads"], k["rows_per_block"]
        # Vector kernels need vec*itemsize-aligned buffers; when cols % vec != 0 rows start anywhere in a vector
        # and the plan takes the any-alignment twin (x and y still vec*itemsize-aligned).
        align, twin = self.row_alignment(k, problem, ("x", "y"))
        suffix = ANY_SUFFIX if twin else ""
        if k["algo"] == "registers":
            check(cols <= self.max_cols(k), "cache_read", "x", f"cols={cols}",
                  limit=f"the row must fit in registers: cols <= items*threads*vec = {self.max_cols(k)}")
        if k["algo"] != "split":
            launch = Launch(kernel.name + suffix, (cdiv(rows, rpb), 1, 1), (t, rpb, 1), ("x", "y", "rows", "cols"),
                            self.row_prefetch_bytes(kernel))
            return Plan(kernel, problem, (launch,), (), (Scalar("rows", "int", rows), Scalar("cols", "int", cols)),
                        align)
        launches, workspaces, scalars = self.split_launches(
            kernel, k, problem, suffix, ("x", "stats", "cols", "chunks", "row0"),
            ("x", "stats", "y", "cols", "chunks", "row0"), 2)
        return Plan(kernel, problem, launches, workspaces, scalars, align)

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k = dict(kernel.knobs)
        t, rpb = k["threads"], k["rows_per_block"]
        twins, align = self.row_recipe_twins(kernel, k, ("x", "y"))
        common = dict(arch=kernel.arch, sizes=("rows", "cols"), buffers=self.recipe_buffers(kernel), alignment=align)
        requires = ((f"cols <= {self.max_cols(k)}", "the row must fit in registers: cols <= items*threads*vec"),) \
            if k["algo"] == "registers" else ()
        if k["algo"] != "split":
            steps = tuple(Step(kernel.name + sfx, (f"kg_cdiv(rows, {rpb})", "1", "1"), (t, rpb, 1),
                               ("x", "y", "rows", "cols"), self.row_prefetch_bytes(kernel), when=when)
                          for sfx, when in twins)
            return Recipe(steps=steps, requires=requires, **common)
        split = self.split_recipe(kernel, k, twins, ("x", "stats", "cols", "chunks", "row0"),
                                  ("x", "stats", "y", "cols", "chunks", "row0"), 2)
        return Recipe(**split, **common)

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # Odd column counts take the any-alignment twin; 4096 columns is the ladder's register-row limit.
        # 9001 columns is over twice the default chunk (4 items x 256 threads x float4): the loops over
        # chunks (online and Welford statistics, split's several blocks a row) come round at the default
        # knobs, on rows at three offsets; register rows refuse it by name (max_cols). 8188 columns, one
        # vector short of two default chunks, are 9001's case for the aligned kernels (split's aligned
        # chunks and their counts; a thread's last chunk holding anything from N - 1 to N vectors).
        return ({"rows": 37, "cols": 1000}, {"rows": 3, "cols": 7}, {"rows": 130, "cols": 1},
                {"rows": 2, "cols": 4093}, {"rows": 1, "cols": 4096}, {"rows": 3, "cols": 9001},
                {"rows": 2, "cols": 8188})

    def check_problem(self, problem: Problem) -> None:
        for d in ("rows", "cols"):
            if problem[d] < 1:
                raise UsageError(f"softmax: {d}={problem[d]} is empty; softmax needs at least one row and one column")

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        # Spread of +-~12 so exp() without the max subtracted would lose digits, plus a large offset
        # per row so an unstable kernel overflows.
        x = rng.standard_normal((problem["rows"], problem["cols"])) * 3.0
        x += rng.uniform(-40.0, 90.0, size=(problem["rows"], 1))
        return self.encoded(problem, {"x": x})

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"y": (problem["rows"], problem["cols"])}

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"x": (problem["rows"], problem["cols"])}

    device_reference = True     # validate on a GPU computes the float64 rows there (xp=cupy): at vocabulary
                                # widths (4096 x 128256) the host's exp alone outlasted a benchmark call

    def reference(self, inputs, problem, xp=np):
        x = self.decoded(problem, inputs, xp)["x"]
        e = xp.exp(x - x.max(axis=1, keepdims=True))
        return {"y": e / e.sum(axis=1, keepdims=True)}

    def measure(self, problem: Problem) -> str:
        if not self.half_output(problem):
            return self.error_measure
        return "max |y - ref| / (|ref| + smallest normal of y's type), per element"

    def error(self, name, out, ref, inputs, problem) -> float:
        """float32: the relative L2 error. 16-bit y: the worst element's relative error, with the
        output type's smallest normal added to |ref| (values below it are rounded on a fixed spacing)."""
        if not self.half_output(problem):
            return super().error(name, out, ref, inputs, problem)
        return self.elementwise_error(out, ref, problem.dtype("y").smallest_normal)

    def tolerance(self, problem: Problem) -> float:
        """float32: 1e-5. 16-bit y: twice its unit roundoff (the rounding of y is one; the fp32 math
        adds ~1e-6), so one element off by an ulp of y's type more than rounding fails."""
        return 2 * problem.dtype("y").unit_roundoff if self.half_output(problem) else self.rel_tolerance

    def bytes_moved(self, problem: Problem) -> int:
        return 2 * problem.dtype("x").itemsize * problem["rows"] * problem["cols"]

    def flops(self, problem: Problem) -> int:
        return 4 * problem["rows"] * problem["cols"]   # max, subtract, exp, add; the scale

    def vendor(self, dev_inputs, problem):
        x, d = dev_inputs["x"], problem.dtype("x")
        try:
            import torch
            t = torch_tensor(x, d)
            return "torch.softmax", lambda: torch.softmax(t, dim=-1)
        except ImportError:
            if d.name == "bfloat16":
                return None           # cupy has no bfloat16
            import cupy
            def run():
                e = cupy.exp(x - x.max(axis=1, keepdims=True))
                return e / e.sum(axis=1, keepdims=True)
            return "cupy (exp / sum)", run

    # -- ladder and search -------------------------------------------------------------------------
    def ladder(self) -> tuple[LadderStep, ...]:
        blk = dict(threads=256, rows_per_block=1, items=1, vec=1, l2_batch_mb=16)
        steps = [
            ("naive: a thread per row, three passes in global memory",
             dict(blk, threads=1, rows_per_block=128, reduction="serial", algo="three_pass"), "seed v1: 1.68% of torch"),
            ("a block per row, shared-memory tree reductions for max and sum",
             dict(blk, reduction="shared", algo="three_pass"), "seed v2: 94% of torch"),
            ("warp-level shuffle reductions", dict(blk, reduction="shuffle", algo="three_pass"), "seed v3: 96% of torch"),
            ("online softmax: running max and sum in one pass, then the write pass",
             dict(blk, reduction="shuffle", algo="online"), "seed: described, left undone"),
            ("online softmax with float4 loads, 4 in flight per thread",
             dict(blk, items=4, vec=4, reduction="shuffle", algo="online"), ""),
            ("the row in registers (read once), float4", dict(blk, items=4, vec=4, reduction="shuffle", algo="registers"),
             "rows up to 4096 columns"),
            ("several blocks per row: a stats launch and a write launch", dict(blk, items=4, vec=4, threads=128,
             reduction="shuffle", algo="split"), "for very long rows"),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps)

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """16-byte accesses (float4, or 8 elements of a 16-bit type); the row in registers where it fits
        (16 floats a thread, up to 32 with a block of 1024 threads) and the rows fill the GPU; long rows,
        many of them: a block per row, online (the second read from L2); else split over blocks
        (`row_heuristic`, constants in RULES)."""
        target = target or default_target()
        k = row_heuristic(problem["rows"], problem["cols"], problem.dtype("x").itemsize, target, RULES, "online")
        return self.schedule_from_knobs(**dict(dict(l2_batch_mb=16), **k))

    def wide_axes(self, problem: Problem, target: Target) -> dict[str, tuple]:
        return row_wide_axes(problem.dtype("x").itemsize, ("three_pass", "online", "registers", "split"))

    def space(self, problem: Problem, target: Target):
        return row_space(problem["cols"], problem.dtype("x").itemsize, target, "online", static_words=2)
