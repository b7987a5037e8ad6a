"""float16 and bfloat16 in transpose (a copy: out in x's type, exact) and gemv (fp32 sums; y in the input
type or float32): the types each takes, vector widths in elements (8 for a 16-byte access), alignment and
bytes at the element size, the heuristics' 16-byte accesses, the padded tile's bank conflicts, gemv's
per-element error; the float32 kernels' source unchanged; the emulator at awkward sizes, NVRTC for sm_80
and sm_90 (no spills, 128-bit accesses at 8 elements), and the GPU at the benchmark size."""
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
from kernelgen.ops.transpose import shared_conflicts
from kernelgen.target import target
from kernelgen.validate import validate

GENERATED = Path(__file__).resolve().parent.parent / "generated"
HALF = ("float16", "bfloat16")
OPS = ("transpose", "gemv")
BENCH = {"M": 8192, "N": 8192}

# Legal layouts in 16-bit types: 16-, 8-, 4-byte and scalar accesses, both paddings, 64x64 tiles, the
# naive copy, blocks looping over tiles; for gemv lanes of a warp, whole warps per row and one thread per row.
SCHEDULES = {
    "transpose": (dict(), dict(tile=64, rows=16, vec=8, pad=2), dict(vec=8, rows=8, pad=1, order="diagonal"),
                  dict(vec=2, rows=16, pad=2, grid_stride=8), dict(vec=1, pad=2), dict(tile=16, rows=16, vec=8),
                  dict(vec=1, staged=False, pad=0)),
    "gemv": (dict(), dict(threads=512, lanes=512, vec=8, unroll=2), dict(threads=256, lanes=32, vec=8, unroll=4),
             dict(threads=256, lanes=4, vec=8, unroll=2), dict(threads=512, lanes=128, vec=8, unroll=8, grid_stride=2),
             dict(threads=256, lanes=1, vec=2, unroll=1), dict(threads=64, lanes=8, vec=1, unroll=2)),
}
# Beyond each op's test_problems: a row or a column of one, and for transpose whole 64x64 tiles with
# partial ones beside them (the 16-byte path of 64-wide tiles).
EXTRA = {"transpose": ({"M": 1, "N": 37}, {"M": 61, "N": 1}, {"M": 136, "N": 200}),
         "gemv": ({"M": 1, "N": 8200}, {"M": 37, "N": 5003})}
GEMV_TYPES = (("float16", None), ("bfloat16", None), ("float16", "float32"), ("bfloat16", "float32"))


def ids(knobs):
    return "-".join(f"{k}{v}" for k, v in knobs.items()) or "default"


def sched(op, knobs):
    """The default knobs with `knobs` applied (Op.schedule would check values off the menu in float32)."""
    return op.schedule_from_knobs(**dict(op.default_knobs(), **knobs))


# -- types, widths, plans --------------------------------------------------------------------------
def test_the_ops_take_the_three_types_and_gemv_a_float32_y():
    for name in OPS:
        assert get_op(name).dtypes == ("float32", "float16", "bfloat16")
    assert get_op("gemv").out_dtypes("bfloat16") == ("bfloat16", "float32")
    assert get_op("gemv").out_dtypes("float32") == ("float32",)
    with pytest.raises(UsageError, match="choose one of float16$"):
        get_op("transpose").problem(small=True, dtype="float16", out_dtype="float32")     # a copy keeps its type
    p = get_op("gemv").problem(small=True, dtype="bf16", out_dtype="float32")
    assert p.dtype("A").name == p.dtype("x").name == "bfloat16" and p.dtype("y").name == "float32"


@pytest.mark.parametrize("name", OPS)
def test_names_carry_the_type(name):
    op = get_op(name)
    assert op.kernel(op.default_schedule(), types=op.types("bf16")).name.startswith(f"{name}_bf16_sm90_")
    assert op.kernel(op.default_schedule(), types=op.types("float16")).name.startswith(f"{name}_f16_sm90_")


@pytest.mark.parametrize("name", OPS)
def test_vector_widths_follow_the_element_size(name):
    op = get_op(name)
    with pytest.raises(ScheduleError, match="16 bytes per .* of float32; allowed: 1, 2, 4"):
        op.kernel(sched(op, dict(vec=8)))
    for vec in (1, 2, 4, 8):
        for dt in HALF:
            op.kernel(sched(op, dict(vec=vec, rows=16) if name == "transpose" else dict(vec=vec)), types=op.types(dt))


