"""prefetch(buffer, distance, scope, mode): the seed notes' software prefetching in grid-stride loops
(reduce_sum, elementwise; the loops over a row of gemv, softmax and layer norm: tests/test_prefetch_rows.py). Plain Python (schedules, knobs, names, legality, plans, space), NVRTC (no
spills, cp.async in the shared forms), the emulator with the checker on (every form at awkward sizes,
the ring's classic off-by-ones caught, padding removing bank conflicts), and the ladder on a GPU."""
import importlib.util

import pytest

from kernelgen import get_op, schedule
from kernelgen.compile import compile_cuda
from kernelgen.errors import KnobError, ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.render import render
from kernelgen.schedule import Schedule
from kernelgen.target import target
from kernelgen.validate import validate

reduce_op = get_op("reduce_sum")
ew = get_op("elementwise")
STEPS = reduce_op.ladder()[-5:]                    # plain loop, batch registers, batch shared, rolling, padded
FORMS = [("registers", "batch", 0), ("registers", "rolling", 0), ("shared", "batch", 0), ("shared", "rolling", 0),
         ("shared", "rolling", 1)]


def knobs(scope, mode, pad, distance=3, **kw):
    k = dict(dict(items=1, grid_stride=1), prefetch=distance, prefetch_scope=scope, prefetch_mode=mode, **kw)
    return dict(k, prefetch_pad=pad) if scope == "shared" else k


# -- schedules, knobs, names ----------------------------------------------------------------------
def test_the_step_round_trips_and_reads_back_as_knobs():
    s = reduce_op.schedule(**knobs("shared", "rolling", 1, 8))
    assert Schedule.from_json(s.to_json()) == s
    assert 'prefetch("x", 8, "shared", "rolling").storage_align("x", 1)' in s.to_python()
    k = reduce_op.knobs_from_schedule(s)
    assert (k["prefetch"], k["prefetch_scope"], k["prefetch_mode"], k["prefetch_pad"]) == (8, "shared", "rolling", 1)
    # defaults: the scope and the mode may be left out
    assert schedule("reduce_sum").prefetch("x", 4).steps[-1].to_python() == 'prefetch("x", 4, "registers", "batch")'


def test_kernels_without_prefetch_keep_their_names():
    assert reduce_op.kernel(reduce_op.default_schedule()).name == "reduce_sum_f32_sm90_t512_i4_v4_sshuffle_g4_ftwopass"
    assert ew.kernel(ew.default_schedule()).name == "elementwise_f32_sm90_ece6842f3_ffull_t256_i1_v4_g0"
    names = {reduce_op.kernel(reduce_op.schedule(**knobs(*f))).name for f in FORMS}
    assert len(names) == len(FORMS) and all("_p3_ps" in n for n in names)


def test_elementwise_prefetches_every_matrix_input_alike():
    op = ew.with_expr("gelu(x + bias) * y")
    s = op.schedule(**knobs("registers", "rolling", 0))
    assert [st.buffer for st in s.steps if st.prim == "prefetch"] == ["x", "y"]      # not the bias vector
    one = Schedule(s.op, tuple(st for st in s.steps if not (st.prim == "prefetch" and st.buffer == "y")))
    with pytest.raises(ScheduleError, match=r"prefetch\(y\): 'missing' is illegal .*every input is prefetched alike"):
        op.knobs_from_schedule(one)


