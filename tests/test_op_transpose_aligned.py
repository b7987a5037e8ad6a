"""transpose with tiles skewed per row of out (store_align) and x read as aligned vectors (load_align): the
knobs and their legality, the grid's extra row of tiles and the plan's alignment, a numpy model of which
block writes what (a partition of out whose every row piece starts aligned, whatever out's address), the
heuristic's rule, SASS facts (128-bit stores with M odd, 128-bit loads with N odd, no spills), the emulator at
awkward sizes in every type, and the GPU at sizes over 4096^2 and with out one element off alignment."""
import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.errors import KnobError, ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.ops.base import INT_MAX, cdiv
from kernelgen.schedule import Schedule
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("transpose")
TYPES = ("float32", "float16", "bfloat16")


def knobs(dt, **k):
    """64x64 tiles, 16 rows of threads, 16-byte accesses and a bank of padding in type `dt`, with `k`."""
    item = 4 if dt == "float32" else 2
    return op.schedule_from_knobs(**dict(op.default_knobs(), **dict(dict(tile=64, rows=16, vec=16 // item,
                                                                          pad=4 // item), **k)))


# -- knobs, names, plans ---------------------------------------------------------------------------
def test_the_knobs_round_trip_and_name_the_kernel_only_where_on():
    s = knobs("float32", store_align=32, load_align=True)
    assert Schedule.from_json(s.to_json()) == s
    k = op.knobs_from_schedule(s)
    assert (k["store_align"], k["load_align"]) == (32, True)
    assert op.kernel(s).name == "transpose_f32_sm90_t64_r16_v4_s1_p1_orow_g0_a32_l1"
    assert op.kernel(knobs("float32")).name == "transpose_f32_sm90_t64_r16_v4_s1_p1_orow_g0"   # as before
    assert op.kernel(knobs("float32")).template == "transpose.cu.j2"
    assert op.kernel(s).template == "transpose_aligned.cu.j2"


@pytest.mark.parametrize("change,message", [
    (dict(load_align=True), r"load_align=True has no effect with store_align=0 \(it applies with store_align 16 or 32\)"),
    (dict(store_align=32, load_align=True, vec=1), r"aligned vector loads of x need vectorize"),
    (dict(store_align=8), r"knob store_align=8 is not one of its choices \(allowed: 0, 16, 32\)"),
    (dict(staged=False, pad=0, vec=1, store_align=32), r"store_align=32 has no effect with staged=False"),
])
def test_illegal_settings_say_why(change, message):
    with pytest.raises((ScheduleError, KnobError), match=message):
        op.kernel(op.schedule(**dict(dict(tile=64, rows=16), **change)))


@pytest.mark.parametrize("dt", TYPES)
def test_the_grid_reaches_a_halo_past_m_and_out_needs_only_element_alignment(dt):
    s = knobs(dt, store_align=32)
    item = 4 if dt == "float32" else 2
    k = op.kernel(s, types=op.types(dt))
    for m, n in ((12345, 6789), (64, 100), (60, 1), (1, 1)):
        plan = op.plan(k, op.problem({"M": m, "N": n}, dtype=dt))
        assert plan.launches[0].grid == (cdiv(m + 32 // item - 1, 64) * cdiv(n, 64), 1, 1)
        assert dict(plan.alignment) == {"x": 16, "out": item}


def test_m_near_int_max_is_refused_with_the_limit():
    k = op.kernel(knobs("float32", store_align=32))
    with pytest.raises(ScheduleError, match=r"store_align.*M=2147483583.*M <= 2147483575"):
        op.plan(k, op.problem({"M": INT_MAX - 64, "N": 1}))


def test_heuristic_skews_tiles_where_rows_of_out_leave_the_sector_grid():
    def pick(m, n, dt="float32"):
        k = op.knobs_from_schedule(op.schedule_for(op.problem({"M": m, "N": n}, dtype=dt)))
        return k["store_align"], k["load_align"]
    assert pick(12345, 6789) == (32, True)          # both sides odd
    assert pick(7001, 5000) == (32, False)          # rows of x aligned
    assert pick(5000, 7001) == (0, False)           # rows of out on sectors: tiles on the grid
    assert pick(8192, 8192) == (0, False)
    assert pick(5000, 7001, "float16") == (32, True)   # 10000 bytes: a half sector
    assert pick(8208, 8200, "bfloat16") == (0, False)   # 16416 bytes: whole sectors


# -- which block writes what: the template's arithmetic, in numpy --------------------------------
def owners(m, n, tile, halo, base):
    """Writes per element of out (n x m), and the misalignment of each block's row piece, as the template
    computes them: block (by, bx) writes out row j, columns i0 - d_j .. i0 - d_j + tile - 1 (in the matrix),
    d_j = (base + (j mod halo)(m mod halo)) mod halo, base = out's element address mod halo."""
    count = np.zeros((n, m), np.int64)
    misaligned = 0
    for by in range(cdiv(m + halo - 1, tile)):
        for j in range(n):
            d = (base + (j % halo) * (m % halo)) % halo
            lo, hi = max(by * tile - d, 0), min(by * tile - d + tile, m)
            if lo < hi:
                count[j, lo:hi] += 1
                misaligned += (base + j * m + by * tile - d) % halo != 0
    return count, misaligned


@pytest.mark.parametrize("m,n", [(1, 1), (67, 5), (129, 3), (64, 7), (12345 % 512 + 64, 9)])
@pytest.mark.parametrize("halo", [4, 8, 16])
def test_blocks_write_each_element_once_from_an_aligned_start_whatever_the_address(m, n, halo):
    for base in range(halo):          # out any number of elements past an aligned address
        count, misaligned = owners(m, n, 64 if halo < 16 else 32, halo, base)
        assert (count == 1).all() and misaligned == 0, (base, np.argwhere(count != 1)[:3])


# -- SASS --------------------------------------------------------------------------------------------
def sass(dt, **k):
    kern = op.kernel(knobs(dt, **k), target("sm_90"), types=op.types(dt))
    return {x.symbol: x for x in facts_of(compile_cuda(render(kern), "sm_90", kern.name))}[kern.name]


@pytest.mark.nvrtc
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_stores_are_128_bit_load_align_adds_128_bit_loads_and_nothing_spills(dt):
    plain, aligned = sass(dt, store_align=32), sass(dt, store_align=32, load_align=True)
    small = sass(dt, store_align=16, load_align=True, tile=32, rows=8)
    for f in (plain, aligned, small):
        assert f.spill_bytes == 0 and f.local_ops == 0, f
        assert f.stg128 > 0 and f.registers <= 64, f       # whole tiles store vectors whatever M
    assert aligned.ldg128 > plain.ldg128 > 0               # x's rows as aligned vectors whatever N


# -- the emulator ------------------------------------------------------------------------------------
SIZES = ({"M": 1, "N": 1}, {"M": 1, "N": 37}, {"M": 61, "N": 1}, {"M": 67, "N": 1001}, {"M": 137, "N": 201},
         {"M": 130, "N": 96}, {"M": 96, "N": 67}, {"M": 200, "N": 137}, {"M": 143, "N": 75})
VARIANTS = [("float32", dict(store_align=32)), ("float32", dict(store_align=32, load_align=True)),
            ("float32", dict(tile=32, rows=4, vec=2, store_align=16, load_align=True)),
            ("float32", dict(tile=32, rows=8, vec=1, store_align=16)),
            ("float16", dict(store_align=32, load_align=True)), ("float16", dict(store_align=16, rows=4)),
            ("bfloat16", dict(tile=32, rows=8, store_align=32, load_align=True, grid_stride=1, order="diagonal"))]


@pytest.mark.emulate
@pytest.mark.parametrize("dt,k", VARIANTS, ids=[f"{dt}-" + "-".join(f"{a}{b}" for a, b in k.items()) for dt, k in VARIANTS])
def test_variants_are_exact_on_the_emulator(dt, k):
    for sizes in SIZES:
        v = validate(op, knobs(dt, **k), op.problem(sizes, dtype=dt), backend="emulate", check=True, order="random")
        assert v.ok, (sizes, v.summary())



@pytest.mark.emulate
@pytest.mark.parametrize("k", [dict(store_align=16, grid_stride=1), dict(store_align=32, load_align=True, grid_stride=1)])
def test_blocks_looping_over_skewed_tiles_are_exact_on_the_emulator(k):
    """Blocks come round to a second tile (10 x 19 tiles > 132 blocks): the barrier before the tile is
    refilled is needed (SIZES never make a block loop)."""
    s, p = knobs("float32", tile=32, rows=8, **k), op.problem({"M": 301, "N": 603})
    assert op.plan(op.kernel(s), p).launches[0].grid == (132, 1, 1)
    v = validate(op, s, p, backend="emulate", check=True, order="random")
    assert v.ok, v.summary()


# -- the GPU -----------------------------------------------------------------------------------------
BIG = [({"M": 12345, "N": 6789}, dt) for dt in TYPES] + [({"M": 7001, "N": 5000}, "float32"),
                                                         ({"M": 8190, "N": 8190}, "float16")]


@pytest.mark.gpu
@pytest.mark.parametrize("sizes,dt", BIG, ids=[f"{s['M']}x{s['N']}-{dt}" for s, dt in BIG])
def test_heuristic_and_variants_are_exact_on_the_gpu(sizes, dt):
    p = op.problem(sizes, dtype=dt)
    for s in (op.schedule_for(p), knobs(dt, store_align=16), knobs(dt, store_align=32, load_align=True, rows=8)):
        v = validate(op, s, p, backend="gpu")
        assert v.ok, (op.knobs_from_schedule(s), v.summary())


@pytest.mark.gpu
@pytest.mark.parametrize("dt", TYPES)
def test_out_one_element_past_alignment_is_exact_on_the_gpu(dt):
    import cupy
    from kernelgen.prepared import prepare
    m, n = 645, 389
    p = op.problem({"M": m, "N": n}, dtype=dt)
    d = p.dtype("x")
    x = d.encode(np.random.default_rng(0).standard_normal((m, n), dtype=np.float32))
    for k in (dict(store_align=32, load_align=True), dict(store_align=16, vec=1, rows=4)):
        buf = cupy.zeros(n * m + 1, dtype=d.storage)
        prepare(op, knobs(dt, **k), p)(x=cupy.asarray(x), out=buf[1:].reshape(n, m))
        assert (cupy.asnumpy(buf[1:]).reshape(n, m) == x.T).all(), k
