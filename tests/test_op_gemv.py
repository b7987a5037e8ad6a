"""What is specific to gemv: how lanes/rows per warp read from the schedule, rows shared by several
warps (a block reduction), legality messages, the aligned/unaligned kernel choice, SASS facts (128-bit
loads where vectorised, 32 registers by default), and rows of every alignment on the emulator/GPU."""
import importlib.util

import numpy as np
import pytest

from kernelgen import get_op, render, schedule
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.validate import validate

op = get_op("gemv")
STEPS = op.ladder()


NO_PREFETCH = dict(prefetch=0, prefetch_scope="registers", prefetch_mode="batch", prefetch_pad=0, prefetch_slots="interleaved")

def facts(sched, symbol=None):
    k = op.kernel(sched)
    found = {f.symbol: f for f in facts_of(compile_cuda(render(k), "sm_90", k.name))}
    return found[symbol or k.name]


# -- schedules and knobs --------------------------------------------------------------------------
def test_rows_per_warp_and_lanes_per_row_fill_a_warp():
    s = op.schedule(lanes=8, vec=2, unroll=4, threads=128)
    assert s.steps[0].factors == (16, 4)            # 4 warps x 4 rows of 8 lanes
    assert s.steps[4].factors == (64, 16, 2)        # 4 loads x 8 lanes x float2
    assert op.knobs_from_schedule(s) == dict(threads=128, lanes=8, vec=2, unroll=4, grid_stride=0, **NO_PREFETCH)


def test_rows_over_several_warps_are_a_2d_block():
    s = op.schedule(threads=512, lanes=256, vec=4, unroll=8)
    assert s.steps[0].factors == (2,)               # 2 rows per block, i.1 = threadIdx.y
    assert s.steps[3].factors == (8192, 1024, 4)    # 8 loads x 256 threads x float4
    assert ("j.2", "threadIdx.x") in [(st.target, getattr(st, "axis", None)) for st in s.steps]
    assert op.knobs_from_schedule(s) == dict(threads=512, lanes=256, vec=4, unroll=8, grid_stride=0, **NO_PREFETCH)
    k = op.kernel(s)
    assert k.static_smem == 4 * 16                  # one partial sum per warp
    plan = op.plan(k, op.problem({"M": 7, "N": 9}))
    assert plan.launches[0].grid == (4, 1, 1) and plan.launches[0].block == (256, 2, 1)


def test_ladder_follows_the_seed_notes():
    knobs = [op.knobs_from_schedule(s.schedule) for s in STEPS]
    assert [k["lanes"] for k in knobs[:3]] == [1, 32, 8]       # thread/row, warp/row, rows per warp
    assert knobs[-1]["lanes"] > 32                              # then several warps per row
    assert knobs[3]["vec"] == 4 and STEPS[-1].schedule == op.default_schedule()


@pytest.mark.parametrize("change,message", [
    (dict(lanes=3), r"knob lanes=3 is not one of its choices \(allowed: 1, 2, 4, 8, 16, 32, 64"),
    (dict(threads=48), r"knob threads=48 is not one of its choices \(allowed: 32, 64, 128"),
    (dict(threads=96), r"knob threads=96 is not one of its choices"),
    (dict(threads=2048), r"knob threads=2048 .*allowed: .*512, 1024\)"),
    (dict(unroll=32), r"knob unroll=32 is outside its range \(allowed: an integer in 1..16\)"),
    (dict(lanes=48, threads=256), r"knob lanes=48 is not one of its choices"),
    (dict(lanes=512, threads=256), r"split\(j.2\): 512 .*divide the block's 256 threads"),
    (dict(lanes=64, threads=32), r"split\(j.2\): 64 .*divide the block's 32 threads"),
    (dict(lanes=96, threads=192), r"knob lanes=96 is not one of its choices"),
])
def test_illegal_knobs_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        op.kernel(op.schedule(**change))