def test_the_example_ladder_is_the_end_of_reduce_sums():
    spec = importlib.util.spec_from_file_location("ex", "examples/prefetch_ladder.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    assert list(ex.LADDER.values()) == [s.schedule for s in STEPS]
    k = [reduce_op.knobs_from_schedule(s.schedule) for s in STEPS]
    assert all(x["grid_stride"] == 1 and x["items"] == 1 for x in k)                  # one block per SM
    assert [(x["prefetch"], x["prefetch_scope"], x["prefetch_mode"], x["prefetch_pad"]) for x in k] == [
        (0, "registers", "batch", 0), (8, "registers", "batch", 0), (8, "shared", "batch", 0),
        (8, "shared", "rolling", 0), (8, "shared", "rolling", 1)]


# -- legality: refused before any compile, one line with the numbers -------------------------------
@pytest.mark.parametrize("op_name", ["transpose", "sgemm", "attention", "conv2d"])
def test_ops_without_a_prefetched_loop_refuse_it_by_name(op_name):
    op = get_op(op_name)
    s = op.default_schedule().prefetch(op.inputs[0], 4)
    with pytest.raises(ScheduleError, match=rf"prefetch\({op.inputs[0]}\).*{op_name} has no grid-stride loop that "
                                            r"prefetch serves; allowed: ops reduce_sum, softmax, layernorm, gemv, "
                                            r"elementwise"):
        op.kernel(s)


@pytest.mark.parametrize("change, message", [
    (lambda s: s.prefetch("x", 0), r"prefetch\(x\): 0 is illegal .*at least 1 \(no prefetch: leave the step out\); allowed: 1..16"),
    (lambda s: s.prefetch("x", 17), r"prefetch\(x\): 17 is illegal .*allowed: 1..16"),
    (lambda s: s.prefetch("x", 4, "global"), r"prefetch\(x\): 'global' is illegal .*allowed: registers, shared"),
    (lambda s: s.prefetch("x", 4, "shared", "ring"), r"'ring' is illegal .*allowed: batch, rolling"),
    (lambda s: s.prefetch("y", 4), r"buffer 'y' does not exist in reduce_sum"),
    (lambda s: s.prefetch("x", 4).storage_align("x", 1), r"storage_align\(x\).*applies only with prefetch_scope shared"),
    (lambda s: s.prefetch("x", 4).prefetch("x", 2), r"given twice"),
])
def test_bad_prefetch_steps(change, message):
    base = reduce_op.schedule(items=1, grid_stride=1)
    with pytest.raises(ScheduleError, match=message):
        reduce_op.kernel(change(base))


def test_prefetch_needs_a_loop_of_one_vector_per_iteration():
    with pytest.raises(ScheduleError, match=r"prefetch\(x\): 4 is illegal .*grid_stride, 1 or more\), not 0"):
        reduce_op.kernel(reduce_op.schedule(items=1, grid_stride=0, prefetch=4))
    with pytest.raises(ScheduleError, match=r"split i with items 1, not 4"):
        reduce_op.kernel(reduce_op.schedule(items=4, prefetch=4))
    with pytest.raises(ScheduleError, match=r"prefetch\(a\).*grid_stride"):
        ew.kernel(ew.schedule(prefetch=2))                          # elementwise's default: one block per chunk


def test_shared_slots_over_the_targets_limit_are_refused_with_the_numbers():
    s = reduce_op.schedule(**knobs("shared", "rolling", 1, 16, threads=1024))
    with pytest.raises(ScheduleError, match=r"prefetch\(x\): '264192 bytes' is illegal \(limit: 16 slots x \(1024 "
                                            r"threads \+ 1 pad lines\) x 16 bytes .*> 232448 bytes .* on sm_90"):
        reduce_op.kernel(s)
    with pytest.raises(ScheduleError, match=r"prefetch\(x\): '278528 bytes' is illegal \(limit: \(16 \+ 1 pad\) "
                                            r"vectors x 1024 threads x 16 bytes .*> 232448 bytes .* on sm_90"):
        reduce_op.kernel(reduce_op.schedule(**dict(knobs("shared", "rolling", 1, 16, threads=1024), prefetch_slots="thread")))
    with pytest.raises(ScheduleError, match=r"> 101376 bytes of shared memory per block on sm_86"):
        reduce_op.kernel(reduce_op.schedule(**knobs("shared", "batch", 1, 8, threads=1024)), target("sm_86"))
    reduce_op.kernel(reduce_op.schedule(**knobs("registers", "batch", 0, 16, threads=1024)))   # no shared slots
    with pytest.raises(KnobError, match="prefetch=17 is outside its range"):
        reduce_op.schedule(prefetch=17)


# -- plans, recipes and the space ------------------------------------------------------------------
def test_shared_slots_are_the_partial_passs_dynamic_shared_memory():
    k = reduce_op.kernel(STEPS[-1].schedule)
    p = reduce_op.plan(k, reduce_op.problem({"n": 1 << 24}), target())
    assert [(l.symbol.rsplit("_", 1)[1], l.shared_bytes, l.grid[0]) for l in p.launches] == [
        ("partial", 8 * 520 * 16, 132), ("final", 0, 1)]          # 8 rows of 512 threads' float4s + a 128-byte line
    assert [s.shared_bytes for s in reduce_op.recipe(k).steps] == [8 * 520 * 16] * 2 + [0]
    e = ew.with_expr("a * bias + b")
    k = e.kernel(e.schedule(**knobs("shared", "batch", 1, 4, vec=4, grid_stride=2)))
    (launch,) = e.plan(k, e.problem({"M": 64, "N": 64}), target()).launches
    assert launch.shared_bytes == 2 * 4 * 264 * 16                 # a and b, not the bias vector


def test_the_space_holds_each_form_where_it_is_legal():
    space = list(reduce_op.space(reduce_op.problem({"n": 1 << 20}), target()))
    on = [k for k in space if k["prefetch"]]
    assert len(space) == 288 and len(on) == 192
    assert {(k["prefetch"], k["prefetch_scope"], k["prefetch_mode"]) for k in on} == {
        (d, s, m) for d in (4, 8) for s in ("registers", "shared") for m in ("batch", "rolling")}
    assert all(k["items"] == 1 and k["grid_stride"] >= 1 for k in on)
    assert all(k["prefetch_pad"] == 0 and k["prefetch_slots"] == "interleaved" for k in on if k["prefetch_scope"] == "shared")
    assert all(k["prefetch_scope"] == "registers" and k["prefetch_pad"] == 0 for k in space if not k["prefetch"])
    assert len(list(ew.space(ew.problem(), target()))) == 108


# -- NVRTC -----------------------------------------------------------------------------------------
@pytest.mark.nvrtc
@pytest.mark.parametrize("step", range(len(STEPS)), ids=lambda i: f"step{i + 1}")
def test_ladder_compiles_without_spills_and_the_shared_forms_use_cp_async(step):
    k = reduce_op.kernel(STEPS[step].schedule)
    compiled = compile_cuda(render(k), "sm_90", k.name)
    (f,) = [x for x in facts_of(compiled) if x.symbol.endswith("_partial")]
    assert f.spill_bytes == 0 and f.local_bytes == 0 and f.ldg128 > 0
    scope = reduce_op.knobs_from_schedule(STEPS[step].schedule)["prefetch_scope"]
    prefetched = reduce_op.knobs_from_schedule(STEPS[step].schedule)["prefetch"]
    assert ("LDGSTS" in _sass(compiled, f.symbol)) == (prefetched > 0 and scope == "shared")


def _sass(compiled, symbol):
    from kernelgen.inspect import _functions
    return "\n".join(_functions(compiled.cubin)[symbol])


@pytest.mark.nvrtc
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
def test_elementwise_forms_compile_for_old_and_new_archs(form):
    op = ew.with_expr("gelu(x + bias) * y")
    for arch, dtype in (("sm_90", "float32"), ("sm_75", "float16"), ("sm_80", "bfloat16")):
        k = op.kernel(op.schedule(**knobs(*form), vec=4), target(arch), op.types(dtype))
        assert all(f.spill_bytes == 0 for f in facts_of(compile_cuda(render(k), arch, k.name)))


# -- the emulator, checker on ----------------------------------------------------------------------
# n: one element; fewer than a block; counts per thread 1..3 (64 threads x 132 blocks), none a multiple
# of the distance 3 for every thread; a float4 tail.
SIZES = (1, 3, 4097, 30001, 100003)


@pytest.mark.emulate
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
@pytest.mark.parametrize("dtype,vec", [("float32", 4), ("float32", 1), ("float16", 8), ("bfloat16", 1)])
def test_reduce_forms_on_the_emulator_at_awkward_sizes(form, dtype, vec):
    s = reduce_op.schedule(**knobs(*form), threads=64, vec=vec)
    for n in SIZES:
        v = validate(reduce_op, s, reduce_op.problem({"n": n}, dtype=dtype), backend="emulate")
        assert v.ok, (n, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
@pytest.mark.parametrize("expr,fusion", [("gelu(x + bias) * y", "full"), ("relu(a * b + c)", "none")])
def test_elementwise_forms_on_the_emulator_at_awkward_sizes(form, expr, fusion):
    op = ew.with_expr(expr)
    for dtype, vec in (("float32", 4), ("bfloat16", 2)):
        s = op.schedule(**knobs(*form), threads=64, vec=vec, fusion=fusion)
        # ... and 131 x 1301: 5 or 6 iterations a thread at float4, more than the distance, so the ring's
        # refills and a second batch are used (a refill one iteration short escaped the smaller sizes)
        for sizes in ({"M": 1, "N": 1}, {"M": 9, "N": 2}, {"M": 37, "N": 1001}, {"M": 130, "N": 257}, {"M": 131, "N": 1301}):
            v = validate(op, s, op.problem(sizes, dtype=dtype), backend="emulate")
            assert v.ok, (sizes, dtype, v.summary())


@pytest.mark.emulate
def test_the_ladder_on_the_emulator_in_reverse_thread_order():
    for step in STEPS:
        for n in (1, 1000003):
            v = validate(reduce_op, step.schedule, reduce_op.problem({"n": n}), backend="emulate", order="reverse")
            assert v.ok, (step.title, n, v.summary())


@pytest.mark.emulate
def test_shared_slots_without_cp_async_go_through_registers():
    for form in FORMS[2:]:
        s = reduce_op.schedule(**knobs(*form), threads=64)
        assert "kg_cp_async16_zfill(&" not in render(reduce_op.kernel(s, target("sm_75")))
        assert "kg_cp_async16_zfill(&" in render(reduce_op.kernel(s, target("sm_90")))
        v = validate(reduce_op, s, reduce_op.problem({"n": 30001}), backend="emulate", arch="sm_75")
        assert v.ok, v.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("n, line, mutant", [
    (304623, "kg_cp_async_wait<7>();", "kg_cp_async_wait<8>();"),            # the ring waits for one group too few
    (304624, "(pf_jn < nvec ? pf_jn : 0), pf_jn < nvec);", "(pf_jn <= nvec ? pf_jn : 0), pf_jn <= nvec);"),   # a refill one vector past the end
    (304623, "for (int pf_r = 0; pf_r < 8; ++pf_r)", "for (int pf_r = 0; pf_r < 7; ++pf_r)"),  # a ring one slot short
    (304623, "const long long pf_jn = pf_js + 8 *", "const long long pf_jn = pf_js + 7 *"),  # refilled one iteration short
])
def test_the_rings_off_by_ones_are_caught(n, line, mutant):
    from kernelgen.errors import KernelgenError
    sched = reduce_op.schedule(**knobs("shared", "rolling", 0, 8, threads=64))
    src = render(reduce_op.kernel(sched))
    assert src.count(line) == 1
    problem = reduce_op.problem({"n": n})          # 10 or 11 iterations a thread (132 blocks x 64 threads x float4)
    assert validate(reduce_op, sched, problem, backend="emulate").ok
    try:
        v = validate(reduce_op, sched, problem, backend="emulate", mutate=lambda s: s.replace(line, mutant))
    except KernelgenError as e:                    # the checker's report: a read before the copy landed, out of bounds
        assert "cp.async" in str(e) or "out-of-bounds" in str(e), e
    else:
        assert not v.ok, v.summary()


@pytest.mark.emulate
def test_padding_the_slots_removes_the_bank_conflicts():
    from kernelgen.emulate.traffic import profile
    problem = reduce_op.problem({"n": 132 * 512 * 4 * 8})          # every thread 8 whole iterations
    def slot_loads(sched):
        (stat,) = [s for s in profile(reduce_op, sched, problem).stats
                   if s.space == "shared" and s.access == "load" and s.name.startswith("extern")]
        return stat
    def side_by_side(step):                                        # the seed note's layout
        return reduce_op.schedule_from_knobs(**dict(reduce_op.knobs_from_schedule(step.schedule), prefetch_slots="thread"))
    plain, padded = (slot_loads(side_by_side(s)) for s in STEPS[3:5])
    assert plain.ways == 8 and padded.ways == 1                    # 8 float4s a thread: 8 lanes of a phase in one bank group
    assert all(slot_loads(s.schedule).ways == 1 for s in STEPS[2:5])   # interleaved: conflict-free, padded or not


# -- GPU -------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("step", range(len(STEPS)), ids=lambda i: f"step{i + 1}")
@pytest.mark.parametrize("grid_stride", [1, 4])                    # one block per SM; 2048 threads an SM
def test_ladder_on_the_gpu(step, grid_stride):
    from kernelgen.ops.prefetch import fit_distance
    from kernelgen.validate import target_for
    k = dict(reduce_op.knobs_from_schedule(STEPS[step].schedule), grid_stride=grid_stride)
    if k["prefetch"] and grid_stride > 1:        # the slots shortened until the blocks promised fit (as bench does)
        k["prefetch"] = fit_distance(k, target_for("gpu", None), k["threads"], [16], 4 * k["threads"], grid_stride)
    sched = reduce_op.schedule_from_knobs(**k)
    for n in (1, 3, 4097, 1000003, (1 << 24) + 5):
        for dtype in ("float32", "float16"):
            k = dict(reduce_op.knobs_from_schedule(sched), vec=4 if dtype == "float32" else 8)
            v = validate(reduce_op, reduce_op.schedule_from_knobs(**k), reduce_op.problem({"n": n}, dtype=dtype),
                         backend="gpu")
            assert v.ok, (n, dtype, v.summary())


@pytest.mark.gpu
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f)))
def test_elementwise_forms_on_the_gpu(form):
    op = ew.with_expr("gelu(x + bias) * y")
    for dtype, vec in (("float32", 4), ("bfloat16", 8), ("float16", 1)):
        s = op.schedule(**knobs(*form, distance=8, threads=256, vec=vec, grid_stride=2))
        for sizes in ({"M": 1, "N": 1}, {"M": 37, "N": 1001}, {"M": 4099, "N": 4097}):
            v = validate(op, s, op.problem(sizes, dtype=dtype), backend="gpu")
            assert v.ok, (sizes, dtype, v.summary())


