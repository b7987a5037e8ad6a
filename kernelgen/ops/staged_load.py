"""The seed notes' staged shared-memory load: a rows x 32 tile loaded transposed into shared memory.

>>> from kernelgen.ops import get_op
>>> op = get_op("staged_load")
>>> [step.title.split(":")[0] for step in op.ladder()][:2]
['unoptimised', 'storage alignment']
>>> op.plan(op.kernel(op.default_schedule()), op.problem({"n": 2500})).launches[0].grid
(3, 1, 1)

x is an n x 32 matrix (the seed's `input[j * 32 + i]`). Block t stages rows t*rows.. of x in
shared memory as `smem[32][rows + pad]` (column i of x becomes row i of the tile) and then writes
the tile back row by row, so out[32, n] = x^T: the output proves every staged word is right. The
last tile may hold fewer rows. Loops: `i` (the 32 columns), `j` (rows of x; `split("j", rows)`
gives j.0, the tiles, bound to blockIdx.x, and j.1, the rows of one tile), and `ij`, the loop
`fuse("i", "j.1")` makes. The seed's ladder, each step one primitive more:
`storage_align("x", 1)` pads tile rows (bank = i + j instead of j: conflict-free once threads
come); `fuse("i", "j.1")` makes one loop with i fastest, i.e. reading x contiguously;
`split("ij", threads*vec, vec)` + `vectorize("ij.2", 4)` reads x as float4 (4 columns of one row,
scattered to 4 tile rows); `bind("ij.1", "threadIdx.x")` spreads the fused loop over threads.
"""
from __future__ import annotations

import numpy as np

from ..errors import check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, cdiv
from .knobs import Prim
from ..dtypes import Types
from ..target import Target

COLS = 32  # the seed's tile width: a row of x is one 128-byte line