def test_illegal_steps_are_rejected():
    base = (schedule("gemv").split("i", 8, 1).bind("i.0", "blockIdx.x").bind("i.1", "warp").bind("i.2", "lane")
            .split("j", 256, 128, 4).bind("j.2", "lane").unroll("j.1").vectorize("j.3", 4))
    with pytest.raises(ScheduleError, match="32 lane"):           # 32 lanes need a shuffle reduction
        op.kernel(base)
    with pytest.raises(ScheduleError, match="innermost factor is 4"):
        op.kernel(schedule("gemv").split("j", 256, 128, 4).vectorize("j.3", 2).reduction("j", "shuffle"))
    with pytest.raises(ScheduleError, match="allowed: 1, 2, 4"):
        op.kernel(schedule("gemv").split("j", 256, 256, 8).vectorize("j.3", 8).reduction("j", "shuffle"))
    with pytest.raises(ScheduleError, match="must be 32"):
        op.kernel(schedule("gemv").split("i", 8, 2).split("j", 32, 32, 1).reduction("j", "shuffle"))
    with pytest.raises(ScheduleError, match=r"split\(i\): 96 is illegal \(limit: knob threads of gemv"):
        op.kernel(schedule("gemv").split("i", 3, 1).split("j", 32, 32, 1).reduction("j", "shuffle"))
    with pytest.raises(ScheduleError, match="no use for this step"):
        op.kernel(op.default_schedule().cache_read("x", "shared"))


def test_illegal_block_rows_are_rejected():
    ok = op.schedule(threads=256, lanes=128)
    steps = {st.target: i for i, st in enumerate(ok.steps) if st.prim in ("split", "bind")}

    def with_step(target, new):
        return type(ok)(ok.op, tuple(new if i == steps[target] else st for i, st in enumerate(ok.steps)))

    warp_bound = (schedule("gemv").split("i", 8, 1).split("j", 256, 256, 4).bind("j.2", "lane")
                  .vectorize("j.3", 4).reduction("j", "shuffle"))
    with pytest.raises(ScheduleError, match=r"bind\(j.2\): 'lane with 64 threads per row'.*span 2 warps.*threadIdx.x"):
        op.kernel(warp_bound)
    thread_bound = schedule("gemv").split("j", 128, 128, 4).bind("j.2", "threadIdx.x").vectorize("j.3", 4)
    with pytest.raises(ScheduleError, match=r"bind\(j.2\): 'threadIdx.x with 32 threads per row'.*allowed: 64"):
        op.kernel(thread_bound.reduction("j", "shuffle"))
    with pytest.raises(ScheduleError, match=r"reduction\(j\).*allowed: shuffle"):
        op.kernel(schedule("gemv").split("j", 256, 256, 4).bind("j.2", "threadIdx.x").vectorize("j.3", 4))
    with pytest.raises(ScheduleError, match=r"split\(i\).*1 factor"):
        op.kernel(with_step("i", schedule("gemv").split("i", 16, 8).steps[0]))
    with pytest.raises(ScheduleError, match=r"bind\(i.1\): 'warp'.*allowed: threadIdx.y"):
        op.kernel(with_step("i.1", schedule("gemv").bind("i.1", "warp").steps[0]))
    with pytest.raises(ScheduleError, match=r'loop .i.2. does not exist: split\("i", \d+\) makes i.0, i.1'):
        op.kernel(ok.bind("i.2", "lane"))


def test_heuristic_spreads_a_row_over_as_many_threads_as_it_has_float4_pairs():
    lanes = {n: op.knobs_from_schedule(op.schedule_for(op.problem({"M": 100, "N": n})))["lanes"]
             for n in (3, 64, 1024, 4096, 8192, 100000)}
    assert lanes == {3: 1, 64: 8, 1024: 128, 4096: 512, 8192: 1024, 100000: 1024}
    assert op.schedule_for(op.problem()) == op.default_schedule()


def test_plan_picks_the_aligned_kernel_only_when_rows_are():
    k = op.kernel(op.default_schedule())
    assert op.plan(k, op.problem({"M": 10, "N": 1024})).launches[0].symbol == k.name
    assert op.plan(k, op.problem({"M": 10, "N": 1001})).launches[0].symbol == k.name + "_unaligned"
    plan = op.plan(k, op.problem({"M": 8193, "N": 64}))                     # a block of 1024 threads per row
    assert plan.launches[0].grid == (8193, 1, 1) and plan.launches[0].block == (1024, 1, 1)
    assert dict(plan.alignment) == {"A": 16, "x": 16}
    plan = op.plan(op.kernel(op.schedule(threads=256, lanes=32)), op.problem({"M": 8193, "N": 64}))
    assert plan.launches[0].grid == (1025, 1, 1) and plan.launches[0].block == (256, 1, 1)