def test_heuristics_take_16_byte_accesses_at_the_benchmark_size():
    t, g = get_op("transpose"), get_op("gemv")
    assert g.schedule_for(g.problem(BENCH)) == g.default_schedule()              # float32 GEMV as it was
    assert t.knobs_from_schedule(t.schedule_for(t.problem(BENCH))) == dict(tile=64, rows=16, vec=4, staged=True, pad=1,
                                                                       order="row", grid_stride=0, store_align=0,
                                                                       load_align=False)  # 256-byte rows
    for dt in HALF:
        p = t.problem(BENCH, dtype=dt)
        assert t.knobs_from_schedule(t.schedule_for(p)) == dict(tile=64, rows=16, vec=8, staged=True, pad=2,
                                                                 order="row", grid_stride=0, store_align=0, load_align=False)
        p = g.problem(BENCH, dtype=dt)
        assert g.knobs_from_schedule(g.schedule_for(p)) == dict(threads=512, lanes=512, vec=8, unroll=2, grid_stride=0,
                                                                 prefetch=0, prefetch_scope="registers",
                                                                 prefetch_mode="batch", prefetch_pad=0, prefetch_slots="interleaved")
        # gemv: the float32 rule in bytes (two 16-byte loads per thread cover the row)
        lanes = {n: g.knobs_from_schedule(g.schedule_for(g.problem({"M": 100, "N": n}, dtype=dt)))["lanes"]
                 for n in (3, 64, 1024, 8192, 100000)}
        assert lanes == {3: 1, 64: 4, 1024: 64, 8192: 512, 100000: 1024}


@pytest.mark.parametrize("name", OPS)
def test_the_search_takes_16_byte_accesses(name):
    op = get_op(name)
    for dt, vec in (("float32", 4), ("float16", 8), ("bfloat16", 8)):
        p = op.problem(BENCH, dtype=dt)
        space = list(op.space(p, target("sm_90")))
        assert space and {k["vec"] for k in space} - {1} == {vec}
        for knobs in space:
            op.kernel(op.schedule_from_knobs(**knobs), types=p.types)              # all legal


@pytest.mark.parametrize("dt", HALF)
def test_plans_align_in_bytes_of_the_element(dt):
    t, g = get_op("transpose"), get_op("gemv")
    k = t.kernel(sched(t, dict(vec=8, rows=16)), types=t.types(dt))
    assert dict(t.plan(k, t.problem({"M": 67, "N": 1001}, dtype=dt)).alignment) == {"x": 16, "out": 16}
    k = g.kernel(sched(g, dict(vec=8)), types=g.types(dt))
    plan = g.plan(k, g.problem({"M": 5, "N": 1024}, dtype=dt))
    assert plan.launches[0].symbol == k.name and dict(plan.alignment) == {"A": 16, "x": 16}
    assert g.plan(k, g.problem({"M": 5, "N": 1020}, dtype=dt)).launches[0].symbol == k.name + "_unaligned"
    k4 = g.kernel(g.default_schedule(), types=g.types(dt))                      # 4 elements: 8 bytes
    assert dict(g.plan(k4, g.problem({"M": 5, "N": 1020}, dtype=dt)).alignment) == {"A": 8, "x": 8}


def test_bytes_moved_at_the_element_size():
    t, g = get_op("transpose"), get_op("gemv")
    sizes = {"M": 64, "N": 512}
    assert t.bytes_moved(t.problem(sizes, dtype="float16")) * 2 == t.bytes_moved(t.problem(sizes)) == 8 * 64 * 512
    assert g.bytes_moved(g.problem(sizes, dtype="bfloat16")) == 2 * (64 * 512 + 512 + 64)
    assert g.bytes_moved(g.problem(sizes, dtype="bfloat16", out_dtype="float32")) == 2 * (64 * 512 + 512) + 4 * 64


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name", OPS)
def test_inputs_are_exact_in_the_storage_type(name, dt):
    op, d = get_op(name), dtype(dt)
    p = op.problem(small=True, dtype=dt)
    inputs = op.make_inputs(p, np.random.default_rng(0))
    for b, a in inputs.items():
        assert a.dtype == np.dtype(d.storage) and a.shape == op.input_shapes(p)[b]
        np.testing.assert_array_equal(d.encode(d.decode(a)), a)


@pytest.mark.parametrize("dt", HALF)
def test_transpose_is_exact_and_its_reference_the_decoded_input(dt):
    op, d = get_op("transpose"), dtype(dt)
    p = op.problem({"M": 3, "N": 5}, dtype=dt)
    x = op.make_inputs(p, np.random.default_rng(4))["x"]
    np.testing.assert_array_equal(op.reference({"x": x}, p)["out"], d.decode(x).T)
    assert op.tolerance(p) == 0.0


