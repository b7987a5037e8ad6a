"""prefetch in the loops over a row: GEMV (A's and x's vectors of a row), the streaming passes of softmax
(three_pass, online) and layer norm (two_pass, welford; the residual row beside x's). Plain Python
(schedules, names, refusals by name, plans, spaces), NVRTC (no spills; cp.async in the shared forms), the
emulator with the checker on (every form at awkward sizes, half types, the any-alignment twin's edges,
off-by-one mutants caught), and the GPU."""
import pytest

from kernelgen import get_op
from kernelgen.compile import compile_cuda
from kernelgen.errors import KernelgenError, ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.render import render
from kernelgen.schedule import Schedule
from kernelgen.target import target
from kernelgen.validate import validate

gemv, softmax, layernorm = get_op("gemv"), get_op("softmax"), get_op("layernorm")
FORMS = [("registers", "batch", 0), ("registers", "rolling", 0), ("shared", "batch", 0), ("shared", "rolling", 1)]
STREAMING = {"softmax": ("online", "three_pass"), "layernorm": ("welford", "two_pass")}
# (dtype, vec, threads per row, rows per block): float4, 8 halves a vector over two rows a block, scalars
TYPES = [("float32", 4, 64, 1), ("float16", 8, 32, 2), ("bfloat16", 1, 64, 1)]


def pf(scope, mode, pad, distance=3):
    k = dict(prefetch=distance, prefetch_scope=scope, prefetch_mode=mode)
    return dict(k, prefetch_pad=pad) if scope == "shared" else k


def row_sched(op, algo, form, vec=4, threads=64, rows_per_block=1, distance=3):
    return op.schedule(algo=algo, items=1, vec=vec, threads=threads, rows_per_block=rows_per_block, **pf(*form, distance))


def gemv_sched(form, vec=4, threads=64, lanes=64, distance=3, **kw):
    return gemv.schedule(unroll=1, vec=vec, threads=threads, lanes=lanes, **pf(*form, distance), **kw)


# -- schedules, names, refusals --------------------------------------------------------------------
def test_the_steps_round_trip_and_name_the_kernels():
    s = gemv_sched(("shared", "rolling", 1), distance=4)
    assert Schedule.from_json(s.to_json()) == s
    assert 'prefetch("A", 4, "shared", "rolling").prefetch("x", 4, "shared", "rolling")' in s.to_python()
    assert gemv.kernel(s).name == "gemv_f32_sm90_t64_l64_v4_u1_g0_p4_psshared_pmrolling_pp1_plinterleaved"
    s = row_sched(softmax, "online", ("registers", "batch", 0), distance=8)
    assert softmax.knobs_from_schedule(s)["prefetch"] == 8
    assert softmax.kernel(s).name == "softmax_f32_sm90_t64_r1_i1_v4_sshuffle_aonline_b16_p8_psregisters_pmbatch"
    s = row_sched(layernorm, "two_pass", ("shared", "batch", 0))
    assert layernorm.kernel(s).name == "layernorm_f32_sm90_t64_r1_i1_v4_sshuffle_atwopass_p3_psshared_pmbatch_pp0_plinterleaved"
    # without prefetch: the names the kernels had
    assert softmax.kernel(softmax.default_schedule()).name == "softmax_f32_sm90_t256_r1_i4_v4_sshuffle_aregisters_b16"
    assert gemv.kernel(gemv.default_schedule()).name == "gemv_f32_sm90_t1024_l1024_v4_u2_g0"


def test_gemv_prefetches_a_and_x_alike():
    s = gemv_sched(("registers", "batch", 0))
    one = Schedule(s.op, tuple(st for st in s.steps if not (st.prim == "prefetch" and st.buffer == "x")))
    with pytest.raises(ScheduleError, match=r"prefetch\(x\): 'missing' is illegal .*every input is prefetched alike"):
        gemv.knobs_from_schedule(one)


@pytest.mark.parametrize("op, algo, held", [(softmax, "registers", "the whole row"), (layernorm, "registers", "the whole row"),
                                            (softmax, "split", "each block's chunk"), (layernorm, "split", "each block's chunk")])
