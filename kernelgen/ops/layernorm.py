"""Layer norm over rows, float32, float16 or bfloat16 (fp32 math, gamma, beta and y in x's type): y = (x - mean) / sqrt(var + eps) * gamma + beta, any rows x cols.

>>> from kernelgen.ops import get_op
>>> op = get_op("layernorm")
>>> s = op.schedule(threads=32, rows_per_block=4, items=8)   # a warp per row, 1024 floats in registers
>>> op.knobs_from_schedule(s)["algo"]
'registers'
>>> op.plan(op.kernel(s), op.problem({"rows": 37, "cols": 1000})).launches[0].block
(32, 4, 1)

The loops and primitives are softmax's (see kernelgen/ops/softmax.py): `split("i", rows_per_block)`,
`split("j", items*threads*vec, threads*vec, vec)`, `reduction("j", ...)` (`kernelgen list layernorm`). The
algorithm is one of
- `annotate("layernorm", "two_pass")`: the mean, then the variance around it, then y: three reads of x.
- `annotate("layernorm", "welford")`: mean and variance in one pass (Welford, merged per chunk of
  `items` vectors with Chan's formula), then y: two reads.
- `cache_read("x", "register")`: the row stays in registers (at most items*threads*vec columns,
  checked at plan time); the variance is an exact second pass over the registers: one read.
- `bind("j.0", "blockIdx.y")`: several blocks per row (rows too long for one block's registers, or
  too few rows to fill the GPU). A stats launch writes each block's exact (mean, M2) of its chunk
  (held in registers) to a workspace; a write launch merges a row's pairs (Chan) and writes its
  chunk of y. Rows go in batches of `annotate("l2_batch_mb", MB)` so the second read of x hits L2.
`prefetch("x", D, scope, mode)` loads D of a thread's vectors ahead in each pass of two_pass and welford
(with a residual, res's beside x's; kernelgen/ops/rows.py): one vector an iteration (items 1), Welford's
merge per vector.
The variance is the biased one (divided by cols), as torch.nn.functional.layer_norm computes it.

A residual add is a problem parameter (`residual`, printed `;residual=MODE`), since it changes the
kernel's buffers: `add` normalises x + res (y = LN(x + res)), `add_store` also writes h = x + res, the
residual stream a pre-LN transformer block carries on. The sum is taken in fp32 on every read of the
row (every pass re-reads x and res), y is computed from it unrounded, and h is written on the first
read only; the kernels are named with `res` / `resh` after the types:

>>> p = op.problem({"rows": 3, "cols": 37}, residual="add_store")
>>> str(p), op.for_problem(p).inputs, op.for_problem(p).outputs
('rows=3,cols=37;residual=add_store', ('x', 'res', 'gamma', 'beta'), ('y', 'h'))
>>> op.for_problem(p).kernel(op.default_schedule()).name.split("_")[:3]
['layernorm', 'f32', 'resh']
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import UsageError, check
from ..schedule import Schedule, ScheduleReader
from .base import INT_MAX, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, cdiv, rel_error
from ..dtypes import Types
from ..target import Target, default_target
from .io import torch_tensor
from .knobs import Prim
from . import prefetch
from .rows import (ANY_SUFFIX, L2_BATCH, MAX_CHUNK, ROW_KNOBS, ROW_PREFETCH, HalfRowNumbers, RowRules, RowSchedule,
                   row_heuristic, row_space, row_wide_axes)

PASSES = ("two_pass", "welford")                 # the algorithms annotate(layernorm, ...) names
ALGOS = PASSES + ("registers", "split")
RULES = RowRules(loop_threads=512, loop_items=4)  # the heuristic's constants (bench/rows_probe.py calibrates them):
# the Welford loop at 512 x 4 beat 1024 x 2 by 3-5% on the H100 (1024 rows of 65536 and 262144)
EPS = 1e-5
RESIDUALS = {"add": ("res", "y = LN(x + res)"), "add_store": ("resh", "y = LN(x + res) and h = x + res written")}
_WITH_RESIDUAL: dict = {}        # the op instance of each residual mode (one each, as fusion.py's)
FLOAT32_ROUNDOFF = 2.0 ** -24   # unit roundoff of the fp32 arithmetic every form computes in


class LayerNorm(HalfRowNumbers, RowSchedule, Op):
    name = "layernorm"
    summary = ("y = (x - mean) / sqrt(var + 1e-5) * gamma + beta over each row of x; float32, float16 or "
               "bfloat16, fp32 math; `;residual=add` normalises x + res (add_store also writes h = x + res)")
    dims = (Dim("rows", 8192, 37), Dim("cols", 4096, 1000, maximum=INT_MAX - MAX_CHUNK, why=f"int column indexes run up to a chunk of a row (items*threads*vec, "
                                                             f"at most {MAX_CHUNK}) past its end"))
    loops = ("i", "j")
    inputs = ("x", "gamma", "beta")
    outputs = ("y",)
    dtypes = ("float32", "float16", "bfloat16")
    knobs = ROW_KNOBS + (
        Knob("algo", "registers", ALGOS, "two_pass | welford | registers (the row in registers) | split (j.0 on "
             "blocks)", "a", Prim("annotate", "layernorm", args="two_pass|welford")),
        L2_BATCH,
    ) + ROW_PREFETCH
    structure_help = ("algo registers is cache_read(x, register) instead of annotate(layernorm, ...); algo split is "
                      "bind(j.0, blockIdx.y)")
    fuses = ("residual",)
    residual: str | None = None    # this instance's residual mode (RESIDUALS), None: plain layer norm

    # -- the residual add (a problem parameter) ----------------------------------------------------------
    def with_fusion(self, epilogue=None, batched: bool = False, residual: str | None = None) -> "LayerNorm":
        """The instance of residual mode `residual` (its buffers, reference and kernels); the registered op
        for None. A mode not of RESIDUALS is a UsageError naming them."""
        if residual == self.residual:
            return self
        from . import get_op
        base = get_op(self.name)
        if residual is None:
            return base
        if residual not in RESIDUALS:
            raise UsageError(f"layernorm: residual={residual!r} is not a residual mode; choose one of "
                             + ", ".join(f"{m} ({what})" for m, (_, what) in RESIDUALS.items()))
        if residual not in _WITH_RESIDUAL:
            inst = object.__new__(type(base))
            inst.__dict__.update(base.__dict__)
            inst.residual, inst.inputs = residual, ("x", "res", "gamma", "beta")
            inst.outputs = ("y", "h") if residual == "add_store" else ("y",)
            _WITH_RESIDUAL[residual] = inst
        return _WITH_RESIDUAL[residual]

    def for_problem(self, problem: Problem) -> "LayerNorm":
        return self.with_fusion(residual=problem.residual)

    def for_kernel(self, kernel: Kernel) -> "LayerNorm":
        return self.with_fusion(residual=kernel.residual)

    def name_tokens(self) -> list[str]:
        return [RESIDUALS[self.residual][0]] if self.residual else []

    def kernel_fields(self) -> dict:
        return {"residual": self.residual} if self.residual else {}

    def launch_args(self) -> tuple[str, ...]:
        return self.inputs + self.outputs + ("rows", "cols", "eps")

    def split_args(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The stats and write launches' arguments: the stats launch reads x (+ res) and writes h."""
        res = ("res",) if self.residual else ()
        h = ("h",) if self.residual == "add_store" else ()
        return (("x",) + res + ("stats",) + h + ("cols", "chunks", "row0"),
                ("x",) + res + ("gamma", "beta", "stats", "y", "cols", "chunks", "row0", "eps"))

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        s = self.row_steps(k)
        if k["algo"] == "split":
            s = self.put(s.bind("j.0", "blockIdx.y"), k, "l2_batch_mb")
        else:
            s = s.cache_read("x", "register") if k["algo"] == "registers" else s.annotate("layernorm", k["algo"])
        return self.put(prefetch.build(s, k, ("x",)), k, "prefetch_pad", "prefetch_slots")

    def read_knobs(self, r: ScheduleReader) -> dict:
        k = self.read_row_steps(r)
        j0 = r.read("bind", "j.0", "serial", ("serial", "blockIdx.y"))
        cached = r.read("cache_read", "x", None, ("register",))
        annotated = r.read("annotate", "layernorm", None, PASSES)
        if j0 == "blockIdx.y":
            check(cached is None and annotated is None, "bind", "j.0", j0,
                  limit="several blocks per row: each block's chunk stays in registers, its statistics are exact")
            return dict(k, algo="split", **prefetch.read(r, ("x",)))
        check(not (cached and annotated), "annotate", "layernorm", annotated,
              limit="cache_read(x, register) already reads x once")
        return dict(k, algo="registers" if cached else annotated or "welford", **prefetch.read(r, ("x",)))

    def check_knobs(self, k: dict, target: Target) -> None:
        self.check_row_knobs(k, target)
        if k["algo"] == "split":
            check(k["threads"] >= 32 and k["rows_per_block"] == 1, "bind", "j.0", "blockIdx.y",
                  limit=f"several blocks per row need whole warps on one row: threads per row >= 32 and one row per "
                        f"block, not {k['threads']} threads x {k['rows_per_block']} rows")
        if k["algo"] in ("registers", "split"):
            self.check_register_row(k, target)

    # -- lowering ----------------------------------------------------------------------------------
    def name_knobs(self, k: dict) -> dict:
        """The row batch only where it applies (split), prefetch only where it is on: the other kernels keep
        the names they had."""
        k = prefetch.name_knobs(self, k)
        return k if k["algo"] == "split" else {n: v for n, v in k.items() if n != "l2_batch_mb"}

    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        params, red_words = self.row_params(k, types)
        params["red_floats"] = red_words * (3 if k["algo"] in ("welford", "split") else 1)  # one set per statistic
        params.update(residual=self.residual is not None, store_sum=self.residual == "add_store")
        streamed = ("x", "res") if self.residual else ("x",)
        params.update(self.row_prefetch(k, types, target, PASSES, 4 * params["red_floats"], streamed))
        regs = 24 + k["items"] * k["vec"] + prefetch.registers(k, len(streamed) * max(1, params["access_bytes"] // 4))
        return params, 4 * params["red_floats"] + self.row_prefetch_bytes_of(k, types, len(streamed)), regs

    def prefetch_bytes(self, kernel: Kernel) -> int:
        """Dynamic shared memory: the prefetch slots of x (and res, with a residual)."""
        return self.row_prefetch_bytes(kernel, 2 if self.residual else 1)

    def max_cols(self, k: dict) -> int:
        return k["items"] * k["threads"] * k["vec"]

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        k = dict(kernel.knobs)
        rows, cols = problem["rows"], problem["cols"]
        if kernel.residual != problem.residual:
            raise UsageError(f"{kernel.name} is built for residual {kernel.residual!r}, the problem {problem} has "
                             f"residual {problem.residual!r}: build the kernel with op.for_problem(problem).kernel(...)")
        if k["algo"] == "registers":
            check(cols <= self.max_cols(k), "cache_read", "x", f"cols={cols}",
                  limit=f"the row must fit in registers: cols <= items*threads*vec = {self.max_cols(k)}")
        # Vector kernels need vec*itemsize-aligned buffers; when cols % vec != 0 rows start anywhere in a vector
        # and the plan takes the any-alignment twin (the row buffers still vec*itemsize-aligned, and gamma and
        # beta too: the twin reads them as aligned vectors, funnel-shifted by the row's offset).
        align, twin = self.row_alignment(k, problem, self.inputs + self.outputs)
        if k["algo"] == "split":
            launches, workspaces, scalars = self.split_launches(
                kernel, k, problem, ANY_SUFFIX if twin else "", *self.split_args(), 2)
            return Plan(kernel, problem, launches, workspaces, scalars + (Scalar("eps", "float", EPS),), align)
        launch = Launch(kernel.name + (ANY_SUFFIX if twin else ""), (cdiv(rows, k["rows_per_block"]), 1, 1),
                        (k["threads"], k["rows_per_block"], 1), self.launch_args(), self.prefetch_bytes(kernel))
        scalars = (Scalar("rows", "int", rows), Scalar("cols", "int", cols), Scalar("eps", "float", EPS))
        return Plan(kernel, problem, (launch,), (), scalars, align)

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k = dict(kernel.knobs)
        twins, align = self.row_recipe_twins(kernel, k, self.inputs + self.outputs)
        requires = ((f"cols <= {self.max_cols(k)}", "the row must fit in registers: cols <= items*threads*vec"),) \
            if k["algo"] == "registers" else ()
        common = dict(lets=(("eps", "float", repr(EPS)),), alignment=align)
        if k["algo"] == "split":
            split = self.split_recipe(kernel, k, twins, *self.split_args(), 2)
            split["lets"] = common.pop("lets") + split["lets"]
            return Recipe(kernel.arch, ("rows", "cols"), self.recipe_buffers(kernel), **split, **common)
        steps = tuple(Step(kernel.name + sfx, (f"kg_cdiv(rows, {k['rows_per_block']})", "1", "1"),
                           (k["threads"], k["rows_per_block"], 1), self.launch_args(), self.prefetch_bytes(kernel),
                           when=when) for sfx, when in twins)
        return Recipe(kernel.arch, ("rows", "cols"), self.recipe_buffers(kernel), steps, requires=requires, **common)

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # Odd column counts take the any-alignment twin; 4096 columns is the ladder's register-row limit.
        # 9001 columns is over twice the default chunk (4 items x 256 threads x float4): the loops over
        # chunks (online and Welford statistics, split's several blocks a row) come round at the default
        # knobs, on rows at three offsets; register rows refuse it by name (max_cols). 8188 columns, one
        # vector short of two default chunks, are 9001's case for the aligned kernels (split's aligned
        # chunks and their counts; a thread's last chunk holding anything from N - 1 to N vectors). 9x1001: rows
        # at every offset 0..7 from a 16-byte boundary (16-bit elements), each with whole vectors, so the any
        # twin's gamma and beta are read shifted by every amount, in every word of the vector
        return ({"rows": 37, "cols": 1000}, {"rows": 3, "cols": 7}, {"rows": 130, "cols": 1},
                {"rows": 2, "cols": 4093}, {"rows": 1, "cols": 4096}, {"rows": 3, "cols": 9001},
                {"rows": 2, "cols": 8188}, {"rows": 9, "cols": 1001})

    def check_problem(self, problem: Problem) -> None:
        for d in ("rows", "cols"):
            if problem[d] < 1:
                raise UsageError(f"layernorm: {d}={problem[d]} is empty; layer norm needs at least one row and "
                                 "one column")

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        rows, cols = problem["rows"], problem["cols"]
        # A per-row offset much larger than the spread: E[x^2] - E[x]^2 in float32 would lose it. A drift
        # along the row (up to +-3 end to end): the parts of a row (split's chunks, a thread's chunks) differ
        # in mean, so a merge of their statistics that weighs one wrong shows (identically distributed
        # parts hid a chunk's count off by 4 columns).
        x = rng.standard_normal((rows, cols)) * rng.uniform(0.5, 3.0, size=(rows, 1))
        x += rng.uniform(-30.0, 30.0, size=(rows, 1)) + rng.uniform(-3.0, 3.0, size=(rows, 1)) * np.linspace(-1.0, 1.0, cols)
        res = {"res": rng.standard_normal((rows, cols)) * 2.0} if self.residual else {}
        return self.encoded(problem, {"x": x, **res, "gamma": rng.uniform(0.5, 1.5, size=cols),
                                      "beta": rng.standard_normal(cols)})

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {b: (problem["rows"], problem["cols"]) for b in self.outputs}

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        rows, cols = problem["rows"], problem["cols"]
        return {b: (cols,) if b in ("gamma", "beta") else (rows, cols) for b in self.inputs}

    def terms(self, inputs, problem, with_offset: bool = False):
        """float64 (x - mean) / sqrt(var + eps) * gamma and beta, whose sum is y (and, `with_offset`,
        mean / sqrt(var + eps) * gamma: what the fp32 error of x - mean is scaled by)."""
        v = self.decoded(problem, inputs)
        x = v["x"] + v["res"] if self.residual else v["x"]     # the exact sum (the kernels add in fp32)
        mean = x.mean(axis=1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
        rstd_gamma = v["gamma"] / np.sqrt(var + EPS)
        out = ((x - mean) * rstd_gamma, v["beta"])
        return out + (mean * rstd_gamma,) if with_offset else out

    def reference(self, inputs, problem):
        scaled, beta = self.terms(inputs, problem)
        if self.residual != "add_store":
            return {"y": scaled + beta}
        v = self.decoded(problem, inputs)
        return {"y": scaled + beta, "h": v["x"] + v["res"]}

    def measure(self, problem: Problem) -> str:
        c = "c = u32 log2(cols) / tolerance"
        if not self.half_output(problem):
            return f"||y - ref|| / (||ref|| + c ||mean rstd gamma||), {c}" + ("; h: ||h - ref|| / ||ref||" if "h" in self.outputs else "")
        return (f"max |y - ref| / (|ref| + |(x - mean) rstd gamma| + |beta| + c |mean rstd gamma|), {c}, per element"
                + ("; h: max |h - ref| / (|x| + |res|)" if "h" in self.outputs else ""))

    def error(self, name, out, ref, inputs, problem) -> float:
        """x - mean in fp32 (as every form and torch compute it) is off by up to ~log2(cols) fp32 roundoffs
        of |mean|, which y carries scaled by rstd * gamma: where a row's values lie close together (rstd
        large) or x ~ mean and beta ~ 0, that fp32 noise, not the kernel, would decide a relative measure,
        so its bound joins the scale, weighed against the tolerance. float32: relative L2 error so scaled;
        16-bit y: the worst element's error relative to |ref| plus the sizes of the terms y sums. h (x + res):
        relative L2 error, 16-bit h elementwise relative to |x| + |res|."""
        if name == "h":
            v = self.decoded(problem, inputs)
            if not self.half_output(problem):
                return rel_error(out, ref)
            return self.elementwise_error(out, ref, np.abs(v["x"]) + np.abs(v["res"]))
        scaled, beta, offset = self.terms(inputs, problem, with_offset=True)
        fp32_noise = FLOAT32_ROUNDOFF * max(1.0, np.log2(problem["cols"])) / self.tolerance(problem)
        if not self.half_output(problem):
            out = np.asarray(out, dtype=np.float64)
            if not np.all(np.isfinite(out)):
                return math.inf
            scale = np.linalg.norm(ref.ravel()) + fp32_noise * np.linalg.norm(np.broadcast_to(offset, ref.shape).ravel())
            return float(np.linalg.norm((out - ref).ravel()) / scale) if scale > 0 else float(np.linalg.norm(out - ref))
        return self.elementwise_error(out, ref, np.abs(scaled) + np.abs(beta) + fp32_noise * np.abs(offset))

    def tolerance(self, problem: Problem) -> float:
        """float32: 1e-5. 16-bit y: twice its unit roundoff (one for the rounding of y)."""
        return 2 * problem.dtype("y").unit_roundoff if self.half_output(problem) else self.rel_tolerance

    def bytes_moved(self, problem: Problem) -> int:
        size = problem.dtype("x").itemsize
        rows_read = len(self.inputs) + len(self.outputs) - 2          # x (, res), y (, h): gamma and beta are a row each
        return rows_read * size * problem["rows"] * problem["cols"] + 2 * size * problem["cols"]

    def flops(self, problem: Problem) -> int:
        return (8 if self.residual else 7) * problem["rows"] * problem["cols"]

    def vendor(self, dev_inputs, problem):
        x, g, b = dev_inputs["x"], dev_inputs["gamma"], dev_inputs["beta"]
        d = problem.dtype("x")
        try:
            import torch
            tx, tg, tb = (torch_tensor(a, d) for a in (x, g, b))
            shape = (problem["cols"],)
            if self.residual:             # torch's two kernels: the add (h), then the norm
                tr = torch_tensor(dev_inputs["res"], d)
                return "torch x + res, layer_norm", lambda: torch.nn.functional.layer_norm(tx + tr, shape, tg, tb, EPS)
            return "torch layer_norm", lambda: torch.nn.functional.layer_norm(tx, shape, tg, tb, EPS)
        except ImportError:
            if self.residual or d.name == "bfloat16":
                return None           # cupy has no bfloat16
            def run():
                mean = x.mean(axis=1, keepdims=True)
                var = x.var(axis=1, keepdims=True)
                return (x - mean) / (var + EPS) ** 0.5 * g + b
            return "cupy (mean / var)", run

    # -- ladder and search -------------------------------------------------------------------------
    def ladder(self) -> tuple[LadderStep, ...]:
        steps = [
            ("naive: a block per row, two-pass statistics in global memory, shared-memory trees",
             dict(threads=256, rows_per_block=1, items=1, vec=1, reduction="shared", algo="two_pass"), ""),
            ("a warp per row, shuffle reductions",
             dict(threads=32, rows_per_block=4, items=1, vec=1, reduction="shuffle", algo="two_pass"), ""),
            ("a warp per row, Welford statistics in one pass, float4",
             dict(threads=32, rows_per_block=4, items=4, vec=4, reduction="shuffle", algo="welford"), ""),
            ("the row in registers (read once) with float4, a block per row",
             dict(threads=256, rows_per_block=1, items=4, vec=4, reduction="shuffle", algo="registers"),
             "rows up to 4096 columns"),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps)

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """16-byte accesses (float4, or 8 elements of a 16-bit type); the row in registers where it fits
        (16 floats a thread, up to 32 with a block of 1024 threads) and the rows fill the GPU; long rows,
        many of them: a block per row, Welford (one pass for the statistics, the second read from L2);
        else split over blocks (`row_heuristic`, constants in RULES)."""
        target = target or default_target()
        k = row_heuristic(problem["rows"], problem["cols"], problem.dtype("x").itemsize, target, RULES, "welford")
        return self.schedule_from_knobs(**dict(dict(l2_batch_mb=16), **k))

    def wide_axes(self, problem: Problem, target: Target) -> dict[str, tuple]:
        return row_wide_axes(problem.dtype("x").itemsize, ("two_pass", "welford", "registers", "split"))

    def space(self, problem: Problem, target: Target):
        return row_space(problem["cols"], problem.dtype("x").itemsize, target, "welford",
                         streams=2 if problem.residual else 1, static_words=3)
