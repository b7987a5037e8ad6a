"""Sum reduction of float32 vectors, any n >= 1, with the seed notes' whole optimisation ladder.

>>> from kernelgen.ops import get_op
>>> op = get_op("reduce_sum")
>>> s = op.schedule(strategy="shuffle", vec=4, grid_stride=4)
>>> op.knobs_from_schedule(s)["vec"]
4

Loop `i` is split as i = ((chunk * items + item) * threads + thread) * vec + lane:
`split("i", items*threads*vec, threads*vec, vec)` gives i.0 (chunks, bound to blockIdx.x), i.1
(items a thread adds while loading, unrolled), i.2 (threads, threadIdx.x) and i.3 (the vector lane).
The block-level tree is `reduction("i", strategy)`; `annotate("grid_stride", k)` launches k blocks
per SM that stride over the chunks; `annotate("finish", "atomic")` finishes with atomics instead of
a second pass over the per-block partial sums.
"""
from __future__ import annotations

import numpy as np

from ..errors import check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, Workspace, cdiv, pow2
from ..dtypes import Types
from ..target import Target, default_target

STRATEGIES = ("divergent", "strided", "sequential", "last_warp", "unrolled", "shuffle")
FINISHES = ("two_pass", "atomic")
FINAL_THREADS = 1024  # the second pass: one block of 1024 threads over the per-block partials