def test_forms_that_hold_the_row_refuse_it_by_name(op, algo, held):
    s = op.schedule(algo=algo, items=1, threads=128, prefetch=4)
    allowed = ", ".join(STREAMING[op.name][::-1])
    with pytest.raises(ScheduleError, match=rf"prefetch\(x\): 4 is illegal \(limit: algo {algo} holds {held}.* in registers: "
                                            rf"no loop over the row to prefetch in; allowed: algo {allowed}\)"):
        op.kernel(s)


def test_an_iteration_is_one_vector():
    with pytest.raises(ScheduleError, match=r"prefetch\(A\): 4 is illegal .*split j with unroll 1, not 2"):
        gemv.kernel(gemv.schedule(unroll=2, prefetch=4))
    with pytest.raises(ScheduleError, match=r"prefetch\(x\): 4 is illegal .*split j with items 1, not 4"):
        softmax.kernel(softmax.schedule(algo="online", items=4, prefetch=4))


def test_shared_slots_over_the_block_limit_are_refused_with_the_numbers():
    # the default GEMV block: 16 x (1024 threads + 1) x 16 bytes of A and of x
    s = gemv.schedule(unroll=1, prefetch=16, prefetch_scope="shared", prefetch_pad=1)
    with pytest.raises(ScheduleError, match=r"prefetch\(A\): '528384 bytes' is illegal \(limit: 16 slots x \(1024 threads "
                                            r"\+ 1 pad lines\) x 16\+16 bytes of shared slots \+ 128 bytes > 232448 bytes"):
        gemv.kernel(s)
    # two rows' slots with a residual: x's and res's
    ln = layernorm.with_fusion(residual="add")
    s = ln.schedule(algo="welford", items=1, threads=1024, prefetch=8, prefetch_scope="shared", prefetch_pad=1)
    with pytest.raises(ScheduleError, match=r"1024 threads \+ 1 pad lines\) x 16\+16 bytes"):
        ln.kernel(s)
    layernorm.kernel(s)                                           # one row's slots fit


def test_a_grid_stride_promise_the_slots_break_is_refused():
    s = gemv.schedule(threads=512, lanes=512, unroll=1, grid_stride=4, prefetch=8, prefetch_scope="shared", prefetch_pad=1)
    with pytest.raises(ScheduleError, match=r"grid_stride 4 promises 4 blocks an SM: 4 x \(133120 bytes of slots \+ 64 \+ "
                                            r"1024 reserved\) > 233472 bytes per SM on sm_90; allowed: distance <= 3"):
        gemv.kernel(s)
    k = gemv.kernel(gemv.schedule(threads=512, lanes=512, unroll=1, grid_stride=4, prefetch=2, prefetch_scope="shared",
                                  prefetch_pad=1))
    assert "__launch_bounds__(512, 4)" in render(k)                # the blocks promised to ptxas too


# -- plans, recipes, spaces ------------------------------------------------------------------------
def test_the_slots_are_each_launchs_dynamic_shared_memory():
    k = gemv.kernel(gemv_sched(("shared", "batch", 1), distance=4, threads=256, lanes=128))
    (launch,) = gemv.plan(k, gemv.problem({"M": 9, "N": 1001}), target()).launches
    # interleaved slots: 4 rows of 256 threads' vectors + one 128-byte line, of A and of x
    assert launch.symbol.endswith("_unaligned") and launch.shared_bytes == 4 * 264 * 16 * 2
    assert [s.shared_bytes for s in gemv.recipe(k).steps] == [4 * 264 * 16 * 2] * 2
    k = softmax.kernel(row_sched(softmax, "online", ("shared", "rolling", 0), threads=32, rows_per_block=4))
    (launch,) = softmax.plan(k, softmax.problem({"rows": 5, "cols": 99}), target()).launches
    assert launch.shared_bytes == 128 * 3 * 16 and launch.block == (32, 4, 1)
    ln = layernorm.with_fusion(residual="add_store")
    k = ln.kernel(row_sched(ln, "welford", ("shared", "rolling", 1)))
    assert [s.shared_bytes for s in ln.recipe(k).steps] == [3 * 72 * 16 * 2] * 2      # x's and res's


