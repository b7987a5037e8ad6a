"""GEMM operand layouts (NN, NT, TN, TT) for sgemm and the tensor-core gemm: the problem and its printed
form, kernel names, parsing, shapes and references, plans and recipes, legality, SASS facts, awkward sizes on
the emulator (M, N or K of 1, sizes no tile divides) and on the GPU."""
import dataclasses

import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen.cli import parse_size
from kernelgen.compile import compile_cuda
from kernelgen.errors import KernelgenError, ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.ops.base import LAYOUTS
from kernelgen.ops.gemm import WGMMA_HEURISTIC, WGMMA_KNOBS
from kernelgen.recipe import evaluate
from kernelgen.target import target
from kernelgen.validate import validate

sgemm, gemm = get_op("sgemm"), get_op("gemm")
T = ("NT", "TN", "TT")                       # NN is every other test's business
H100 = target("sm_90a")
# M, N or K of 1, sizes no tile divides, and sizes whose stored rows all allow 16-byte vectors (the
# aligned kernel) with ragged tiles.
AWKWARD = ({"M": 1, "N": 1, "K": 1}, {"M": 1, "N": 33, "K": 127}, {"M": 127, "N": 1, "K": 33},
           {"M": 33, "N": 127, "K": 1}, {"M": 40, "N": 72, "K": 24})


# -- problems, names, parsing ---------------------------------------------------------------------
def test_the_layout_prints_after_the_sizes_only_when_not_nn():
    assert str(sgemm.problem({"M": 64, "N": 32, "K": 8})) == "M=64,N=32,K=8"
    assert sgemm.problem().layout == "NN" and get_op("softmax").problem().layout is None
    assert str(gemm.problem({"M": 64, "N": 32, "K": 8}, dtype="float16", layout="nt")) == "M=64,N=32,K=8,layout=NT:f16"
    p = gemm.problem({"M": 64, "N": 32, "K": 8}, dtype="bfloat16", out_dtype="float32", layout="TT")
    assert str(p) == "M=64,N=32,K=8,layout=TT:bf16of32"


def test_parse_size_reads_the_layout_and_round_trips_a_printed_problem():
    p = parse_size(sgemm, "M=64,N=32,K=8,layout=tn", False)
    assert p.layout == "TN" and p == sgemm.problem({"M": 64, "N": 32, "K": 8}, layout="TN")
    assert parse_size(sgemm, "64x32x8", False, layout="nt").layout == "NT"
    assert parse_size(sgemm, "M=64,layout=TT", False, layout="tt").layout == "TT"      # agreeing is fine
    g = gemm.problem({"M": 5, "N": 6, "K": 7}, dtype="float16", layout="TN")
    assert parse_size(gemm, str(g), False, "float16") == g
    with pytest.raises(UsageError, match="names layout TN but --layout gives 'NT'"):
        parse_size(sgemm, "M=4,layout=TN", False, layout="NT")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_kernel_names_carry_the_layout_only_when_not_nn(layout):
    name = sgemm.kernel(sgemm.default_schedule(), layout=layout).name
    nn = sgemm.kernel(sgemm.default_schedule()).name
    assert name == (nn if layout == "NN" else nn.replace("sgemm_f32_", f"sgemm_f32_{layout.lower()}_"))
    g = gemm.kernel(gemm.schedule_from_knobs(**WGMMA_KNOBS), H100, gemm.types("float16", "float32"), layout).name
    assert g.startswith("gemm_f16of32_sm90a_" if layout == "NN" else f"gemm_f16of32_{layout.lower()}_sm90a_")