@pytest.mark.parametrize("dt", HALF)
def test_gemv_error_passes_correct_rounding_and_fails_a_wrong_element(dt):
    op, d = get_op("gemv"), dtype(dt)
    p = op.problem({"M": 37, "N": 3000}, dtype=dt)
    inputs = op.make_inputs(p, np.random.default_rng(1))
    ref = op.reference(inputs, p)["y"]
    rounded = d.decode(d.encode(ref))                        # the best a kernel can store
    assert op.error("y", rounded, ref, inputs, p) <= d.unit_roundoff * 1.001
    assert op.tolerance(p) == 2 * d.unit_roundoff and "per element" in op.measure(p)
    for r in np.argsort(-np.abs(ref))[:3]:                   # one element 4 ulps (8u) off fails
        wrong = rounded.copy()
        wrong[r] *= 1 + 8 * d.unit_roundoff
        assert op.error("y", wrong, ref, inputs, p) > op.tolerance(p), r
    nan = rounded.copy()
    nan[3] = np.nan
    assert op.error("y", nan, ref, inputs, p) > op.tolerance(p)


def test_a_float32_y_whose_products_cancel_is_measured_against_their_size():
    """M = 1, N = 8200 failed once in 10^2 runs at 4.2e-5 (tolerance 3.6e-5) relative to a small sum;
    relative to the products' size the same error is 4e-7 sqrt(N) only if the sum itself is that far off."""
    op = get_op("gemv")
    p = op.problem({"M": 1, "N": 2})
    inputs = {"A": np.array([[3.0, -3.0]], np.float32), "x": np.array([1.0, 1.0], np.float32)}
    ref = np.zeros(1)
    assert op.error("y", ref + 1e-6, ref, inputs, p) == pytest.approx(1e-6 / np.sqrt(18))
    assert op.error("y", ref + 1.0, ref, inputs, p) > op.tolerance(p)
    assert op.error("y", np.array([np.nan]), ref, inputs, p) == np.inf


def test_gemv_with_a_float32_y_keeps_the_float32_measure():
    op = get_op("gemv")
    for dt in ("float32",) + HALF:
        p = op.problem({"M": 5, "N": 4096}, dtype=dt, out_dtype="float32")
        assert op.tolerance(p) == op.tolerance(op.problem({"M": 5, "N": 4096})) and op.measure(p) == op.error_measure


# -- the padded tile -------------------------------------------------------------------------------
def test_bank_conflicts_of_the_staged_tile():
    # float32: one float of padding makes every layout the ladder uses conflict-free
    assert shared_conflicts(32, 8, 1, 0, 4) == (1, 32) and shared_conflicts(32, 8, 1, 1, 4) == (1, 1)
    assert shared_conflicts(32, 8, 4, 1, 4) == (1, 1)
    # 16-bit: two elements share a bank, so one element of padding leaves the column read 2-way and two
    # (a bank) make the scalar path conflict-free; with 8-element vectors one side stays 2-way either way.
    assert shared_conflicts(32, 8, 1, 1, 2) == (1, 2) and shared_conflicts(32, 8, 1, 2, 2) == (1, 1)
    assert shared_conflicts(64, 16, 8, 2, 2) == (1, 2) and shared_conflicts(64, 16, 8, 1, 2) == (2, 1)
    assert shared_conflicts(32, 8, 8, 0, 2) == (4, 4)


@pytest.mark.parametrize("dt", HALF)
def test_the_16_bit_tile_is_padded_in_elements(dt):
    op = get_op("transpose")
    k = op.kernel(sched(op, dict(tile=64, rows=16, vec=8, pad=2)), types=op.types(dt))
    assert k.static_smem == 2 * 64 * 66
    src = render(k)
    assert f"__shared__ {dtype(dt).ctype} tile[64][66];" in src and "2-way bank conflict" in src


# -- sources ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", OPS)
def test_float32_kernels_render_as_in_generated(name):
    """generated/ holds the float32 kernels; the templates that now take 16-bit types render them
    byte for byte as committed."""
    op = get_op(name)
    kernels = generated_kernels(op, target("sm_90"))
    assert kernels
    for _, k in kernels:
        assert (GENERATED / name / "sm_90" / f"{k.name}.cu").read_text() == render(k), k.name


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name", OPS)
def test_16_bit_sources_declare_the_type_and_no_float_vectors(name, dt):
    op, d = get_op(name), dtype(dt)
    src = render(op.kernel(sched(op, dict(vec=8, rows=16) if name == "transpose" else dict(vec=8)), types=op.types(dt)))
    assert f"#include <{d.header}>" in src and f"struct alignas(16) kg_{d.short}x8 {{ {d.ctype} e[8]; }};" in src
    body = src.split("end of prelude")[1]
    assert f"const {d.ctype}* __restrict__ x" in body and not re.search(r"\bfloat[24]\b", body)


