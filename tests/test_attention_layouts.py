"""Attention through run-time strides: the problem's layout word (bhsd, bshd, packed), the strides and
buffers it gives, the plan's stride arguments and its aligned / element-wise choice, one kernel for every
layout, every ladder step on the emulator in the bshd and packed layouts at awkward sizes (fp32 and the
16-bit step; the checker on, as conftest sets) against the float64 reference, a kernel that ignores a
stride caught, kernelgen.torch's wrapper taking strided views without a copy (CPU torch), and the GPU."""
import numpy as np
import pytest

from kernelgen import get_op
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.ops.attention_layout import layout_of, logical, store, stored_shapes, strides
from kernelgen.sizes import parse_size
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("attention")
STEPS = op.ladder()
TYPED = [(i, d) for i, st in enumerate(STEPS) for d in st.dtypes or ("float32",)]
EMULATED = [(i, d) for i, d in TYPED if not STEPS[i].arch]   # the emulator runs no wgmma or TMA: the Hopper step on the GPU
SIZES = {   # s 1; s 37 causal, 3 heads; head_dim 20 (16-bit: the element-wise twin); d 23 (every step's twin)
    "bshd": (dict(batch=1, heads=1, seq=1, head_dim=64, causal=0),
             dict(batch=2, heads=3, seq=37, head_dim=64, causal=1),
             dict(batch=1, heads=2, seq=70, head_dim=20, causal=1),
             dict(batch=2, heads=2, seq_q=19, seq_k=83, head_dim=23, causal=0)),
    "packed": (dict(batch=1, heads=1, seq=1, head_dim=64, causal=0),
               dict(batch=2, heads=3, seq=37, head_dim=64, causal=1),
               dict(batch=1, heads=2, seq=70, head_dim=20, causal=1),
               dict(batch=1, heads=3, seq=45, head_dim=23, causal=0)),
}
CASES = [(layout, s) for layout, sizes in SIZES.items() for s in sizes]


def _id(case):
    layout, s = case
    return layout + ":" + ",".join(f"{k}={v}" for k, v in s.items())


# -- problems ---------------------------------------------------------------------------------------
def test_the_layout_word_prints_after_the_sizes_and_bhsd_as_nothing():
    p = op.problem(dict(batch=2, heads=3, seq=37, head_dim=64, causal=1), layout="PACKED")
    assert str(p) == "batch=2,heads=3,seq=37,head_dim=64,causal=1,layout=packed" and p.layout == "packed"
    assert parse_size(op, str(p), False) == p
    assert op.problem(layout="bhsd") == op.problem() and str(op.problem(layout="bhsd")) == str(op.problem())
    assert parse_size(op, "batch=1,heads=2,seq_q=5,seq_k=7,head_dim=32,layout=bshd", False).layout == "bshd"


@pytest.mark.parametrize("sizes,layout,message", [
    (dict(), "bsdh", r"layout 'bsdh' is not one of bhsd, bshd, packed \(bhsd: each of Q, K, V, O contiguous"),
    (dict(seq_q=5, seq_k=7), "packed", r"layout packed .* seq_q = seq_k; got seq_q=5, seq_k=7 \(use bhsd or bshd\)"),
])
def test_bad_layouts_say_what_is_allowed(sizes, layout, message):
    with pytest.raises(UsageError, match=message):
        op.problem(sizes, layout=layout)