class ReduceSum(Op):
    name = "reduce_sum"
    summary = "out[0] = sum(x[0:n]), float32"
    dims = (Dim("n", 1 << 28, 1000003),)
    loops = ("i",)
    inputs = ("x",)
    outputs = ("out",)
    knobs = (
        Knob("threads", 512, (128, 256, 512, 1024), "threads per block (i.2)", "t"),
        Knob("items", 4, (1, 2, 4, 8), "vectors each thread adds per chunk while loading (i.1)", "i"),
        Knob("vec", 4, (1, 2, 4), "floats per load (vectorize i.3)", "v"),
        Knob("strategy", "shuffle", STRATEGIES, "block-level tree: reduction(i, ...)", "s"),
        Knob("grid_stride", 4, (0, 1, 2, 4, 8), "blocks per SM striding over chunks; 0 = one block per chunk", "g"),
        Knob("finish", "two_pass", FINISHES, "combine block sums by a second pass or by atomics", "f"),
    )
    primitives_help = ("split(i, items*threads*vec, threads*vec, vec); bind(i.0, blockIdx.x); bind(i.2, threadIdx.x); "
                       "unroll(i.1); vectorize(i.3, 1|2|4); reduction(i, " + "|".join(STRATEGIES) + "); "
                       "annotate(grid_stride, blocks per SM); annotate(finish, two_pass|atomic)")

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def schedule_from_knobs(self, threads, items, vec, strategy, grid_stride, finish) -> Schedule:
        s = (schedule(self.name).split("i", items * threads * vec, threads * vec, vec)
             .bind("i.0", "blockIdx.x").bind("i.2", "threadIdx.x").unroll("i.1")
             .vectorize("i.3", vec).reduction("i", strategy))
        if grid_stride:
            s = s.annotate("grid_stride", grid_stride)
        if finish != "two_pass":
            s = s.annotate("finish", finish)
        return s

    def read_knobs(self, r: ScheduleReader) -> dict:
        items, threads, vec = r.vector_split("i", (256, 256, 1))
        r.bind("i.0", "blockIdx.x", allowed=("blockIdx.x",))
        r.bind("i.2", "threadIdx.x", allowed=("threadIdx.x",))
        r.unroll("i.1")
        return {
            "threads": threads,
            "items": items,
            "vec": vec,
            "strategy": r.reduction("i", "sequential", STRATEGIES),
            "grid_stride": r.annotate("grid_stride", 0, (0, 1, 2, 4, 8, 16, 32)),
            "finish": r.annotate("finish", "two_pass", FINISHES),
        }

    def test_problems(self) -> tuple[dict, ...]:
        return ({"n": 1}, {"n": 3}, {"n": 4097}, {"n": 1000003})

    def check_knobs(self, k: dict, target: Target) -> None:
        check(pow2(k["threads"]) and 32 <= k["threads"] <= target.max_threads, "split", "i.2", k["threads"],
              limit=f"threads per block is a power of two in 32..{target.max_threads} (the tree halves it)")
        check(k["threads"] >= 64 or k["strategy"] not in ("last_warp", "unrolled"), "split", "i.2", k["threads"],
              limit=f"strategy {k['strategy']} unrolls a last warp that reads 64 words: at least 64 threads")
        check(1 <= k["items"] <= 16, "split", "i.1", k["items"], limit="1..16 items per thread per chunk")
        check(k["vec"] in (1, 2, 4), "vectorize", "i.3", k["vec"], limit="16 bytes per load", allowed="1, 2, 4")

    # -- lowering ----------------------------------------------------------------------------------
    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        threads = k["threads"]
        strides = []
        s = threads // 2
        while s >= 1:
            strides.append(s)
            s //= 2
        params = dict(k, strides=strides, chunk=threads * k["items"], final_threads=FINAL_THREADS, warps=threads // 32, final_warps=FINAL_THREADS // 32,
                      vec_type={1: "float", 2: "float2", 4: "float4"}[k["vec"]],
                      lanes=("x", "y", "z", "w")[:k["vec"]])
        return params, 4 * max(threads, FINAL_THREADS), 32 + 4 * k["items"] * k["vec"]

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        target = target or default_target()
        k = dict(kernel.knobs)
        n = problem["n"]
        chunk_vecs = k["threads"] * k["items"]
        chunks = max(1, cdiv(n // k["vec"], chunk_vecs))
        blocks = min(chunks, target.sms * k["grid_stride"]) if k["grid_stride"] else chunks
        block = (k["threads"], 1, 1)
        scalars = (Scalar("n", "long long", n), Scalar("blocks", "int", blocks))
        if k["finish"] == "atomic":
            launches = (Launch(f"{kernel.name}_init", (1, 1, 1), (1, 1, 1), ("out",)),
                        Launch(f"{kernel.name}_partial", (blocks, 1, 1), block, ("x", "out", "n")))
            return Plan(kernel, problem, launches, (), scalars, (("x", 4 * k["vec"]),))
        launches = (Launch(f"{kernel.name}_partial", (blocks, 1, 1), block, ("x", "partials", "n")),
                    Launch(f"{kernel.name}_final", (1, 1, 1), (FINAL_THREADS, 1, 1), ("partials", "out", "blocks")))
        return Plan(kernel, problem, launches, (Workspace("partials", "float32", blocks),), scalars,
                    (("x", 4 * k["vec"]),))

    # -- numbers -----------------------------------------------------------------------------------
    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        # Integer values keep every float32 partial sum exact (|partial| << 2^24), so the check can
        # demand the exact sum and a single dropped or doubled element fails it.
        return {"x": rng.integers(-16, 17, size=problem["n"]).astype(np.float32)}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"out": (1,)}

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"x": (problem["n"],)}

    def reference(self, inputs, problem):
        return {"out": np.array([inputs["x"].astype(np.float64).sum()])}

    error_measure = "absolute error"

    def error(self, name, out, ref, inputs, problem) -> float:
        return float(np.abs(out.astype(np.float64) - ref).max()) if np.all(np.isfinite(out)) else float("inf")

    def tolerance(self, problem: Problem) -> float:
        return 0.5  # absolute: the exact integer sum

    def bytes_moved(self, problem: Problem) -> int:
        return 4 * problem["n"] + 4

    def flops(self, problem: Problem) -> int:
        return problem["n"]

    def vendor(self, dev_inputs, problem):
        x = dev_inputs["x"]
        try:
            import torch
            t = torch.as_tensor(x, device="cuda")
            return "torch.sum", lambda: torch.sum(t)
        except ImportError:
            return "cupy.sum", lambda: x.sum()

    def ladder(self) -> tuple[LadderStep, ...]:
        base = dict(threads=256, items=1, vec=1, grid_stride=0, finish="two_pass")
        steps = [
            ("interleaved addressing, divergent branches", dict(base, strategy="divergent"), ""),
            ("interleaved addressing, strided index (no divergence)", dict(base, strategy="strided"), ""),
            ("sequential addressing (no bank conflicts)", dict(base, strategy="sequential"), "seed: 0.5 ms"),
            ("first add during load", dict(base, strategy="sequential", items=2), "seed: 0.3 ms"),
            ("unroll the last warp", dict(base, strategy="last_warp", items=2), "seed: 0.2 ms"),
            ("complete unrolling", dict(base, strategy="unrolled", items=2), ""),
            ("grid-stride loop, float4 loads, warp shuffles",
             dict(threads=512, items=4, vec=4, strategy="shuffle", grid_stride=4, finish="two_pass"), ""),
            ("the same, finished by atomics", dict(threads=512, items=4, vec=4, strategy="shuffle",
                                                    grid_stride=4, finish="atomic"), ""),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps)

    def space(self, problem: Problem, target: Target):
        for threads in (256, 512, 1024):
            for items in (1, 2, 4, 8):
                for grid_stride in (1, 2, 4, 8):
                    for finish in FINISHES:
                        yield dict(threads=threads, items=items, vec=4, strategy="shuffle",
                                   grid_stride=grid_stride, finish=finish)
