"""float16 and bfloat16 in the memory-bound ops (16-bit loads and stores, fp32 math): which types each
op takes, vector widths and alignment by element size, inputs exact in the type, the error and its
tolerance, the float32 kernels' source unchanged; the emulator at awkward sizes, NVRTC for sm_80 and
sm_90 with no spills and 128-bit accesses at 8 elements, and the GPU at benchmark sizes."""
import re
from pathlib import Path

import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.dtypes import dtype
from kernelgen.emit import generated_kernels
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.target import target
from kernelgen.validate import validate

GENERATED = Path(__file__).resolve().parent.parent / "generated"
HALF = ("float16", "bfloat16")
HALF_OPS = ("softmax", "layernorm")

# (op, knobs): the default and other legal layouts: 16-byte, 4-byte and scalar accesses, the
# algorithms that stream x more than once, several rows per block, shared-memory trees.
SCHEDULES = {
    "softmax": (dict(), dict(vec=8, items=2), dict(vec=2, threads=32, rows_per_block=4, items=16),
                dict(vec=1, threads=32, rows_per_block=8, algo="online"),
                dict(vec=8, items=1, threads=128, algo="split"), dict(vec=4, items=2, algo="three_pass"),
                dict(vec=1, threads=1, rows_per_block=128, items=1, reduction="serial", algo="three_pass")),
    "layernorm": (dict(), dict(vec=8, items=2), dict(vec=2, threads=32, rows_per_block=4, items=16),
                  dict(vec=1, threads=32, rows_per_block=8, algo="welford"),
                  dict(vec=4, algo="two_pass", reduction="shared")),
}


def ids(knobs):
    return "-".join(f"{k}{v}" for k, v in knobs.items()) or "default"


# -- types, widths, plans --------------------------------------------------------------------------
@pytest.mark.parametrize("name", HALF_OPS)
def test_the_ops_take_the_three_types(name):
    assert get_op(name).dtypes == ("float32", "float16", "bfloat16")


def test_a_type_the_op_does_not_take_is_refused_naming_the_allowed_ones():
    op = get_op("sgemm")
    with pytest.raises(UsageError, match=f"takes {', '.join(op.dtypes)}"):
        op.problem(small=True, dtype="float16")
    with pytest.raises(UsageError, match="unknown"):
        get_op("softmax").problem(small=True, dtype="int8")
    with pytest.raises(UsageError, match="output dtype float32 with float16 inputs .* choose one of float16"):
        get_op("softmax").problem(small=True, dtype="float16", out_dtype="float32")


@pytest.mark.parametrize("name", HALF_OPS)
def test_names_carry_the_type(name):
    op = get_op(name)
    assert op.kernel(op.default_schedule(), types=op.types("bf16")).name.startswith(f"{name}_bf16_sm90_")


@pytest.mark.parametrize("name", HALF_OPS)
def test_vector_widths_follow_the_element_size(name):
    op = get_op(name)
    with pytest.raises(ScheduleError, match="allowed: 1, 4"):
        op.kernel(op.schedule(vec=8, items=2))               # float32: float4 at most
    with pytest.raises(ScheduleError, match="allowed: 1, 2, 4, 8"):
        op.kernel(op.schedule_from_knobs(**dict(op.default_knobs(), vec=16, items=1)), types=op.types("float16"))
    for vec in (1, 2, 4, 8):
        op.kernel(op.schedule(vec=vec, items=2), types=op.types("float16"))


@pytest.mark.parametrize("name", HALF_OPS)
def test_heuristics_and_search_take_16_byte_accesses(name):
    op = get_op(name)
    for dt, vec in (("float32", 4), ("float16", 8), ("bfloat16", 8)):
        for cols in (1000, 4096, 40000):
            p = op.problem({"rows": 64, "cols": cols}, dtype=dt)
            knobs = op.knobs_from_schedule(op.schedule_for(p))
            assert knobs["vec"] == vec, (dt, cols, knobs)
            op.kernel(op.schedule_for(p), types=p.types)
            assert {k["vec"] for k in op.space(p, target("sm_90"))} == {vec}