def test_each_layout_has_its_strides_and_buffers():
    b, h, s, d = 2, 3, 5, 8
    assert strides("bhsd", b, h, s, 7, d)["K"] == strides(None, b, h, s, 7, d)["K"]
    assert tuple(vars(strides("bhsd", b, h, s, 7, d)["K"]).values()) == (h * 7 * d, 7 * d, d)
    assert tuple(vars(strides("bshd", b, h, s, s, d)["O"]).values()) == (s * h * d, d, h * d)
    pk = strides("packed", b, h, s, s, d)
    assert tuple(vars(pk["V"]).values()) == (s * 3 * h * d, d, 3 * h * d) and tuple(vars(pk["O"]).values()) == (s * h * d, d, h * d)
    shapes = stored_shapes("packed", b, h, s, s, d)
    assert shapes["Q"] == (3 * b * s * h * d - 2 * h * d,) and shapes["O"] == (b, s, h, d)
    p = op.problem(dict(batch=b, heads=h, seq=s, head_dim=d), layout="packed")
    assert op.input_shapes(p) == {n: shapes[n] for n in "QKV"} and op.output_shapes(p) == {"O": (b, s, h, d)}
    assert op.bytes_moved(p) == op.bytes_moved(op.problem(dict(batch=b, heads=h, seq=s, head_dim=d))) == 4 * 4 * b * h * s * d


def test_packed_inputs_are_three_windows_of_one_projection_and_read_back_as_drawn():
    p = op.problem(dict(batch=2, heads=3, seq=5, head_dim=8), layout="packed")
    plain = op.problem(dict(batch=2, heads=3, seq=5, head_dim=8))
    got, want = op.make_inputs(p, np.random.default_rng(1)), op.make_inputs(plain, np.random.default_rng(1))
    assert np.array_equal(got["K"][:-24], got["Q"][24:]) and np.array_equal(got["V"][:-24], got["K"][24:])   # h*d = 24
    views = op.views(got, p)
    assert all(np.array_equal(views[n], want[n]) for n in "QKV")
    assert np.array_equal(op.reference(got, p)["O"], op.reference(want, plain)["O"].transpose(0, 2, 1, 3))


def test_layout_of_reads_torch_style_strides():
    b, h, s, d = 2, 3, 5, 8
    assert layout_of((b, h, s, d), (h * s * d, s * d, d, 1), s) == "bhsd"
    assert layout_of((b, h, s, d), (s * h * d, d, h * d, 1), s) == "bshd"
    assert layout_of((b, h, s, d), (s * 3 * h * d, d, 3 * h * d, 1), s) == "packed"
    assert layout_of((b, h, 7, d), (7 * 3 * h * d, d, 3 * h * d, 1), s) is None          # packed needs seq_q = seq_k
    assert layout_of((1, h, s, d), (12345, d, h * d, 1), s) == "bshd"                     # a dim of 1: any stride
    assert layout_of((b, h, s, d), (h * 9 * d, 9 * d, d, 1), s) is None                   # a slice of a longer cache


def test_store_and_logical_round_trip():
    rng = np.random.default_rng(0)
    t = {n: rng.standard_normal((2, 3, 4, 5)) for n in "QKV"}
    for layout in ("bhsd", "bshd", "packed"):
        st, bufs = strides(layout, 2, 3, 4, 4, 5), store(t, layout, np)
        assert all(np.array_equal(logical(bufs[n], st[n], (2, 3, 4, 5), np), t[n]) for n in "QKV"), layout


# -- kernels and plans ------------------------------------------------------------------------------
@pytest.mark.parametrize("step,dt", TYPED, ids=str)
def test_one_kernel_serves_every_layout_and_the_plan_passes_its_strides(step, dt):
    sched, types, arch = STEPS[step].schedule, op.types(dt), target(STEPS[step].arch or "sm_90")
    kernels = {layout: op.kernel(sched, arch, types, layout) for layout in ("bhsd", "bshd", "packed")}
    assert len({k.name for k in kernels.values()}) == 1 and all(k.layout is None for k in kernels.values())
    p = op.problem(dict(batch=2, heads=3, seq=37, head_dim=64), dtype=dt, layout="packed")
    plan = op.plan(kernels["packed"], p, arch)
    scalars = {s.name: s.value for s in plan.scalars}
    assert (scalars["heads"], scalars["q_sb"], scalars["q_sh"], scalars["q_ss"], scalars["kv_ss"], scalars["o_ss"]) == \
        (3, 37 * 3 * 3 * 64, 64, 3 * 3 * 64, 3 * 3 * 64, 3 * 64)
    maps = {m.name for m in plan.tensor_maps}     # the Hopper step reads Q, K and V through tensor maps
    for launch in plan.launches:
        assert all(a in scalars or a in maps or a in ("Q", "K", "V", "O", "S") for a in launch.args)