@pytest.mark.parametrize("op", [gemv, softmax, layernorm])
def test_the_spaces_hold_each_form_where_it_is_legal(op):
    problem = op.problem({"M": 4096, "N": 8192} if op is gemv else {"rows": 4096, "cols": 8192}, dtype="float16")
    on = [k for k in op.space(problem, target()) if k.get("prefetch")]
    assert {(k["prefetch"], k["prefetch_scope"], k["prefetch_mode"]) for k in on} == {
        (d, s, m) for d in (4, 8) for s in ("registers", "shared") for m in ("batch", "rolling")}
    assert all(k["prefetch_pad"] == 0 and k.get("prefetch_slots", "interleaved") == "interleaved"
               for k in on if k["prefetch_scope"] == "shared")      # interleaved slots need no padding
    for k in on:
        op.kernel(op.schedule_from_knobs(**k), types=problem.types)       # every point legal


# -- NVRTC -----------------------------------------------------------------------------------------
@pytest.mark.nvrtc
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
def test_the_kernels_compile_without_spills_and_the_shared_forms_copy_asynchronously(form):
    from kernelgen.inspect import _functions
    cases = [(gemv, gemv_sched(form, vec=8, threads=256, lanes=256, distance=4), "float16"),
             (softmax, row_sched(softmax, "online", form, vec=4, threads=256, distance=4), "float32"),
             (layernorm.with_fusion(residual="add"), row_sched(layernorm, "two_pass", form, vec=8, threads=256, distance=4),
              "bfloat16")]
    for op, s, dtype in cases:
        for arch in ("sm_90", "sm_75"):
            if arch == "sm_75" and dtype == "bfloat16":
                continue
            k = op.kernel(s, target(arch), op.types(dtype))
            compiled = compile_cuda(render(k), arch, k.name)
            for f in facts_of(compiled):
                # GEMV's kernel for rows that are not vector-aligned (x as scalars beside the ring) may spill a
                # word or two (ptxas: 6 bytes at 40 registers for float16 rolling registers)
                most = 8 if f.symbol.endswith("_unaligned") else 0
                assert f.spill_bytes <= most and f.local_bytes <= most, (op.name, arch, f)
                sass = "\n".join(_functions(compiled.cubin)[f.symbol])
                assert ("LDGSTS" in sass) == (form[0] == "shared" and arch == "sm_90"), (op.name, arch, f.symbol)


# -- the emulator, checker on ----------------------------------------------------------------------
# cols: a single element; 37 (no distance, thread count or vector width divides it); 1030 (the any twin
# with 8 halves, whole vectors between two partial ones; 2-5 vectors a thread); rows 1 and 3.
ROWS = ({"rows": 1, "cols": 1}, {"rows": 3, "cols": 37}, {"rows": 2, "cols": 1030})