def test_three_pass_softmax_stages_in_y_only_in_float32():
    op = get_op("softmax")
    sched = op.schedule(algo="three_pass", vec=4)
    assert "yr[c] *= inv" in render(op.kernel(op.schedule(algo="three_pass", vec=1)))      # float32: stages in y
    src = render(op.kernel(sched, types=op.types("float16")))
    assert "rv[c]" not in src and "*= inv" not in src and src.count("xv[c]") == 6   # x read three times (and in the any-alignment twin)


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name", HALF_OPS)
def test_plans_align_rows_in_bytes_of_the_element(name, dt):
    op = get_op(name)
    k = op.kernel(op.schedule(vec=8, items=2), types=op.types(dt))
    p = op.plan(k, op.problem({"rows": 5, "cols": 1024}, dtype=dt))
    assert p.launches[0].symbol == k.name and dict(p.alignment)["x"] == 16
    p = op.plan(k, op.problem({"rows": 5, "cols": 1020}, dtype=dt))    # 1020 % 8 != 0: the any-alignment twin
    align = dict(p.alignment)
    assert p.launches[0].symbol == k.name + "_anyalign" and align["x"] == align["y"] == 16
    # layer norm's gamma and beta: read as aligned vectors, funnel-shifted by the row's offset
    assert {align[b] for b in ("gamma", "beta") if b in align} <= {16}
    k4 = op.kernel(op.schedule(vec=4), types=op.types(dt))
    assert dict(op.plan(k4, op.problem({"rows": 5, "cols": 1020}, dtype=dt)).alignment)["y"] == 8


@pytest.mark.parametrize("name", HALF_OPS)
def test_bytes_moved_at_the_element_size(name):
    op = get_op(name)
    sizes = {"rows": 64, "cols": 512}
    full = op.bytes_moved(op.problem(sizes))
    assert op.bytes_moved(op.problem(sizes, dtype="float16")) * 2 == full
    assert op.bytes_moved(op.problem(sizes, dtype="bfloat16")) * 2 == full


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name", HALF_OPS)
def test_inputs_are_exact_in_the_storage_type(name, dt):
    op, d = get_op(name), dtype(dt)
    p = op.problem(small=True, dtype=dt)
    inputs = op.make_inputs(p, np.random.default_rng(0))
    for b, a in inputs.items():
        assert a.dtype == np.dtype(d.storage) and a.shape == op.input_shapes(p)[b]
        np.testing.assert_array_equal(d.encode(d.decode(a)), a)


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name", HALF_OPS)
def test_the_error_passes_correct_rounding_and_fails_a_wrong_element(name, dt):
    op, d = get_op(name), dtype(dt)
    p = op.problem({"rows": 37, "cols": 300}, dtype=dt)
    inputs = op.make_inputs(p, np.random.default_rng(1))
    ref = op.reference(inputs, p)["y"]
    rounded = d.decode(d.encode(ref))                        # the best a kernel can store
    assert op.error("y", rounded, ref, inputs, p) <= op.tolerance(p) / 2 * 1.001
    assert op.tolerance(p) == 2 * d.unit_roundoff and "per element" in op.measure(p)
    big = np.abs(ref).argmax(axis=1)                         # each row's largest |y|
    for r in (0, 17, 36):                                    # one element 4 ulps (8u) off fails
        wrong = rounded.copy()
        wrong[r, big[r]] *= 1 + 8 * d.unit_roundoff
        assert op.error("y", wrong, ref, inputs, p) > op.tolerance(p), r
    nan = rounded.copy()
    nan[3, 7] = np.nan
    assert op.error("y", nan, ref, inputs, p) > op.tolerance(p)


@pytest.mark.parametrize("name", HALF_OPS)
def test_float32_keeps_its_measure_and_tolerance(name):
    op = get_op(name)
    p = op.problem(small=True)
    assert op.tolerance(p) == op.rel_tolerance
    # layer norm's relative L2 error adds the fp32 noise of x - mean to its scale (see LayerNorm.error)
    assert op.measure(p) == op.error_measure or name == "layernorm" and op.measure(p).startswith("||y - ref|| / (||ref||")


@pytest.mark.parametrize("name", HALF_OPS + ("elementwise",))
def test_float32_kernels_render_as_in_generated(name):
    """generated/ holds the float32 kernels; the templates that now take 16-bit types render them
    byte for byte as committed (the diff of generated/ is empty)."""
    op = get_op(name)
    kernels = generated_kernels(op, target("sm_90"))
    assert kernels
    for _, k in kernels:
        assert (GENERATED / name / "sm_90" / f"{k.name}.cu").read_text() == render(k), k.name


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name", HALF_OPS)
def test_16_bit_sources_convert_at_load_and_store(name, dt):
    op, d = get_op(name), dtype(dt)
    src = render(op.kernel(op.schedule(vec=8, items=2), types=op.types(dt)))
    conv = {"float16": ("__half2float(", "__float2half_rn("), "bfloat16": ("__bfloat162float(", "__float2bfloat16_rn(")}[dt]
    assert f"#include <{d.header}>" in src and all(c in src for c in conv)
    assert f"struct alignas(16) kg_{d.short}x8 {{ {d.ctype} e[8]; }};" in src
    assert f"const {d.ctype}* __restrict__ x" in src and not re.search(r"\bfloat4[ *] *[a-z]", src)   # no float vectors