def test_gemv_converts_each_element_and_loads_structs_as_bits():
    op = get_op("gemv")
    src = render(op.kernel(sched(op, dict(vec=8)), types=op.types("bfloat16", "float32")))
    assert "fmaf(__bfloat162float(ra[u].e[7]), __bfloat162float(rx[u].e[7]), acc[u])" in src
    assert "const uint4 b = STREAM ? kg_ldcs(q) : __ldg(q);" in src            # A streams, x is read-only
    assert "float* __restrict__ y" in src and "__float2bfloat16_rn" not in src   # a float32 y: no rounding
    src = render(op.kernel(sched(op, dict(vec=8)), types=op.types("float16")))
    assert "y[row] = __float2half_rn(acc);" in src


# -- the emulator ----------------------------------------------------------------------------------
EMULATE = [(n, dt, None, kn) for n in OPS for dt in HALF for kn in SCHEDULES[n]] + \
    [("gemv", dt, "float32", kn) for dt in HALF for kn in SCHEDULES["gemv"][:3]]


@pytest.mark.emulate
@pytest.mark.parametrize("name,dt,out,knobs", EMULATE, ids=[f"{n}-{dt}-{o or dt}-{ids(kn)}" for n, dt, o, kn in EMULATE])
def test_validates_on_the_emulator_at_awkward_sizes(name, dt, out, knobs):
    op = get_op(name)
    for s in op.test_problems() + EXTRA[name]:
        v = validate(op, sched(op, knobs), op.problem(s, dtype=dt, out_dtype=out), backend="emulate")
        assert v.ok, (s, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name", OPS)
def test_heuristic_schedules_validate_on_the_emulator(name, dt):
    op = get_op(name)
    for s in op.test_problems() + EXTRA[name]:
        p = op.problem(s, dtype=dt)
        v = validate(op, op.schedule_for(p), p, backend="emulate", check=True, order="random")
        assert v.ok, (s, v.summary())


# -- NVRTC -----------------------------------------------------------------------------------------
NVRTC = [(n, dt, kn) for n in OPS for dt in HALF for kn in SCHEDULES[n][:3]]


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name,dt,knobs", NVRTC, ids=[f"{n}-{dt}-{ids(kn)}" for n, dt, kn in NVRTC])
def test_compiles_without_spills(name, dt, knobs, arch):
    op = get_op(name)
    k = op.kernel(sched(op, knobs), target(arch), types=op.types(dt))
    facts = {f.symbol: f for f in facts_of(compile_cuda(render(k), arch, k.name))}
    assert k.name in facts
    vec = dict(k.knobs)["vec"]
    for sym, f in facts.items():
        assert f.spill_bytes == 0 and f.local_bytes == 0, (sym, f)
        if f.ldg128 is not None:
            assert (f.ldg128 > 0) == (vec == 8), (sym, f.ldg128)                 # 8 x 2 bytes = LDG.128
            if name == "transpose":
                assert (f.stg128 > 0) == (vec == 8), (sym, f.stg128)


@pytest.mark.nvrtc
@pytest.mark.parametrize("dt", HALF)
def test_heuristics_fit_32_registers(dt):
    # like the float32 defaults: 2048 threads per SM
    for name in OPS:
        op = get_op(name)
        p = op.problem(BENCH, dtype=dt)
        k = op.kernel(op.schedule_for(p), target("sm_90"), types=p.types)
        assert {f.symbol: f for f in facts_of(compile_cuda(render(k), "sm_90", k.name))}[k.name].registers <= 32


# -- the GPU ---------------------------------------------------------------------------------------
GPU = [("transpose", dt, None) for dt in HALF] + [("gemv", dt, out) for dt, out in GEMV_TYPES]


@pytest.mark.gpu
@pytest.mark.parametrize("name,dt,out", GPU, ids=[f"{n}-{dt}-{o or dt}" for n, dt, o in GPU])
def test_validates_on_the_gpu_at_the_benchmark_size(name, dt, out):
    op = get_op(name)
    p = op.problem(BENCH, dtype=dt, out_dtype=out)
    for s in (op.default_schedule(), op.schedule_for(p)):
        v = validate(op, s, p, backend="gpu")
        assert v.ok, v.summary()
