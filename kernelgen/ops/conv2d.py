"""2-D convolution (cross-correlation, as cuDNN and PyTorch) of NCHW float32 input with a KCRS filter.

y[n,k,p,q] = sum_{c,r,s} w[k,c,r,s] * x[n, c, p*stride_h + r*dil_h - pad_h, q*stride_w + s*dil_w - pad_w]
(0 outside x), P = (H + 2*pad_h - dil_h*(R-1) - 1) // stride_h + 1, Q likewise along W.
`stride`, `pad` and `dil` are shorthands for both directions, and problems whose directions agree
print with them (dilation 1 not at all), as they did before the sizes were per direction:

>>> from kernelgen.ops import get_op
>>> op = get_op("conv2d")
>>> op.output_shapes(op.problem(small=True))["y"]
(2, 5, 6, 7)
>>> str(op.problem(dict(N=1, C=1, H=161, W=700, K=32, R=20, S=5, stride_h=8, stride_w=2)))
'N=1,C=1,H=161,W=700,K=32,R=20,S=5,stride_h=8,stride_w=2,pad=0'
>>> op.knobs_from_schedule(op.schedule(algo="implicit", bm=128, bn=128))["bm"]
128

Three algorithms, picked by `annotate("algo", ...)`:
- `direct`: a thread per output element: `fuse(n, k, p, q)`, `split(nkpq, threads)`.
- `im2col`: a first launch copies the receptive fields into a workspace col[C*R*S][N*P*Q], then a
  register-tiled GEMM y[k, npq] = w[k, crs] @ col[crs, npq].
- `implicit`: the same GEMM gathering its tiles of col straight from x (implicit GEMM).
The GEMM view fuses `n, p, q` into `npq` and `c, r, s` into `crs`; `split(k, BM, TM)` and
`split(npq, BN, TN)` give block tiles (k.0 -> blockIdx.y, npq.0 -> blockIdx.x), thread rows/columns
(k.1 -> threadIdx.y, npq.1 -> threadIdx.x) and a TM x TN register tile; `split(crs, BK)` is the
shared-memory depth. `cache_read(w|x, shared)` stages both tiles, `storage_align(w, pad)` pads the
transposed filter tile, `double_buffer(w|x, 2)` prefetches the next tile into registers during the
multiply, `vectorize(w, 4)` reads the filter and writes y with 128-bit accesses where C*R*S and P*Q
are multiples of 4 (scalars otherwise, chosen at run time), and `annotate("split_k", s)` cuts crs
into s slices over blockIdx.z that add into y with atomics after a launch zeroes it (grids too
small to fill the GPU: few pixels, many channels). Index divisions by run-time sizes use
multiply-shift reciprocals computed by the plan. `schedule_for` picks the tiles and slices by a
small cost model (kernelgen/ops/conv2d_model.py).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import ScheduleError, UsageError, check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import INT_MAX, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, Shorthand, Workspace, cdiv, fast_div
from .knobs import Prim
from .fusion import Fusing
from ..dtypes import Types
from ..target import Target

ALGOS = ("direct", "im2col", "implicit")
REACH = 1024            # how far past a tensor's end the kernels' int indexes run (a block of threads, a tile)
GEMM = ("algo", ("im2col", "implicit"))          # the knobs of the GEMM algorithms apply with these
IM2COL_THREADS = 256
# Run-time scalars of the GEMM kernels, in parameter order.
DIRECT_SCALARS = ("N", "C", "H", "W", "K", "R", "S", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w")
GEMM_SCALARS = DIRECT_SCALARS + ("NPQ", "CRS", "mul_PQ", "shr_PQ", "mul_Q", "shr_Q", "mul_RS", "shr_RS", "mul_S", "shr_S")
# The kernels mark pixels past N*P*Q and rows past C*R*S by adding -2^29 to an input row, so every
# row they form (from -pad_h to H + pad_h) must stay within 2^29 of 0.
ROW_SPAN = 1 << 29
# Per direction: input extent, filter extent, output extent, stride, padding, dilation, what it is.
AXES = (("H", "R", "P", "stride_h", "pad_h", "dil_h", "height"), ("W", "S", "Q", "stride_w", "pad_w", "dil_w", "width"))
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)   # split_k's choices


def gather_layout(bk: int, bn: int, threads: int) -> tuple[int, int]:
    """(rows, pixels) of the B tile each thread gathers: rows x pixels = bk*bn/threads, chosen so a
    warp reads 32 adjacent pixels and few row indices (each costs two divisions per tile) are needed."""
    per = bk * bn // threads
    if per < 1:
        return (0, 0)
    best = None
    for a in range(1, bk + 1):
        if bk % a or per % a or bn % (per // a):
            continue
        b = per // a
        if bn // b < min(32, bn):
            continue
        cost = 8 * a + 3 * b
        if best is None or cost < best[0]:
            best = (cost, a, b)
    return (best[1], best[2]) if best else (0, 0)


class Conv2d(Fusing, Op):
    name = "conv2d"
    summary = "y[N,K,P,Q] = conv2d(x[N,C,H,W], w[K,C,R,S], stride, pad, dilation per direction), float32 NCHW"
    dims = (Dim("N", 2, 2), Dim("C", 12, 3), Dim("H", 130, 11), Dim("W", 514, 13), Dim("K", 24, 5),
            Dim("R", 3, 3), Dim("S", 3, 3), Dim("stride_h", 1, 2), Dim("stride_w", 1, 2),
            Dim("pad_h", 0, 1, minimum=0), Dim("pad_w", 0, 1, minimum=0), Dim("dil_h", 1, 1), Dim("dil_w", 1, 1))
    shorthands = (Shorthand("stride", ("stride_h", "stride_w")), Shorthand("pad", ("pad_h", "pad_w")),
                  Shorthand("dil", ("dil_h", "dil_w"), quiet=1))
    loops = ("n", "k", "p", "q", "c", "r", "s", "npq", "crs", "nkpq")
    inputs = ("x", "w")
    outputs = ("y",)
    fuses = ("epilogue",)
    bias_dim = "K"                 # one bias per output channel
    exact_check = False            # the relative L2 error of the plain op holds with an epilogue too
    knobs = (
        Knob("algo", "implicit", ALGOS, "direct | im2col + GEMM | implicit GEMM", "a",
             Prim("annotate", "algo", absent="implicit", always=True)),
        Knob("threads", 256, (32, 64, 128, 256, 512, 1024), "direct: threads per block", "t",
             Prim("split", "nkpq", args="threads"), when=("algo", ("direct",))),
        Knob("bm", 24, (24, 32, 64, 128), "GEMM: output channels per block (k.0)", "m",
             Prim("split", "k", args="BM, TM"), when=GEMM),
        Knob("bn", 256, (64, 128, 256), "GEMM: output pixels per block (npq.0)", "n",
             Prim("split", "npq", args="BN, TN"), when=GEMM),
        Knob("bk", 12, (4, 8, 12, 16), "GEMM: c*r*s depth of a shared-memory tile (crs.0)", "k",
             Prim("split", "crs", args="BK"), when=GEMM),
        Knob("tm", 4, (4, 8), "GEMM: channels per thread (k.2), read as float4s", "tm",
             Prim("split", "k", args="BM, TM"), when=GEMM),
        Knob("tn", 8, (4, 8), "GEMM: pixels per thread (npq.2), read as float4s", "tn",
             Prim("split", "npq", args="BN, TN"), when=GEMM),
        Knob("stages", 2, (1, 2), "GEMM: shared tiles in flight", "st",
             Prim("double_buffer", ("w", "x"), absent=1), when=GEMM),
        Knob("pad", 4, (0, 4), "GEMM: padding of the transposed filter tile's rows", "p",
             Prim("storage_align", "w", absent=0, always=True), when=GEMM),
        Knob("vec", 4, (1, 4), "GEMM: 128-bit filter loads and output stores where aligned", "v",
             Prim("vectorize", "w", absent=1, always=True), when=GEMM),
        Knob("min_blocks", 0, (0, 1, 2, 3, 4), "GEMM: blocks per SM promised to __launch_bounds__ "
             "(caps registers at 64K / (threads * n)); 0 = no promise", "o",
             Prim("annotate", "min_blocks", absent=0), when=GEMM, tune=(0, 2)),
        Knob("split_k", 1, SPLITS, "GEMM: slices of c*r*s, one per blockIdx.z, added into y with atomics after a "
             "launch zeroes y: more blocks where few pixels and many channels leave SMs idle", "sk",
             Prim("annotate", "split_k", absent=1), when=GEMM, unused=1),
    )
    structure_help = "algo direct uses fuse(n, k, p, q) and split(nkpq, threads); the GEMMs (im2col, implicit) the rest"

    # -- problems ----------------------------------------------------------------------------------
    @staticmethod
    def out_hw(p: Problem | dict) -> tuple[int, int]:
        d = p if isinstance(p, dict) else p.as_dict()
        return tuple((d[x] + 2 * d[pd] - d[dl] * (d[f] - 1) - 1) // d[st] + 1 for x, f, _, st, pd, dl, _ in AXES)

    def check_problem(self, problem: Problem) -> None:
        d = problem.as_dict()
        for (x, f, o, st, pd, dl, what), out in zip(AXES, self.out_hw(d)):
            if out < 1:
                raise UsageError(f"conv2d: output {what} {o} = ({x} + 2*{pd} - {dl}*({f}-1) - 1)/{st} + 1 = {out} for "
                                 f"{x}={d[x]}, {pd}={d[pd]}, {dl}={d[dl]}, {f}={d[f]}, {st}={d[st]}: the dilated filter "
                                 f"spans {d[dl] * (d[f] - 1) + 1} {'rows' if x == 'H' else 'columns'}, the padded input "
                                 f"{d[x] + 2 * d[pd]}; the output must be at least 1x1")
        for x, _, _, _, pd, _, _ in AXES:
            span = d[x] + 2 * d[pd]
            limit = ROW_SPAN if x == "H" else INT_MAX
            if span > limit:
                raise UsageError(f"conv2d: {x} + 2*{pd} = {span} is past {limit} (the kernels' int {x.lower()} "
                                 f"indexes{' and their -2^29 row marks' if x == 'H' else ''}); use less padding")
        P, Q = self.out_hw(problem)
        for what, count in (("x", d["N"] * d["C"] * d["H"] * d["W"]), ("y", d["N"] * d["K"] * P * Q),
                            ("w", d["K"] * d["C"] * d["R"] * d["S"])):
            if count > INT_MAX - REACH:
                raise UsageError(f"conv2d: {what} has {count} elements; kernels index with 32-bit ints that run up to "
                                 f"{REACH} past its end: at most {INT_MAX - REACH}")

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        s = self.put(schedule(self.name), k, "algo")
        if k["algo"] == "direct":
            return (s.fuse("n", "k", "p", "q").split("nkpq", k["threads"])
                    .bind("nkpq.0", "blockIdx.x").bind("nkpq.1", "threadIdx.x"))
        s = (s.fuse("n", "p", "q").fuse("c", "r", "s").split("k", k["bm"], k["tm"]).split("npq", k["bn"], k["tn"])
             .split("crs", k["bk"]).bind("k.0", "blockIdx.y").bind("npq.0", "blockIdx.x").bind("k.1", "threadIdx.y")
             .bind("npq.1", "threadIdx.x").cache_read("w", "shared").cache_read("x", "shared"))
        return self.put(s, k, "pad", "stages", "vec", "min_blocks", "split_k")

    def read_knobs(self, r: ScheduleReader) -> dict:
        k = {"algo": self.take(r, "algo")}
        if k["algo"] == "direct":
            check(r.fuse(("n", "k", "p", "q")), "fuse", "n,k,p,q", "missing", limit="direct needs fuse(n, k, p, q)")
            (k["threads"],) = r.split("nkpq", 1, (256,))
            r.expect("bind", "nkpq.0", "blockIdx.x")
            r.expect("bind", "nkpq.1", "threadIdx.x")
            return k
        for loops in (("n", "p", "q"), ("c", "r", "s")):
            check(r.fuse(loops), "fuse", ",".join(loops), "missing", limit=f"{k['algo']} needs fuse({', '.join(loops)})")
        default = self.default_knobs()
        k["bm"], k["tm"] = r.split("k", 2, (default["bm"], default["tm"]))
        k["bn"], k["tn"] = r.split("npq", 2, (default["bn"], default["tn"]))
        (k["bk"],) = r.split("crs", 1, (default["bk"],))
        for loop, axis in (("k.0", "blockIdx.y"), ("npq.0", "blockIdx.x"), ("k.1", "threadIdx.y"), ("npq.1", "threadIdx.x")):
            r.expect("bind", loop, axis)
        for buf in ("w", "x"):
            r.expect("cache_read", buf, "shared")
        return k

    def bias_shape(self, ndim: int) -> tuple:
        return (1, -1, 1, 1)       # y[n, k, p, q]: per channel

    def check_knobs(self, k: dict, target: Target) -> None:
        if self.epilogue and k["algo"] != "direct" and k["split_k"] > 1:
            raise ScheduleError("annotate", "split_k", k["split_k"], allowed="1",
                                limit=f"the epilogue {self.epilogue.expr!r} runs once on the summed c*r*s; the slices "
                                      "add into y with atomics, with no pass after them")
        if k["algo"] == "direct":
            check(32 <= k["threads"] <= target.max_threads and k["threads"] % 32 == 0, "split", "nkpq", k["threads"],
                  limit=f"a multiple of 32 threads up to {target.max_threads}")
            return
        check(k["bm"] % k["tm"] == 0, "split", "k", (k["bm"], k["tm"]), limit="TM must divide BM")
        check(k["bn"] % k["tn"] == 0, "split", "npq", (k["bn"], k["tn"]), limit="TN must divide BN")
        check(k["bk"] % 4 == 0, "split", "crs", k["bk"], limit="filter tiles are loaded in groups of 4", allowed="4, 8, 12, 16")
        threads = k["bm"] // k["tm"] * (k["bn"] // k["tn"])
        check(32 <= threads <= target.max_threads, "split", "k.1*npq.1", threads,
              limit=f"(BM/TM)*(BN/TN) threads per block in 32..{target.max_threads}")
        check(k["bk"] * k["bn"] % threads == 0 and gather_layout(k["bk"], k["bn"], threads) != (0, 0),
              "split", "crs", k["bk"], limit=f"each of {threads} threads gathers a whole rows x pixels piece of "
              f"the {k['bk']}x{k['bn']} input tile with a warp on 32 adjacent pixels")
        check(k["pad"] % 4 == 0, "storage_align", "w", k["pad"], limit="rows stay 16-byte aligned", allowed="0, 4")

    # -- lowering ----------------------------------------------------------------------------------
    def template(self, knobs: dict) -> str:
        return "conv2d_direct.cu.j2" if knobs["algo"] == "direct" else "conv2d_gemm.cu.j2"

    def name_knobs(self, k: dict) -> dict:
        # the direct kernel uses only its thread count: the GEMM tile knobs would mislead in its name;
        # one slice of c*r*s is how every kernel was named before split_k existed: keep those names
        if k["algo"] == "direct":
            return {"algo": k["algo"], "threads": k["threads"]}
        return {n: v for n, v in k.items() if n != "split_k" or v != 1}

    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        fused = self.fusion_params(types)
        if k["algo"] == "direct":
            return dict(threads=k["threads"], **fused), 0, 40
        threads = k["bm"] // k["tm"] * (k["bn"] // k["tn"])
        rows, pix = gather_layout(k["bk"], k["bn"], threads)
        a_slots = k["bm"] * k["bk"] // 4
        params = dict(k, threads=threads, g_rows=rows, g_pix=pix, a_slots=a_slots, a_iters=cdiv(a_slots, threads),
                      lda=k["bm"] + k["pad"], im2col_threads=IM2COL_THREADS, a_per_row=k["bk"] // 4,
                      tx_threads=k["bn"] // k["tn"], g_row_step=k["bk"] // rows, g_pix_step=k["bn"] // pix,
                      # a thread's fragment: tm/4 (tn/4) float4s half a tile apart
                      runs_m=k["tm"] // 4, runs_n=k["tn"] // 4, run_stride_m=k["bm"] // 2, run_stride_n=k["bn"] // 2,
                      # slices of c*r*s add into y: scalar atomics, never the float4 stores
                      atomic=k["split_k"] > 1, vec_y=k["vec"] == 4 and k["split_k"] == 1, kslice=k["split_k"] * k["bk"],
                      **fused)
        smem = 4 * k["stages"] * k["bk"] * (k["bm"] + k["pad"] + k["bn"])
        # The tiles are __shared__ arrays: static shared memory, which has no opt-in past its 48 KB
        # (found by bench/legality_sweep.py: ptxas refused 128x256 tiles of depth 16 in 2 stages).
        check(smem <= target.static_smem, "cache_read", "shared", f"{smem} bytes",
              limit=f"{target.static_smem} bytes of static shared memory per block (conv2d's tiles are __shared__ "
                    "arrays)")
        regs = k["tm"] * k["tn"] + k["tm"] + k["tn"] + 4 * params["a_iters"] + rows * pix + 3 * pix + 2 * rows + 30
        return params, smem, regs

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        k = dict(kernel.knobs)
        self.same_fusion(kernel, problem)
        d = problem.as_dict()
        P, Q = self.out_hw(problem)
        npq, crs = d["N"] * P * Q, d["C"] * d["R"] * d["S"]
        sizes = dict(d, P=P, Q=Q, NPQ=npq, CRS=crs, NKPQ=npq * d["K"])
        for name, div in (("PQ", P * Q), ("Q", Q), ("RS", d["R"] * d["S"]), ("S", d["S"])):
            sizes[f"mul_{name}"], sizes[f"shr_{name}"] = fast_div(div)
        scalars = tuple(Scalar(n, "long long" if n.startswith("mul_") else "int", sizes[n]) for n in GEMM_SCALARS)
        if k["algo"] == "direct":
            total = d["N"] * d["K"] * P * Q
            launch = Launch(kernel.name, (cdiv(total, k["threads"]), 1, 1), (k["threads"], 1, 1),
                            ("x", "w", "y") + DIRECT_SCALARS + self.fusion_args())
            return Plan(kernel, problem, (launch,), (), tuple(s for s in scalars if s.name in DIRECT_SCALARS))
        threads = k["bm"] // k["tm"] * (k["bn"] // k["tn"])
        grid = (cdiv(npq, k["bn"]), cdiv(d["K"], k["bm"]), k["split_k"])
        check(grid[1] <= 65535, "split", "k", k["bm"], limit=f"K={d['K']} needs <= 65535 blocks along y")
        src = "col" if k["algo"] == "im2col" else "x"
        launches = (Launch(f"{kernel.name}_gemm", grid, (threads, 1, 1), (src, "w", "y") + GEMM_SCALARS + self.fusion_args()),)
        if k["split_k"] > 1:    # the slices add into y: zero it first
            launches = (Launch(f"{kernel.name}_zero", (min(cdiv(sizes["NKPQ"], 256), 4096), 1, 1), (256, 1, 1),
                               ("y", "NKPQ"), role="fill"),) + launches
            scalars += (Scalar("NKPQ", "long long", sizes["NKPQ"]),)
        align = (("w", 16), ("y", 16))
        if k["algo"] == "implicit":
            return Plan(kernel, problem, launches, (), scalars, align)
        if crs * npq > INT_MAX:
            raise UsageError(f"conv2d im2col: the workspace needs C*R*S*N*P*Q = {crs * npq} floats (> 2^31); "
                             "use algo=implicit")
        im2col = Launch(f"{kernel.name}_im2col", (cdiv(npq, IM2COL_THREADS), min(crs, 65535), 1),
                        (IM2COL_THREADS, 1, 1), ("x", "col") + GEMM_SCALARS, role="copy")
        return Plan(kernel, problem, (im2col,) + launches, (Workspace("col", "float32", crs * npq),), scalars, align)

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k = dict(kernel.knobs)
        lets = [("P", "int", "kg_div(kg_ll(H) + pad_h + pad_h - kg_ll(dil_h) * (R - 1) - 1, stride_h) + 1"),
                ("Q", "int", "kg_div(kg_ll(W) + pad_w + pad_w - kg_ll(dil_w) * (S - 1) - 1, stride_w) + 1"),
                ("NPQ", "long long", "kg_ll(N) * P * Q"), ("CRS", "long long", "kg_ll(C) * R * S")]
        for name, div in (("PQ", "kg_ll(P) * Q"), ("Q", "Q"), ("RS", "kg_ll(R) * S"), ("S", "S")):
            lets += [(f"mul_{name}", "long long", f"kg_fast_mul({div})"), (f"shr_{name}", "int", f"kg_fast_shr({div})")]
        reach = INT_MAX - REACH
        fits = "the dilated filter fits in the padded input (else the output is empty)"
        requires = [("kg_ll(H) + pad_h + pad_h >= kg_ll(dil_h) * (R - 1) + 1", fits),
                    ("kg_ll(W) + pad_w + pad_w >= kg_ll(dil_w) * (S - 1) + 1", fits),
                    (f"kg_ll(H) + pad_h + pad_h <= {ROW_SPAN}", "rows stay within 2^29 of 0 (the kernels' row marks)"),
                    (f"kg_ll(W) + pad_w + pad_w <= {INT_MAX}", "columns are int"),
                    (f"kg_ll(N) * C * H * W <= {reach}", f"x's int indexes run up to {REACH} past its end"),
                    (f"kg_ll(N) * K * P * Q <= {reach}", f"y's int indexes run up to {REACH} past its end"),
                    (f"kg_ll(K) * C * R * S <= {reach}", f"w's int indexes run up to {REACH} past its end")]
        common = dict(arch=kernel.arch, sizes=tuple(d.name for d in self.dims), buffers=self.recipe_buffers(kernel))
        if k["algo"] == "direct":
            step = Step(kernel.name, (f"kg_cdiv(kg_ll(N) * K * P * Q, {k['threads']})", "1", "1"), (k["threads"], 1, 1),
                        ("x", "w", "y") + DIRECT_SCALARS + self.fusion_args())
            return Recipe(steps=(step,), requires=tuple(requires), lets=tuple(lets), **common)
        threads = k["bm"] // k["tm"] * (k["bn"] // k["tn"])
        requires.append((f"kg_cdiv(K, {k['bm']}) <= 65535", f"gridDim.y holds 65535 blocks of {k['bm']} filters"))
        src = "col" if k["algo"] == "im2col" else "x"
        steps = (Step(f"{kernel.name}_gemm", (f"kg_cdiv(NPQ, {k['bn']})", f"kg_cdiv(K, {k['bm']})", str(k["split_k"])),
                      (threads, 1, 1), (src, "w", "y") + GEMM_SCALARS + self.fusion_args()),)
        if k["split_k"] > 1:    # the slices add into y: zero it first
            lets.append(("NKPQ", "long long", "kg_ll(K) * NPQ"))
            steps = (Step(f"{kernel.name}_zero", ("kg_min(kg_cdiv(NKPQ, 256), 4096)", "1", "1"), (256, 1, 1),
                          ("y", "NKPQ")),) + steps
        align = (("w", 16, ""), ("y", 16, ""))
        if k["algo"] == "implicit":
            return Recipe(steps=steps, requires=tuple(requires), alignment=align, lets=tuple(lets), **common)
        requires.append((f"CRS * NPQ <= {INT_MAX}", "the im2col workspace holds C*R*S*N*P*Q < 2^31 floats"))
        im2col = Step(f"{kernel.name}_im2col", (f"kg_cdiv(NPQ, {IM2COL_THREADS})", "kg_min(CRS, 65535)", "1"),
                      (IM2COL_THREADS, 1, 1), ("x", "col") + GEMM_SCALARS)
        return Recipe(steps=(im2col,) + steps, requires=tuple(requires), alignment=align, lets=tuple(lets),
                      workspaces=(("col", "float", "CRS * NPQ", None),), **common)

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        small = {d.name: d.small for d in self.dims}
        return (
            small,                                                       # stride 2, pad 1, scalar paths
            dict(N=1, C=1, H=1, W=1, K=1, R=1, S=1, stride=1, pad=0),    # one output
            dict(N=2, C=4, H=20, W=20, K=33, R=3, S=3, stride=1, pad=1),  # P*Q, C*R*S % 4 == 0: float4 paths
            # R != S and every setting differs between h and w (P x Q = 6 x 7)
            dict(N=3, C=5, H=17, W=9, K=7, R=5, S=2, stride_h=3, stride_w=1, pad_h=2, pad_w=0, dil_h=1, dil_w=2),
            # padding wider than the filter, dilated rows (P x Q = 5 x 3)
            dict(N=1, C=2, H=3, W=3, K=2, R=3, S=3, stride=1, pad_h=3, pad_w=1, dil_h=2),
            # a 1x1 output from a dilated, strided filter that covers the input (DeepBench-like tall filter)
            dict(N=1, C=1, H=9, W=4, K=3, R=3, S=2, stride_h=5, stride_w=7, pad=0, dil_h=4, dil_w=3),
            # C*R*S = 20: float4 filter rows whose last K tile is partial (for bk 8, 12 and 16); P*Q = 20: float4
            # stores
            dict(N=2, C=5, H=5, W=6, K=9, R=2, S=2, stride=1, pad=0),
        )

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        d = problem.as_dict()
        return {"x": rng.uniform(-1, 1, size=(d["N"], d["C"], d["H"], d["W"])).astype(np.float32),
                "w": rng.uniform(-1, 1, size=(d["K"], d["C"], d["R"], d["S"])).astype(np.float32)}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        P, Q = self.out_hw(problem)
        return {"y": (problem["N"], problem["K"], P, Q)}

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        d = problem.as_dict()
        return {"x": (d["N"], d["C"], d["H"], d["W"]), "w": (d["K"], d["C"], d["R"], d["S"])}

    def reference(self, inputs, problem):
        d = problem.as_dict()
        sh, sw, ph, pw, dh, dw = (d[n] for n in ("stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w"))
        P, Q = self.out_hw(problem)
        x = np.pad(inputs["x"].astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        w = inputs["w"].astype(np.float64)
        y = np.zeros((d["N"], d["K"], P, Q))
        for r in range(d["R"]):
            for s in range(d["S"]):
                h0, w0 = r * dh, s * dw
                win = x[:, :, h0:h0 + sh * (P - 1) + 1:sh, w0:w0 + sw * (Q - 1) + 1:sw]     # N, C, P, Q
                y += np.tensordot(w[:, :, r, s], win, axes=([1], [1])).transpose(1, 0, 2, 3)
        return {"y": y}

    def bytes_moved(self, problem: Problem) -> int:
        d = problem.as_dict()
        P, Q = self.out_hw(problem)
        return 4 * (d["N"] * d["C"] * d["H"] * d["W"] + d["K"] * d["C"] * d["R"] * d["S"] + d["N"] * d["K"] * P * Q)

    def flops(self, problem: Problem) -> int:
        d = problem.as_dict()
        P, Q = self.out_hw(problem)
        return 2 * d["N"] * d["K"] * P * Q * d["C"] * d["R"] * d["S"]

    def vendor(self, dev_inputs, problem):
        st, pd, dl = ((problem[f"{n}_h"], problem[f"{n}_w"]) for n in ("stride", "pad", "dil"))
        try:
            import torch
            torch.backends.cudnn.allow_tf32 = False   # compare float32 with float32, not TF32 tensor cores
            tx, tw = torch.as_tensor(dev_inputs["x"], device="cuda"), torch.as_tensor(dev_inputs["w"], device="cuda")
            return "torch conv2d (cuDNN, TF32 off)", lambda: torch.nn.functional.conv2d(
                tx, tw, stride=st, padding=pd, dilation=dl)
        except ImportError:
            pass
        try:
            import cupy
            from cupy import cudnn
            x, w = dev_inputs["x"], dev_inputs["w"]
            y = cupy.empty(self.output_shapes(problem)["y"], dtype=cupy.float32)
            return "cupy cuDNN (no tensor cores)", lambda: cudnn.convolution_forward(
                x, w, None, y, pd, st, dl, 1, tensor_core="never")
        except Exception:
            return None

    def ladder(self) -> tuple[LadderStep, ...]:
        gemm = dict(self.default_knobs(), algo="implicit", bm=32, bk=8)
        steps = [
            ("direct: a thread per output element", dict(gemm, algo="direct"), "seed: 1.2 ms"),
            ("im2col into a workspace, then a register-tiled GEMM", dict(gemm, algo="im2col"),
             "seed: img2col + GEMM 0.6 ms; the workspace is C*R*S x N*P*Q floats"),
            ("implicit GEMM, single-buffered, scalar filter loads", dict(gemm, stages=1, vec=1),
             "gathers the GEMM's input tiles straight from x"),
            ("implicit GEMM, double-buffered, float4 filter loads and output stores", gemm,
             "32x256x8 tiles, 4x8 per thread, 256 threads: 512 blocks at 2 per SM in ~2 waves"),
            ("implicit GEMM, 24x256x12 tiles (the seeds' K=24, C*R*S=108 with no padding)", dict(gemm, bm=24, bk=12),
             "28% fewer FMAs than 32x8 on the seeds' shape; 192 threads, 2 blocks per SM"),
            ("implicit GEMM, 128x128 tiles, 8x8 per thread (many output channels)",
             dict(gemm, bm=128, bn=128, tm=8, tn=8, min_blocks=2),
             "for the large shape (K=128); 2 blocks/SM caps registers at 128"),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**k), n) for t, k, n in steps)

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """The implicit-GEMM tiling (and slices of c*r*s) a small cost model of the target estimates
        fastest, over a few tile families (kernelgen/ops/conv2d_model.py)."""
        from .conv2d_model import pick
        k = pick(self, problem.as_dict(), target)
        if problem.epilogue:           # applied once: no slices of c*r*s adding into y
            k = dict(k, split_k=1)
        return self.schedule_from_knobs(**k)

    def wide_axes(self, problem: Problem, target: Target) -> dict[str, tuple]:
        """Every depth, buffering, padding, filter-load width and register promise crossed onto each
        implicit-GEMM tiling of the space."""
        return dict(bk=(8, 12, 16), stages=(1, 2), pad=(0, 4), vec=(1, 4), min_blocks=(0, 2))

    def space(self, problem: Problem, target: Target):
        """Implicit-GEMM tilings; 24-channel and 12-deep tiles only where they waste less than powers of
        two; slices of c*r*s (two steps each at least) only for tiles whose grid leaves SMs idle."""
        base = self.default_knobs()
        K, crs = problem["K"], problem["C"] * problem["R"] * problem["S"]
        npq = problem["N"] * math.prod(self.out_hw(problem))
        bms = (24, 32, 64, 128) if K % 32 and cdiv(K, 24) * 24 < cdiv(K, 32) * 32 else (32, 64, 128)
        bks = (8, 12, 16) if cdiv(crs, 12) * 12 < cdiv(crs, 8) * 8 else (8, 16)
        for bm, bn, bk, tm, tn, min_blocks in itertools.product(bms, (64, 128, 256), bks, (4, 8), (4, 8), (0, 2)):
            blocks = cdiv(K, bm) * cdiv(npq, bn)
            for split in SPLITS:
                if split == 1 or (blocks * split <= 2 * target.sms and cdiv(crs, bk) >= 2 * split):
                    yield dict(base, algo="implicit", bm=bm, bn=bn, bk=bk, tm=tm, tn=tn, min_blocks=min_blocks,
                               split_k=split)