# -- elementwise ---------------------------------------------------------------------------------
EXPRS = ("relu(a * b + c)", "gelu(x + bias) * 2.0")
EW_SCHEDULES = (dict(), dict(vec=8, items=2), dict(vec=2, fusion="none"), dict(vec=1, grid_stride=2),
                dict(vec=4, items=4, fusion="none"))


def ew(expr=EXPRS[1]):
    return get_op("elementwise").with_expr(expr)


def test_elementwise_takes_the_three_types_and_16_byte_vectors():
    op = ew()
    assert op.dtypes == ("float32", "float16", "bfloat16")
    with pytest.raises(ScheduleError, match="allowed: 1, 2, 4"):
        op.kernel(op.schedule(vec=8))
    with pytest.raises(ScheduleError, match="float32 intermediates"):
        op.kernel(op.schedule(vec=8, fusion="none"), types=op.types("float16"))
    k = op.kernel(op.schedule(vec=8), types=op.types("bfloat16"))
    assert k.name.startswith("elementwise_bf16_sm90_")
    p = op.plan(k, op.problem({"M": 4, "N": 100}, dtype="bfloat16"))
    assert dict(p.alignment) == {"x": 16, "out": 16}
    full = op.bytes_moved(op.problem({"M": 4, "N": 100}))
    assert op.bytes_moved(op.problem({"M": 4, "N": 100}, dtype="float16")) * 2 == full


def test_elementwise_heuristic_and_search_take_16_byte_accesses():
    op = ew()
    for dt, vec in (("float32", 4), ("float16", 8), ("bfloat16", 8)):
        p = op.problem(small=True, dtype=dt)
        assert op.knobs_from_schedule(op.schedule_for(p))["vec"] == vec
        assert {k["vec"] for k in op.space(p, target("sm_90"))} == {vec}
    assert op.schedule_for(op.problem(small=True)) == op.default_schedule()


def test_unfused_intermediates_stay_float32():
    op = ew(EXPRS[0])
    k = op.kernel(op.schedule(fusion="none", vec=4), types=op.types("float16"))
    src = render(k)
    assert f"{k.name}_k0(const __half* __restrict__ p_a, const __half* __restrict__ p_b, float* __restrict__ out" in src
    assert f"{k.name}_k2(const float* __restrict__ p_tmp1, __half* __restrict__ out" in src
    assert {w.dtype for w in op.plan(k, op.problem(small=True, dtype="float16")).workspaces} == {"float32"}


@pytest.mark.parametrize("dt", HALF)
def test_elementwise_inputs_exact_and_error_passes_rounding_fails_a_wrong_element(dt):
    op, d = ew(), dtype(dt)
    p = op.problem({"M": 37, "N": 300}, dtype=dt)
    inputs = op.make_inputs(p, np.random.default_rng(2))
    for a in inputs.values():
        np.testing.assert_array_equal(d.encode(d.decode(a)), a)
    ref = op.reference(inputs, p)["out"]
    rounded = d.decode(d.encode(ref))
    assert op.tolerance(p) == 2 * d.unit_roundoff
    assert op.error("out", rounded, ref, inputs, p) <= d.unit_roundoff * 1.001
    big = np.abs(ref).argmax(axis=1)
    for r in (0, 20, 36):
        wrong = rounded.copy()
        wrong[r, big[r]] *= 1 + 8 * d.unit_roundoff
        assert op.error("out", wrong, ref, inputs, p) > op.tolerance(p), r


EW_CASES = [(e, dt, kn) for e in EXPRS for dt in HALF for kn in EW_SCHEDULES]


@pytest.mark.emulate
@pytest.mark.parametrize("expr,dt,knobs", EW_CASES, ids=[f"{e}-{dt}-{ids(kn)}" for e, dt, kn in EW_CASES])
def test_elementwise_validates_on_the_emulator_at_awkward_sizes(expr, dt, knobs):
    op = ew(expr)
    for s in op.test_problems():
        v = validate(op, op.schedule(**knobs), op.problem(s, dtype=dt), backend="emulate")
        assert v.ok, (s, v.summary())


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("knobs", EW_SCHEDULES[:3], ids=ids)
def test_elementwise_compiles_without_spills(knobs, dt, arch):
    op = ew(EXPRS[0])
    k = op.kernel(op.schedule(**knobs), target(arch), types=op.types(dt))
    for f in facts_of(compile_cuda(render(k), arch, k.name)):
        assert f.spill_bytes == 0 and f.local_bytes == 0, f
        if f.ldg128 is not None:
            assert (f.ldg128 > 0) == (knobs.get("vec") == 8) and (f.stg128 > 0) == (knobs.get("vec") == 8), f