# -- SASS ------------------------------------------------------------------------------------------
@pytest.mark.nvrtc
def test_vectorised_steps_load_128_bits_and_the_others_do_not():
    for step in STEPS:
        vec = op.knobs_from_schedule(step.schedule)["vec"]
        f = facts(step.schedule)
        assert f.spill_bytes == 0, step.title
        assert (f.ldg128 > 0) == (vec == 4), (step.title, f.ldg128)


@pytest.mark.nvrtc
def test_default_kernel_fits_64_warps_per_sm():
    # 32 registers: 2 blocks of 1024 threads (a row each) per SM, 64 warps.
    f = facts(op.default_schedule())
    assert f.registers <= 32 and f.spill_bytes == 0 and f.ldg128 > 0


# -- numbers ---------------------------------------------------------------------------------------
def test_reference_is_a_float64_matrix_vector_product():
    p = op.problem({"M": 3, "N": 5})
    inputs = op.make_inputs(p, np.random.default_rng(0))
    y = op.reference(inputs, p)["y"]
    assert y.dtype == np.float64
    assert np.allclose(y, [sum(float(inputs["A"][i, j]) * float(inputs["x"][j]) for j in range(5)) for i in range(3)])


@pytest.mark.emulate
@pytest.mark.parametrize("knobs", [dict(lanes=4, vec=4, unroll=8, threads=256),
                                   dict(lanes=16, vec=2, unroll=1, threads=256),
                                   dict(lanes=1, vec=4, unroll=2, threads=64)])
def test_other_layouts_are_correct_on_the_emulator(knobs):
    for sizes in op.test_problems():
        v = validate(op, op.schedule(**knobs), op.problem(sizes), backend="emulate")
        assert v.ok, (knobs, sizes, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("knobs, rows", [(dict(threads=256, lanes=64, grid_stride=1), 1000),
                                         (dict(threads=256, lanes=32, grid_stride=1), 1100)])
def test_grid_stride_blocks_come_round_to_a_second_group_on_the_emulator(knobs, rows):
    # 1000 rows in groups of 4 over one block per SM: each block reduces a second group through the
    # same shared words, so a missing barrier between groups is a race the checker sees. 1100 rows in
    # groups of 8 (a warp a row, no shared words): the warps' loop over groups comes round too
    v = validate(op, op.schedule(**knobs), op.problem({"M": rows, "N": 33}), backend="emulate", order="reverse")
    assert v.ok, v.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("knobs", [dict(threads=64, lanes=64, vec=4, unroll=1),
                                   dict(threads=512, lanes=128, vec=4, unroll=8),
                                   dict(threads=1024, lanes=1024, vec=2, unroll=2),
                                   dict(threads=256, lanes=64, vec=1, unroll=4, grid_stride=2)])
def test_rows_over_several_warps_are_correct_and_race_free_on_the_emulator(knobs):
    # Tiny N (most threads of a row idle), N % 4 != 0 (scalar heads), M not a multiple of the rows per
    # block (whole rows of the block idle but still reach the barrier); random thread order exposes a
    # missing barrier around the warps' partial sums.
    for sizes in op.test_problems() + ({"M": 37, "N": 5003},):
        v = validate(op, op.schedule(**knobs), op.problem(sizes), backend="emulate", check=True, order="random")
        assert v.ok, (knobs, sizes, v.summary())


@pytest.mark.emulate
def test_heuristic_schedules_are_correct_on_the_emulator():
    for sizes in op.test_problems():
        problem = op.problem(sizes)
        v = validate(op, op.schedule_for(problem), problem, backend="emulate")
        assert v.ok, (sizes, v.summary())


def test_example_ladder_mirrors_the_op():
    spec = importlib.util.spec_from_file_location("ex", "examples/gemv_ladder.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    assert list(ex.LADDER.values()) == [s.schedule for s in STEPS]


@pytest.mark.emulate
@pytest.mark.parametrize("sizes", [{"M": 3001, "N": 37}, {"M": 2113, "N": 64}])
def test_grid_stride_blocks_loop_over_row_groups(sizes):
    from kernelgen.validate import validate
    problem = op.problem(sizes)
    sched = op.schedule(grid_stride=1, unroll=4, threads=256, lanes=32)
    plan = op.plan(op.kernel(sched), problem)
    assert plan.launches[0].grid[0] == 132 < -(-sizes["M"] // 8)   # fewer blocks than row groups: they loop
    v = validate(op, sched, problem, backend="emulate", check=True, order="random")
    assert v.ok, v.summary()