@pytest.mark.emulate
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
@pytest.mark.parametrize("name, algo", [(n, a) for n, algos in STREAMING.items() for a in algos])
def test_row_passes_on_the_emulator_at_awkward_sizes(form, name, algo):
    op = get_op(name)
    for dtype, vec, threads, rpb in TYPES:
        s = row_sched(op, algo, form, vec, threads, rpb)
        for sizes in ROWS:
            v = validate(op, s, op.problem(sizes, dtype=dtype), backend="emulate")
            assert v.ok, (sizes, dtype, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
@pytest.mark.parametrize("residual", ["add", "add_store"])
def test_layernorms_residual_row_is_prefetched_beside_x(form, residual):
    op = layernorm.with_fusion(residual=residual)
    for (dtype, vec, threads, rpb), algo in zip(TYPES, ("welford", "two_pass", "welford")):
        s = row_sched(op, algo, form, vec, threads, rpb)
        for sizes in ROWS[1:]:
            v = validate(op, s, op.problem(sizes, dtype=dtype, residual=residual), backend="emulate")
            assert v.ok, (sizes, dtype, algo, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
def test_gemv_on_the_emulator_at_awkward_sizes(form):
    # a block per row (several warps), 8 lanes a row, a thread a row; rows of 1, 37 (unaligned: A only
    # prefetched, x as scalars) and 1030 elements
    for (dtype, vec, _, _), (threads, lanes) in zip(TYPES, ((64, 64), (64, 8), (32, 1))):
        s = gemv_sched(form, vec=vec, threads=threads, lanes=lanes)
        for sizes in ({"M": 1, "N": 1}, {"M": 5, "N": 37}, {"M": 3, "N": 1030}):
            v = validate(gemv, s, gemv.problem(sizes, dtype=dtype), backend="emulate")
            assert v.ok, (sizes, dtype, v.summary())


@pytest.mark.emulate
def test_gemvs_grid_stride_over_row_groups_with_prefetch():
    s = gemv_sched(("shared", "rolling", 1), threads=64, lanes=64, grid_stride=1)
    v = validate(gemv, s, gemv.problem({"M": 300, "N": 99}), backend="emulate")      # 132 blocks, 3 rounds
    assert v.ok, v.summary()


def _caught(op, sched, problem, line, mutant):
    src = render(op.kernel(sched, types=problem.types))
    assert line in src, line
    assert validate(op, sched, problem, backend="emulate").ok
    try:
        v = validate(op, sched, problem, backend="emulate", mutate=lambda s: s.replace(line, mutant))
    except KernelgenError as e:                    # the checker's report: a read before the copy landed, out of bounds
        assert "cp.async" in str(e) or "out-of-bounds" in str(e), e
    else:
        assert not v.ok, v.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("line, mutant", [
    ("kg_cp_async_wait<2>();", "kg_cp_async_wait<3>();"),                        # the ring waits for one group too few
    ("for (int pf_r = 0; pf_r < 3; ++pf_r)", "for (int pf_r = 0; pf_r < 2; ++pf_r)"),  # a ring one slot short
    ("const long long pf_jn = pf_js + 3 *", "const long long pf_jn = pf_js + 2 *"),    # refilled one iteration short
    ("xv + (pf_jn < hi ? pf_jn : 0), pf_jn < hi);", "xv + (pf_jn <= hi ? pf_jn : 0), pf_jn <= hi);"),  # the twin's
])                                                                               # last, partial vector copied whole
def test_the_row_rings_off_by_ones_are_caught(line, mutant):
    # 1 row of 4093 floats: the any twin, 16 vectors a thread of 64, the last one partial and past x's end
    sched = row_sched(softmax, "online", ("shared", "rolling", 0))
    _caught(softmax, sched, softmax.problem({"rows": 1, "cols": 4093}), line, mutant)


@pytest.mark.emulate
@pytest.mark.parametrize("line, mutant", [
    ("pf_A_v[pf_s] = pf_js < nv ?", "pf_A_v[pf_s] = pf_js <= nv ?"),             # a batch load one vector past the row
    ("pf_j += 3 * 32) {", "pf_j += 2 * 32) {"),                                  # batches that overlap by one
])
def test_gemvs_batch_off_by_ones_are_caught(line, mutant):
    sched = gemv_sched(("registers", "batch", 0), threads=32, lanes=32)
    # 232 vectors: 7 or 8 a lane, batches of 3, lane 8 has one that holds vector 232; the row ends where A does
    _caught(gemv, sched, gemv.problem({"M": 1, "N": 4 * 232}), line, mutant)


# -- GPU -------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
def test_row_passes_on_the_gpu(form):
    for name, algos in STREAMING.items():
        op = get_op(name)
        for algo in algos:
            for dtype, vec in (("float32", 4), ("float16", 8), ("bfloat16", 1)):
                s = row_sched(op, algo, form, vec, threads=256, distance=8)
                for sizes in ({"rows": 1, "cols": 1}, {"rows": 37, "cols": 1001}, {"rows": 64, "cols": 65539}):
                    v = validate(op, s, op.problem(sizes, dtype=dtype), backend="gpu")
                    assert v.ok, (name, algo, sizes, dtype, v.summary())


@pytest.mark.gpu
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
def test_gemv_on_the_gpu(form):
    for dtype, vec in (("float32", 4), ("float16", 8), ("bfloat16", 1)):
        for threads, lanes, g in ((1024, 1024, 0), (512, 512, 1), (256, 32, 0)):
            d = 8 if form[0] == "registers" or threads < 1024 else 4
            s = gemv_sched(form, vec=vec, threads=threads, lanes=lanes, distance=d, grid_stride=g)
            for sizes in ({"M": 1, "N": 1}, {"M": 133, "N": 1001}, {"M": 1000, "N": 8192}):
                v = validate(gemv, s, gemv.problem(sizes, dtype=dtype), backend="gpu")
                assert v.ok, (threads, lanes, sizes, dtype, v.summary())