# -- reduce_sum ----------------------------------------------------------------------------------
RED_TYPES = (("float16", None), ("bfloat16", None), ("float16", "float32"), ("bfloat16", "float32"))
RED_SCHEDULES = (dict(), dict(vec=8, items=2), dict(vec=2, strategy="sequential", grid_stride=0),
                 dict(vec=1, strategy="last_warp", threads=256, items=2))


def test_reduce_sum_types_widths_and_finishes():
    op = get_op("reduce_sum")
    assert op.dtypes == ("float32", "float16", "bfloat16") and op.out_dtypes("float16") == ("float16", "float32")
    with pytest.raises(UsageError, match="choose one of float32"):
        op.problem(small=True, out_dtype="float16")
    with pytest.raises(ScheduleError, match="allowed: 1, 2, 4"):
        op.kernel(op.schedule(vec=8))
    with pytest.raises(ScheduleError, match="add in 16 bits"):
        op.kernel(op.schedule(finish="atomic"), types=op.types("bfloat16"))
    op.kernel(op.schedule(finish="atomic", vec=8), types=op.types("bfloat16", "float32"))
    p = op.problem({"n": 1000}, dtype="float16")
    assert op.bytes_moved(p) == 2002 and op.knobs_from_schedule(op.schedule_for(p))["vec"] == 8
    assert dict(op.plan(op.kernel(op.schedule_for(p), types=p.types), p).alignment) == {"x": 16}
    assert {k["finish"] for k in op.space(p, target("sm_90"))} == {"two_pass"}


@pytest.mark.parametrize("dt,out", RED_TYPES)
def test_reduce_sum_inputs_exact_and_a_dropped_element_fails(dt, out):
    op = get_op("reduce_sum")
    p = op.problem({"n": 100003}, dtype=dt, out_dtype=out)
    x = op.make_inputs(p, np.random.default_rng(3))
    d, o = dtype(dt), p.dtype("out")
    np.testing.assert_array_equal(d.encode(d.decode(x["x"])), x["x"])
    ref = op.reference(x, p)["out"]
    if o.itemsize == 2:                                     # the sum is exact in out's type, with margin
        assert abs(ref[0]) + 16 <= 1 / o.unit_roundoff and ref[0] != 0
    assert op.error("out", o.decode(o.encode(ref)), ref, x, p) == 0.0
    values = d.decode(x["x"])
    for i in np.flatnonzero(values)[:50]:                   # any one element dropped fails
        dropped = o.decode(o.encode(ref - values[i]))
        assert op.error("out", dropped, ref, x, p) > op.tolerance(p), i


RED_CASES = [(dt, out, kn) for dt, out in RED_TYPES for kn in RED_SCHEDULES] + \
    [(dt, "float32", dict(vec=8, finish="atomic")) for dt in HALF]


@pytest.mark.emulate
@pytest.mark.parametrize("dt,out,knobs", RED_CASES, ids=[f"{dt}-{out}-{ids(kn)}" for dt, out, kn in RED_CASES])
def test_reduce_sum_validates_on_the_emulator(dt, out, knobs):
    op = get_op("reduce_sum")
    for s in op.test_problems():
        v = validate(op, op.schedule(**knobs), op.problem(s, dtype=dt, out_dtype=out), backend="emulate")
        assert v.ok, (s, v.summary())


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("knobs", RED_SCHEDULES[:3], ids=ids)
def test_reduce_sum_compiles_without_spills(knobs, dt, arch):
    op = get_op("reduce_sum")
    k = op.kernel(op.schedule(**knobs), target(arch), types=op.types(dt))
    for f in facts_of(compile_cuda(render(k), arch, k.name)):
        assert f.spill_bytes == 0 and f.local_bytes == 0, f
        if f.ldg128 is not None and f.symbol.endswith("_partial"):
            assert (f.ldg128 > 0) == (knobs.get("vec") == 8), f


@pytest.mark.gpu
@pytest.mark.parametrize("dt,out", RED_TYPES)
def test_reduce_sum_validates_on_the_gpu_at_the_benchmark_size(dt, out):
    op = get_op("reduce_sum")
    p = op.problem(dtype=dt, out_dtype=out)
    for sched in (op.default_schedule(), op.schedule_for(p)):
        v = validate(op, sched, p, backend="gpu")
        assert v.ok, v.summary()