@pytest.mark.parametrize("op", [sgemm, gemm], ids=["sgemm", "gemm"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_inputs_are_stored_as_the_layout_says_and_the_reference_transposes(op, layout):
    p = op.problem({"M": 3, "N": 4, "K": 5}, layout=layout)
    x = op.make_inputs(p, np.random.default_rng(1))
    assert x["A"].shape == ((5, 3) if layout[0] == "T" else (3, 5)) == op.input_shapes(p)["A"]
    assert x["B"].shape == ((4, 5) if layout[1] == "T" else (5, 4)) == op.input_shapes(p)["B"]
    d = p.dtype("A")
    a, b = d.decode(x["A"]), d.decode(x["B"])
    want = (a.T if layout[0] == "T" else a) @ (b.T if layout[1] == "T" else b)
    assert np.array_equal(op.reference(x, p)["C"], want)


def test_a_kernel_runs_only_problems_of_its_layout():
    with pytest.raises(UsageError, match="built for layout NN, the problem .*layout=NT is NT"):
        sgemm.plan(sgemm.kernel(sgemm.default_schedule()), sgemm.problem({"M": 8, "N": 8, "K": 8}, layout="NT"))


def test_the_plan_picks_the_vector_kernel_where_the_stored_rows_allow():
    def twin(op, layout, sizes, sched=None, **kw):
        kern = op.kernel(sched or op.default_schedule(), layout=layout, **kw)
        plan = op.plan(kern, op.problem(sizes, layout=layout, **({"dtype": "float16"} if op is gemm else {})))
        return plan.launches[-1].symbol[len(kern.name):]
    # sgemm: rows of A are K long (N) or M long (T), of B N long (N) or K long (T); C's are N long. The twin
    # names the sizes whose rows go element-wise; the other operands keep their vectors.
    assert twin(sgemm, "TN", {"M": 8, "N": 8, "K": 7}) == "" and twin(sgemm, "TN", {"M": 7, "N": 8, "K": 8}) == "_unaligned_m"
    assert twin(sgemm, "NT", {"M": 8, "N": 8, "K": 7}) == "_unaligned_k" and twin(sgemm, "NT", {"M": 7, "N": 8, "K": 8}) == ""
    assert twin(sgemm, "NT", {"M": 8457, "N": 35, "K": 4096}) == "_unaligned_n"     # x . W^T, 35 columns: A and B vectors
    assert twin(sgemm, "TT", {"M": 8, "N": 6, "K": 8}) == "_unaligned_n" and twin(sgemm, "TT", {"M": 5, "N": 6, "K": 7}) == "_unaligned"
    kw = dict(types=gemm.types("float16"))
    assert twin(gemm, "TN", {"M": 16, "N": 8, "K": 7}, **kw) == "" and twin(gemm, "TN", {"M": 12, "N": 8, "K": 8}, **kw) == "_unaligned"
    assert twin(gemm, "NT", {"M": 7, "N": 8, "K": 8}, **kw) == "" and twin(gemm, "TT", {"M": 8, "N": 8, "K": 4}, **kw) == "_unaligned"


def test_wgmma_plans_read_the_stored_tensors_and_pad_unaligned_rows():
    kern = gemm.kernel(gemm.schedule_from_knobs(**WGMMA_HEURISTIC), H100, gemm.types("float16"), "TT")
    p = gemm.plan(kern, gemm.problem({"M": 304, "N": 520, "K": 1000}, dtype="float16", layout="TT"))
    assert [(t.buffer, t.rows, t.cols, t.box_rows, t.box_cols) for t in p.tensor_maps] == \
        [("A", 1000, 304, 64, 64), ("B", 520, 1000, 64, 64)]
    src = render(kern)
    assert "p, 1, 1, 1, 0;" in src and "kg_tma_load_2d(stage + 8192, &tmA" in src     # A M-major, B K-major
    tn = gemm.kernel(gemm.schedule_from_knobs(**WGMMA_HEURISTIC), H100, gemm.types("float16"), "TN")
    p = gemm.plan(tn, gemm.problem({"M": 300, "N": 520, "K": 1000}, dtype="float16", layout="TN"))
    assert [(t.buffer, t.rows, t.cols, t.pitch) for t in p.tensor_maps] == [("A_pitched", 1000, 300, 304), ("B", 1000, 520, 0)]
    assert p.launches[0].args == ("A", "A_pitched", "K", "M")      # A stored K x M, its rows of M padded to 304


def test_schedule_for_follows_the_layout():
    # B stored transposed is stored into B's [k][n] tile a column at a time: into rows padded 4 floats (no bank
    # conflicts) where a block's bm FMAs per stored value are few, unpadded at bm 128-256 (padded measured slower
    # there); cp.async's 4-byte copies always into padded rows
    for layout in LAYOUTS:
        k = sgemm.knobs_from_schedule(sgemm.schedule_for(sgemm.problem({"M": 4096, "N": 4096, "K": 4096},
                                                                       layout=layout)))
        assert k["copy"] == "sync" and k["pad_b"] == 0 and k["vec_a"] == k["vec_b"] == 4
    assert sgemm.layout_knobs("NT", "cp_async") == {"vec_b": 1, "pad_b": 4}
    assert sgemm.layout_knobs("NT", "sync", 64) == {"pad_b": 4} and sgemm.layout_knobs("TT", "sync", 128) == {}
    skinny = sgemm.knobs_from_schedule(sgemm.schedule_for(sgemm.problem({"M": 32, "N": 3072, "K": 1024}, layout="NT")))
    assert skinny["bm"] <= 64 and skinny["pad_b"] == 4
    # wgmma at any size: an operand whose stored rows TMA cannot read (M % 8 for A transposed) is copied
    # into padded rows first, which operand the layout says
    for layout, sizes, padded in (("TN", {"M": 4096, "N": 4096, "K": 4095}, ()),
                                  ("TN", {"M": 4095, "N": 4096, "K": 4096}, ("A",)),
                                  ("NT", {"M": 4095, "N": 4096, "K": 4096}, ()),
                                  ("TT", {"M": 4096, "N": 4096, "K": 4095}, ("B",)),
                                  ("NN", {"M": 4096, "N": 4096, "K": 4095}, ("A",))):
        p = gemm.problem(sizes, dtype="float16", layout=layout)
        sched = gemm.schedule_for(p, H100)
        assert gemm.knobs_from_schedule(sched)["instr"] == "wgmma", (layout, sizes)
        plan = gemm.plan(gemm.kernel(sched, H100, p.types, layout), p)
        assert tuple(w.name[0] for w in plan.workspaces if w.name.endswith("_pitched")) == padded, (layout, sizes)


@pytest.mark.parametrize("layout, change, message", [
    ("NT", dict(copy="cp_async", stages=3, vec_a=1), "cp.async cannot transpose: B stored transposed (layout NT)"),
    ("TN", dict(copy="cp_async", stages=3, a_layout="mk"), "cp.async cannot transpose: A stored transposed (layout TN)"),
])
def test_illegal_layout_schedules_say_why(layout, change, message):
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sgemm.kernel(sgemm.schedule(**change), layout=layout)


def test_cp_async_copies_a_transposed_a_16_bytes_into_the_km_tile():
    src = render(sgemm.kernel(sgemm.schedule(copy="cp_async", stages=3, vec_a=4, vec_b=4), layout="TN"))
    # tile 0 (K's remainder) tested; the loop's whole tiles from A shifted along K, M clamped at an edge
    # (AL_M: A's rows, M long, start 16-byte aligned)
    assert "sg_copy4<true, AL_M>(as + r * 260 + c, A, r, m0 + c, kfirst, M, M);" in src
    assert ("sg_copy4<CHECK && !AL_M, AL_M>(as + r * 260 + c, Ak, (kt + 2) * 8 + r, "
            "CHECK && AL_M ? min(m0 + c, M - 4) : m0 + c, kend, M, M);") in src


def kernels_for_recipes():
    for layout in T:
        yield sgemm, sgemm.kernel(sgemm.default_schedule(), layout=layout)
        yield sgemm, sgemm.kernel(sgemm.schedule(split_k=3, shared=True), layout=layout)
        yield sgemm, sgemm.kernel(sgemm.ladder()[0].schedule, layout=layout)
        yield gemm, gemm.kernel(gemm.default_schedule(), types=gemm.types("float16"), layout=layout)
        yield gemm, gemm.kernel(gemm.schedule_from_knobs(**WGMMA_HEURISTIC), H100, gemm.types("float16"), layout)


@pytest.mark.parametrize("op,kernel", list(kernels_for_recipes()), ids=lambda x: getattr(x, "name", "")[:20])
def test_recipes_match_plans_and_state_the_layout(op, kernel):
    recipe = op.recipe(kernel)
    assert recipe.layout == kernel.layout and f"layout {kernel.layout}: A stored" in render(kernel)
    from test_recipe import as_plan, as_recipe
    checked = 0
    for m, n, k in ((1, 1, 1), (7, 33, 127), (40, 72, 24), (127, 8, 64), (300, 520, 1000), (1000, 3, 8)):
        sizes = {"M": m, "N": n, "K": k}
        try:
            plan = op.plan(kernel, op.problem(sizes, dtype=kernel.types.input.name, layout=kernel.layout),
                           dataclasses.replace(target(kernel.arch), sms=132))
        except KernelgenError:
            assert not evaluate(recipe, sizes, 132).ok, sizes
            continue
        run = evaluate(recipe, sizes, 132)
        assert run.ok and as_recipe(run) == as_plan(plan), sizes
        checked += 1
    assert checked


def test_tuning_records_of_a_layout_read_back():
    from kernelgen.tune.db import Record
    from kernelgen.tune.history import problem_of
    p = sgemm.problem({"M": 64, "N": 32, "K": 8}, layout="NT")
    rec = Record.make("sgemm", str(p), "sm_90", "replay", sgemm.default_schedule().to_dict(), {}, "ok", 1.0)
    assert problem_of(sgemm, rec) == p


# -- SASS -----------------------------------------------------------------------------------------
def _facts(kernel, arch):
    return {f.symbol: f for f in facts_of(compile_cuda(render(kernel), arch, kernel.name))}


@pytest.mark.nvrtc
@pytest.mark.parametrize("layout", T)
def test_every_layout_keeps_128_bit_loads_and_no_spills(layout):
    s = sgemm.kernel(sgemm.schedule_for(sgemm.problem({"M": 4096, "N": 4096, "K": 4096}, layout=layout)),
                     layout=layout)
    f = _facts(s, "sm_90")[s.name]
    assert f.ldg128 > 0 and f.stg128 > 0 and f.lds128 > 0 and f.spill_bytes == 0 and f.local_ops == 0, f
    g = gemm.kernel(gemm.default_schedule(), target("sm_90"), gemm.types("bfloat16"), layout)
    f = _facts(g, "sm_90")[g.name]
    assert f.ldg128 > 0 and f.ldsm > 0 and f.hmma > 0 and f.spill_bytes == 0 and f.local_ops == 0, f
    w = gemm.kernel(gemm.schedule_from_knobs(**WGMMA_HEURISTIC), H100, gemm.types("float16"), layout)
    f = _facts(w, "sm_90a")[w.name]           # (beside it NAME_pad, the padded copy of an unaligned operand)
    assert f.hgmma == 4 and f.tma > 0 and f.ldg == 0 and f.spill_bytes == 0 and f.local_ops == 0, f


# -- emulator -------------------------------------------------------------------------------------
# A stored transposed and B stored transposed take separate code paths: TT runs both, NT and TN each
# beside the other operand's NN path. Each emulated kernel costs a C++ build, so the variants that
# change only how one operand is copied run on the layouts that exercise that operand.
SGEMM_VARIANTS = {
    "schedule_for": None,
    "naive": dict(sgemm.knobs_from_schedule(sgemm.ladder()[0].schedule)),
    "A as in memory (mk), float2": dict(a_layout="mk", vec_a=2, vec_b=2, vec_c=2, bm=64, bn=64, wm=32, wn=32,
                                        tm=4, tn=8, swizzle=1),
    "cp.async 3 stages, 4-byte copies, K in 3 slices": dict(bm=128, bn=128, split_k=3, copy="cp_async", stages=3,
                                                              vec_a=1, vec_b=1),
    "cp.async, A transposed 16 bytes a copy": dict(copy="cp_async", stages=3, vec_a=4, vec_b=4),
}
SGEMM_CASES = [("schedule_for", lay) for lay in T] + [
    ("naive", "NT"), ("naive", "TT"), ("A as in memory (mk), float2", "TN"), ("A as in memory (mk), float2", "TT"),
    ("cp.async 3 stages, 4-byte copies, K in 3 slices", "NT"), ("cp.async 3 stages, 4-byte copies, K in 3 slices", "TT"),
    ("cp.async, A transposed 16 bytes a copy", "TN")]


@pytest.mark.emulate
@pytest.mark.parametrize("name, layout", SGEMM_CASES)
def test_sgemm_layouts_on_the_emulator(name, layout):
    for sizes in AWKWARD + ({"M": 260, "N": 132, "K": 16},):      # a block wholly inside C beside ragged ones
        p = sgemm.problem(sizes, layout=layout)
        knobs = SGEMM_VARIANTS[name]
        sched = sgemm.schedule_for(p) if knobs is None else sgemm.schedule_from_knobs(**knobs)
        v = validate(sgemm, sched, p, backend="emulate", check=True, order="random")
        assert v.ok, (sizes, v.summary())


LADDER = [s.schedule for s in gemm.ladder() if not s.arch]
GEMM_VARIANTS = {   # WMMA; ldmatrix on padded rows; the default (XOR swizzle, 4 cp.async stages); plain loads
    "wmma": LADDER[0], "mma, ldmatrix, padded rows": LADDER[1], "default": LADDER[-1],
    "mma without ldmatrix, through registers": gemm.schedule(ldmatrix=False, copy="sync", stages=2),
    "odd fragments (wn 24), padded": gemm.schedule(bm=64, bn=48, wm=32, wn=24, smem="pad", pad=8, stages=2),
}
GEMM_CASES = [(name, lay) for name in ("wmma", "mma, ldmatrix, padded rows", "default") for lay in T] + [
    ("mma without ldmatrix, through registers", "TT"), ("odd fragments (wn 24), padded", "TT"),
    ("odd fragments (wn 24), padded", "NT")]


@pytest.mark.emulate
@pytest.mark.parametrize("name, layout", GEMM_CASES)
def test_gemm_layouts_on_the_emulator(name, layout):
    dtype, out = ("bfloat16", "float32") if layout == "TN" else ("float16", None)
    for sizes in AWKWARD:
        p = gemm.problem(sizes, dtype=dtype, out_dtype=out, layout=layout)
        v = validate(gemm, GEMM_VARIANTS[name], p, backend="emulate", check=True, order="random")
        assert v.ok, (sizes, v.summary())


# -- GPU ------------------------------------------------------------------------------------------
EDGE = ((1, 1, 1), (1, 1000, 3), (1000, 1, 1000), (33, 127, 1), (129, 255, 1023), (1300, 67, 9),
        (2047, 2049, 1025), (256, 256, 256), (1024, 1024, 1024))


# NN's variants are tests/test_op_sgemm.py's and test_op_gemm.py's business; here every variant in the
# transposed layouts, and the defaults and heuristics in all four.
SGEMM_GPU = [(name, lay) for name in SGEMM_VARIANTS for lay in T
             if not (name == "cp.async, A transposed 16 bytes a copy" and lay[0] == "N")] + \
    [("default", lay) for lay in LAYOUTS]


@pytest.mark.gpu
@pytest.mark.parametrize("name, layout", SGEMM_GPU)
def test_sgemm_layouts_on_the_gpu(name, layout):
    for m, n, k in EDGE:
        p = sgemm.problem({"M": m, "N": n, "K": k}, layout=layout)
        knobs = SGEMM_VARIANTS.get(name)
        if name == "cp.async, A transposed 16 bytes a copy" and layout[1] == "T":
            knobs = dict(knobs, vec_b=1)                     # cp.async cannot transpose B
        sched = (sgemm.default_schedule() if name == "default" else
                 sgemm.schedule_for(p) if knobs is None else sgemm.schedule_from_knobs(**knobs))
        v = validate(sgemm, sched, p, backend="gpu")
        assert v.ok, ((m, n, k), v.summary())


GEMM_GPU = [(name, lay, "float16", None) for name in list(GEMM_VARIANTS) + ["xor, sync", "3 cp.async stages"]
            for lay in T] + [(name, lay, "bfloat16", "float32") for name in ("wmma", "default") for lay in T]


@pytest.mark.gpu
@pytest.mark.parametrize("name, layout, dtype, out", GEMM_GPU)
def test_gemm_layouts_on_the_gpu(name, layout, dtype, out):
    sched = GEMM_VARIANTS.get(name) or LADDER[2 if name == "xor, sync" else 3]
    for m, n, k in EDGE[:-2] + ((136, 264, 64), (1000, 1030, 999), (1024, 1024, 1024)):
        p = gemm.problem({"M": m, "N": n, "K": k}, dtype=dtype, out_dtype=out, layout=layout)
        v = validate(gemm, sched, p, backend="gpu")
        assert v.ok, ((m, n, k), v.summary())


WGMMA_GPU = [(step, lay, "float16", None) for step in range(4) for lay in T] + \
    [(2, lay, "bfloat16", "float32") for lay in T]           # step 3 (hopper3) is what schedule_for takes


@pytest.mark.gpu
@pytest.mark.parametrize("step, layout, dtype, out", WGMMA_GPU)
def test_wgmma_layouts_on_the_gpu(step, layout, dtype, out):
    from kernelgen import gpu
    if not gpu.device().has("wgmma"):
        pytest.skip(f"{gpu.device().arch} has no wgmma")
    sched = [s.schedule for s in gemm.ladder() if s.arch == "sm_90a"][step]
    # every stored row 16-byte aligned (M, N and K multiples of 8), no size a multiple of a tile
    for m, n, k in ((8, 8, 8), (40, 72, 40), (136, 264, 64), (304, 520, 1000), (1000, 1032, 1000),
                    (2048, 2048, 2048)):
        p = gemm.problem({"M": m, "N": n, "K": k}, dtype=dtype, out_dtype=out, layout=layout)
        v = validate(gemm, sched, p, backend="gpu")
        assert v.ok, ((m, n, k), v.summary())
    if layout[0] == "N":     # A's rows are K long: any M
        p = gemm.problem({"M": 1, "N": 8, "K": 8}, dtype=dtype, out_dtype=out, layout=layout)
        assert validate(gemm, sched, p, backend="gpu").ok


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_heuristics_on_the_gpu(layout):
    from kernelgen import gpu
    for op, dtype in ((sgemm, None), (gemm, "float16"), (gemm, "bfloat16")):
        for m, n, k in ((1000, 1030, 999), (4096, 4096, 4096), (4095, 4096, 4096)):
            p = op.problem({"M": m, "N": n, "K": k}, dtype=dtype, layout=layout)
            v = validate(op, op.schedule_for(p, gpu.device()), p, backend="gpu")
            assert v.ok, (op.name, (m, n, k), v.summary())


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_vendor_computes_the_same_product_from_the_same_stored_arrays(layout):
    """cuBLAS is timed on transposed views of the very arrays our kernels read: its answer must be ours."""
    from kernelgen.timing import device_arrays
    for op, dtype in ((sgemm, None), (gemm, "float16"), (gemm, "bfloat16")):
        p = op.problem({"M": 129, "N": 72, "K": 40}, dtype=dtype, layout=layout)
        arrays = device_arrays(op, p, seed=3)
        found = op.vendor({k: arrays[k] for k in op.inputs}, p)
        if found is None:                                    # no torch: CuPy has no bf16 matmul
            continue
        out = found[1]()
        if hasattr(out, "cpu"):                              # torch
            out = out.float().cpu().numpy()
        else:
            out = out.get().astype(np.float64)
        host = {k: arrays[k].get() for k in op.inputs}
        ref = op.reference(host, p)["C"]
        assert np.abs(out - ref).max() <= np.abs(ref).max() * 2 ** -8, (op.name, dtype)


# -- the float64 reference computed on the device (validate on a GPU) -------------------------------
@pytest.mark.parametrize("name, dtype", [("sgemm", "float32"), ("gemm", "float16"), ("gemm", "bfloat16")])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_reference_is_the_same_through_the_array_module(name, dtype, layout):
    """validate's GPU path calls reference(..., xp=cupy); with xp=numpy the same code gives the host's answer."""
    from kernelgen.validate import reference
    op = get_op(name)
    p = op.problem({"M": 5, "N": 7, "K": 3}, dtype=dtype, layout=layout)
    inputs = op.make_inputs(p, np.random.default_rng(3))
    assert op.device_reference
    assert np.array_equal(op.reference(inputs, p, xp=np)["C"], op.reference(inputs, p)["C"])
    assert np.array_equal(reference(op, inputs, p, "emulate")["C"], op.reference(inputs, p)["C"])


@pytest.mark.gpu
@pytest.mark.parametrize("name, dtype", [("sgemm", "float32"), ("gemm", "bfloat16")])
def test_device_reference_matches_the_host(name, dtype):
    from kernelgen.validate import reference
    op = get_op(name)
    p = op.problem({"M": 129, "N": 67, "K": 1001}, dtype=dtype, layout="TN")
    inputs = op.make_inputs(p, np.random.default_rng(4))
    assert np.array_equal(reference(op, inputs, p, "gpu")["C"], op.reference(inputs, p)["C"])