def test_full_occupancy_shortens_the_shared_slots_until_the_blocks_fit():
    from kernelgen.ops.prefetch import fit_distance
    h100 = target("sm_90")
    shared = dict(prefetch=8, prefetch_scope="shared", prefetch_pad=1, prefetch_slots="thread")
    # 512 threads x float4, 2 KB of block sums: 4 blocks of (4 + 1) slots fit 228 KB, (6 + 1) do not; odd kept
    assert fit_distance(shared, h100, 512, [16], 2048, 4) == 4
    assert fit_distance(dict(shared, prefetch_pad=0), h100, 512, [16], 2048, 4) == 6
    assert fit_distance(shared, h100, 512, [16], 2048, 1) == 8                  # one block: the distance asked
    # interleaved: 6 rows of (512 + 1) float4s fit 4 blocks, 7 do not; no odd rule (conflict-free as they are)
    assert fit_distance(dict(shared, prefetch_slots="interleaved"), h100, 512, [16], 2048, 4) == 6
    # register slots: 32 registers a thread at 4 blocks of 512, 16 of them the loop's: 4 float4s
    registers = dict(shared, prefetch_scope="registers")
    assert fit_distance(registers, h100, 512, [16], 2048, 4) == 4
    assert fit_distance(registers, h100, 512, [16], 2048, 1) == 8
    assert fit_distance(registers, h100, 512, [16, 16], 2048, 4) == 2
    assert fit_distance(shared, h100, 1024, [16, 16], 4096, 2) == 2             # two buffers' slots
    assert fit_distance(shared, h100, 1024, [16] * 8, 4096, 2) == 0             # none fits