class StagedLoad(Op):
    name = "staged_load"
    summary = "out[32, n] = x[n, 32]^T, staged tile by tile (rows x 32) transposed in shared memory"
    dims = (Dim("n", 1 << 16, 2500),)
    loops = ("i", "j", "ij")
    inputs = ("x",)
    outputs = ("out",)
    knobs = (
        Knob("rows", 1024, (32, 64, 128, 256, 512, 1024, 2048, 4096), "rows of x per tile / block", "r",
             Prim("split", "j", args="rows"), tune=(256, 512, 1024)),
        Knob("pad", 1, (0, 1), "floats of padding per shared row", "p", Prim("storage_align", "x", absent=0), tune=(1,)),
        Knob("fused", True, (False, True), "one loop over the tile: fuse(i, j.1) -> ij", "f",
             Prim("fuse", ("i", "j.1")), tune=(True,)),
        Knob("vec", 4, (1, 4), "floats per global read (ij.2)", "v", Prim("vectorize", "ij.2", absent=1), tune=(4,)),
        Knob("threads", 256, (1, 32, 64, 128, 256, 512, 1024), "threads per block: bind(ij.1, threadIdx.x); 1 = "
             "unbound", "t", Prim("split", "ij", args="threads*vec, vec"), tune=(128, 256, 512, 1024)),
    )

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        s = self.put(schedule(self.name).split("j", k["rows"]).bind("j.0", "blockIdx.x").cache_read("x", "shared"),
                     k, "pad")
        vec, threads = k["vec"], k["threads"]
        if k["fused"]:
            s = s.fuse("i", "j.1")
        if vec > 1 or threads > 1:
            s = s.split("ij", threads * vec, vec)
        s = self.put(s, k, "vec")
        return s.bind("ij.1", "threadIdx.x") if threads > 1 else s

    def read_knobs(self, r: ScheduleReader) -> dict:
        (rows,) = r.split("j", 1, (1024,))
        r.expect("bind", "j.0", "blockIdx.x")
        r.expect("cache_read", "x", "shared")
        fused = r.fuse(("i", "j.1"))
        step, vec = r.split("ij", 2, (1, 1))
        check(step % vec == 0, "split", "ij", (step, vec), limit="the vector width must divide the outer factor")
        check(fused or (step, vec) == (1, 1), "split", "ij", (step, vec), limit="loop ij exists after fuse(i, j.1)")
        width = self.take(r, "vec")
        check(width == vec, "vectorize", "ij.2", width, limit=f"split(ij)'s innermost factor is {vec}")
        bound = r.read("bind", "ij.1", None, ("threadIdx.x",)) is not None
        threads = step // vec
        check(bound or threads == 1, "split", "ij", (step, vec),
              limit=f"{threads} threads per block need bind(ij.1, threadIdx.x)")
        return {"rows": rows, "fused": fused, "vec": vec, "threads": threads}

    def check_knobs(self, k: dict, target: Target) -> None:
        check(k["threads"] <= target.max_threads, "bind", "ij.1", k["threads"],
              limit=f"{target.max_threads} threads per block on {target.arch}")
        smem = self._smem(k)
        check(smem <= target.max_smem, "split", "j", k["rows"],
              limit=f"the tile needs {smem} bytes of shared memory > {target.max_smem} on {target.arch}")

    @staticmethod
    def _smem(k: dict) -> int:
        return 4 * COLS * (k["rows"] + k["pad"])

    # -- lowering ----------------------------------------------------------------------------------
    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        return (dict(k, cols=COLS, stride=k["rows"] + k["pad"], row_vecs=COLS // 4, smem_bytes=self._smem(k)), self._smem(k),
                24 + 4 * k["vec"])

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        k = dict(kernel.knobs)
        n = problem["n"]
        launch = Launch(kernel.name, (cdiv(n, k["rows"]), 1, 1), (k["threads"], 1, 1), ("x", "out", "n"),
                        self._smem(k))
        return Plan(kernel, problem, (launch,), (), (Scalar("n", "long long", n),),
                    (("x", 4 * k["vec"]), ("out", 4 * k["vec"])))

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k = dict(kernel.knobs)
        step = Step(kernel.name, (f"kg_cdiv(n, {k['rows']})", "1", "1"), (k["threads"], 1, 1), ("x", "out", "n"),
                    self._smem(k))
        return Recipe(kernel.arch, ("n",), self.recipe_buffers(kernel), (step,),
                      alignment=(("x", 4 * k["vec"], ""), ("out", 4 * k["vec"], "")))

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # two tiles and a short one; one row; exactly one tile; a tail of 5 rows (n % 4 != 0)
        return ({"n": 2500}, {"n": 1}, {"n": 1024}, {"n": 1029})

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"x": (problem["n"], COLS)}

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": rng.standard_normal((problem["n"], COLS), dtype=np.float32)}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"out": (COLS, problem["n"])}

    def reference(self, inputs, problem):
        return {"out": np.ascontiguousarray(inputs["x"].astype(np.float64).T)}

    def tolerance(self, problem: Problem) -> float:
        return 0.0  # a copy: every element exact

    def bytes_moved(self, problem: Problem) -> int:
        return 8 * COLS * problem["n"]

    def vendor(self, dev_inputs, problem):
        x = dev_inputs["x"]
        try:
            import torch
            t = torch.as_tensor(x, device="cuda").reshape(problem["n"], COLS)
            return "torch .t().contiguous()", lambda: t.t().contiguous()
        except ImportError:
            import cupy
            x2 = x.reshape(problem["n"], COLS)
            return "cupy.ascontiguousarray(x.T)", lambda: cupy.ascontiguousarray(x2.T)

    def ladder(self) -> tuple[LadderStep, ...]:
        base = dict(rows=1024, pad=0, fused=False, vec=1, threads=1)
        steps = [
            ("unoptimised: one thread, nested loops", base, "the seed's load_shared_unoptimized: slow by design"),
            ("storage alignment: storage_align(x, 1)", dict(base, pad=1), "smem[32][1024 + 1]"),
            ("loop fusion: fuse(i, j.1)", dict(base, pad=1, fused=True), "one loop, i fastest: x read in order"),
            ("vectorisation: vectorize(ij.2, 4)", dict(base, pad=1, fused=True, vec=4),
             "float4 = 4 columns of one row of x, scattered to 4 tile rows (the seed's version "
             "stored them to 4 columns of one tile row, which is wrong)"),
            ("thread binding: bind(ij.1, threadIdx.x)", dict(base, pad=1, fused=True, vec=4, threads=256),
             "256 threads; with the padding, a warp's 32 shared stores hit 32 banks"),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps)