# -- the emulator --------------------------------------------------------------------------------
EMULATE_CASES = [(n, dt, kn) for n in HALF_OPS for dt in HALF for kn in SCHEDULES[n]]


@pytest.mark.emulate
@pytest.mark.parametrize("name,dt,knobs", EMULATE_CASES,
                         ids=[f"{n}-{dt}-{ids(kn)}" for n, dt, kn in EMULATE_CASES])
def test_validates_on_the_emulator_at_awkward_sizes(name, dt, knobs):
    op = get_op(name)
    sched = op.schedule(**knobs)
    k = op.kernel(sched, types=op.types(dt))
    cap = op.max_cols(dict(k.knobs)) if dict(k.knobs)["algo"] == "registers" else None
    # test_problems() holds 9001 columns: several blocks per split row, a ragged last one
    sizes = [s for s in op.test_problems() if cap is None or s["cols"] <= cap]
    assert len(sizes) >= 3
    for s in sizes:
        v = validate(op, sched, op.problem(s, dtype=dt), backend="emulate")
        assert v.ok, (s, v.summary())


# -- NVRTC ---------------------------------------------------------------------------------------
NVRTC_CASES = [(n, dt, kn) for n in HALF_OPS for dt in HALF for kn in SCHEDULES[n][:3]]


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name,dt,knobs", NVRTC_CASES,
                         ids=[f"{n}-{dt}-{ids(kn)}" for n, dt, kn in NVRTC_CASES])
def test_compiles_without_spills(name, dt, knobs, arch):
    op = get_op(name)
    k = op.kernel(op.schedule(**knobs), target(arch), types=op.types(dt))
    facts = {f.symbol: f for f in facts_of(compile_cuda(render(k), arch, k.name))}
    assert k.name in facts
    for sym, f in facts.items():
        assert f.spill_bytes == 0 and f.local_bytes == 0, (sym, f)
        if f.ldg128 is not None:                  # the any-alignment twins move whole vectors too
            assert (f.ldg128 > 0) == (dict(k.knobs)["vec"] == 8), (sym, f.ldg128)   # 8 x 2 bytes = LDG.128
            assert (f.stg128 > 0) == (dict(k.knobs)["vec"] == 8), (sym, f.stg128)


# -- the GPU -------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name", HALF_OPS + ("elementwise",))
def test_validates_on_the_gpu_at_benchmark_sizes(name, dt):
    op = get_op(name) if name != "elementwise" else ew()
    p = op.problem(dtype=dt)
    for sched in (op.default_schedule(), op.schedule_for(p), op.schedule(vec=8, items=2)):
        v = validate(op, sched, p, backend="gpu")
        assert v.ok, v.summary()


@pytest.mark.gpu
@pytest.mark.parametrize("dt", HALF)
def test_gelu_as_the_last_step_stays_within_the_tolerance_on_the_gpu(dt):
    """A 16-bit result's gelu takes tanh.approx (lib/ew_funcs.j2): fresh random inputs through validate,
    and every representable x in [-8, 8) the type holds against float64 in the op's own error measure."""
    import cupy as cp
    from kernelgen import launch
    op = ew("gelu(x + bias)")
    d = op.types(dt).input
    xs = np.unique(d.decode(d.encode(np.linspace(-8, 8, 1 << 17, endpoint=False, dtype=np.float32))))
    p = op.problem({"M": 1, "N": len(xs)}, dtype=dt)
    for sched in (op.default_schedule(), op.schedule(vec=8, items=2)):
        assert "tanh.approx.f32" in render(op.kernel(sched, types=op.types(dt)))
        v = validate(op, sched, op.problem({"M": 333, "N": 1001}, dtype=dt), backend="gpu")
        assert v.ok, v.summary()
        x = cp.asarray(d.encode(xs.astype(np.float32)).reshape(1, -1))
        bias, out = cp.zeros_like(x[0]), cp.zeros_like(x)
        launch(op, sched, p, x=x, bias=bias, out=out)
        got = d.decode(cp.asnumpy(out)).astype(np.float64).ravel()
        ref = 0.5 * xs * (1 + np.tanh(np.sqrt(2 / np.pi) * (xs + 0.044715 * xs ** 3)))
        err = np.abs(got - ref) / (np.abs(ref) + 1)
        assert err.max() <= op.tolerance(p), (float(xs[err.argmax()]), err.max())