def test_the_plan_takes_the_element_wise_twin_where_a_stride_breaks_16_byte_rows():
    k16 = op.kernel(STEPS[3].schedule, types=op.types("float16"))
    aligned = op.plan(k16, op.problem(dict(batch=1, heads=2, seq=70, head_dim=64), dtype="float16", layout="packed"))
    assert aligned.launches[0].symbol == k16.name and dict(aligned.alignment)["K"] == 16
    # head_dim 20: the packed row stride 3*2*20 = 120 halves is no multiple of 8 (16 bytes)
    odd = op.plan(k16, op.problem(dict(batch=1, heads=2, seq=70, head_dim=20), dtype="float16", layout="packed"))
    assert odd.launches[0].symbol == k16.name + "_unaligned" and dict(odd.alignment)["K"] == 2


# -- the emulator -----------------------------------------------------------------------------------
@pytest.mark.emulate
@pytest.mark.parametrize("step,dt", EMULATED, ids=str)
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_every_step_is_correct_in_every_layout_on_the_emulator(step, dt, case):
    layout, sizes = case
    v = validate(op, STEPS[step].schedule, op.problem(sizes, dtype=dt, layout=layout), backend="emulate", order="random")
    assert v.ok, v.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("step,dt,old,new", [
    (2, "float32", "seq_k, head_dim, kv_ss)", "seq_k, head_dim, head_dim)"),      # K/V rows read as if contiguous
    (2, "float32", "(long long)row * o_ss", "(long long)row * head_dim"),         # O written as if bhsd
    (3, "float16", "(size_t)r * q_ss", "(size_t)r * head_dim"),                # Q rows read as if contiguous
    (0, "float32", "+ h * k_sh;", "+ h * k_sb;"),                                # a head stride swapped
])
def test_the_emulator_catches_a_kernel_that_ignores_a_stride(step, dt, old, new):
    def mutate(src):
        assert old in src
        return src.replace(old, new)
    p = op.problem(dict(batch=2, heads=3, seq=37, head_dim=64, causal=1), dtype=dt, layout="packed")
    v = validate(op, STEPS[step].schedule, p, backend="emulate", mutate=mutate)
    assert not v.ok


# -- the GPU ----------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("step,dt", TYPED, ids=str)
@pytest.mark.parametrize("case", [("packed", dict(batch=2, heads=12, seq=1000, head_dim=64, causal=1)),
                                  ("bshd", dict(batch=1, heads=4, seq_q=333, seq_k=1027, head_dim=64, causal=0)),
                                  ("packed", dict(batch=1, heads=2, seq=513, head_dim=60, causal=1))] + CASES, ids=_id)
def test_every_step_is_correct_in_every_layout_on_the_gpu(step, dt, case):
    layout, sizes = case
    p = op.problem(sizes, dtype=dt, layout=layout)
    if STEPS[step].arch and not op.rows_aligned(p, 8):
        with pytest.raises(ScheduleError, match="TMA reads rows that start 16-byte aligned"):   # schedule_for's cue
            validate(op, STEPS[step].schedule, p, backend="gpu")
        return
    v = validate(op, STEPS[step].schedule, p, backend="gpu")
    assert v.ok, v.summary()


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["bshd", "packed"])
def test_the_heuristic_is_correct_at_the_transformer_shapes_on_the_gpu(dt, layout):
    for sizes in (dict(batch=8, heads=12, seq=1024, head_dim=64, causal=1), dict(batch=1, heads=32, seq=2048, head_dim=128,
                                                                                 causal=1)):
        p = op.problem(sizes, dtype=dt, layout=layout)
        v = validate(op, op.schedule_for(p), p, backend="gpu")
        assert v.ok, v.summary()
