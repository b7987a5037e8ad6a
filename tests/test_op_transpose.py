"""What is specific to transpose: the schedule shape, legality messages, the 1-D tile grid and its
diagonal order, SASS facts (float4 steps load and store 128 bits, nothing spills, 32 registers by
default) and edge sizes on the emulator."""
import numpy as np
import pytest

from kernelgen import get_op, render, schedule
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.validate import validate

op = get_op("transpose")
STEPS = op.ladder()


def facts(sched):
    k = op.kernel(sched)
    return {f.symbol: f for f in facts_of(compile_cuda(render(k), "sm_90", k.name))}[k.name]


def test_ladder_adds_one_primitive_per_step():
    knobs = [op.knobs_from_schedule(s.schedule) for s in STEPS]
    assert [k["staged"] for k in knobs] == [False, True, True, True, True]
    assert [k["pad"] for k in knobs] == [0, 0, 1, 1, 1]
    assert knobs[3]["order"] == "diagonal" and knobs[4]["vec"] == 4
    assert STEPS[-1].schedule == op.default_schedule()


def test_example_ladder_is_the_ops_ladder():
    import importlib.util
    spec = importlib.util.spec_from_file_location("ex", "examples/transpose_ladder.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    assert list(ex.LADDER.values()) == [s.schedule for s in STEPS]


@pytest.mark.parametrize("change,message", [
    (dict(vec=4, staged=False, pad=0), "needs cache_read"),
    (dict(tile=64, rows=32, vec=1), "threads > 1024"),
    (dict(tile=32, rows=64), "dividing the tile"),
    (dict(tile=128), r"knob tile=128 is not one of its choices \(allowed: 16, 32, 64\)"),
    (dict(staged=False, pad=1), r"knob pad=1 has no effect with staged=False \(it applies with staged True\)"),
])
def test_illegal_knobs_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        op.kernel(op.schedule(**change))


def test_illegal_steps_are_rejected():
    with pytest.raises(ScheduleError, match=r"storage_align\(x\): 1 .*knob pad applies only with staged True"):
        op.kernel(op.schedule(staged=False, vec=1, pad=0).storage_align("x", 1))
    with pytest.raises(ScheduleError, match="square tiles"):
        op.kernel(schedule("transpose").split("i", 32, 8).split("j", 64).fuse("i.0", "j.0"))
    with pytest.raises(ScheduleError, match="fuse"):
        op.kernel(schedule("transpose").split("i", 32, 8).split("j", 32))
    with pytest.raises(ScheduleError, match="no use for this step"):
        op.kernel(op.default_schedule().double_buffer("x"))
    with pytest.raises(ScheduleError, match="allowed: row, diagonal"):
        op.kernel(op.default_schedule().annotate("block_order", "zigzag"))


def test_empty_dimension_is_refused():
    with pytest.raises(UsageError, match="N=0"):
        op.problem({"M": 5, "N": 0})


def test_plan_is_a_one_dimensional_grid_over_tiles():
    k = op.kernel(op.default_schedule())
    plan = op.plan(k, op.problem({"M": 67, "N": 1001}))
    assert plan.launches[0].grid == (3 * 32, 1, 1) and plan.launches[0].block == (8, 8, 1)
    assert dict(plan.alignment) == {"x": 16, "out": 16}
    # more tile rows than gridDim.y could hold
    assert op.plan(k, op.problem({"M": 32 * 70000, "N": 1})).launches[0].grid == (70000, 1, 1)


def test_diagonal_order_visits_every_tile_once():
    # the template's mapping, in numpy: block b -> (by, bx)
    for ti, tj in ((3, 32), (32, 3), (5, 5), (1, 7)):
        b = np.arange(ti * tj)
        by = b % ti
        bx = (b // ti + by) % tj
        assert len(set(zip(by.tolist(), bx.tolist()))) == ti * tj


@pytest.mark.nvrtc
def test_float4_steps_move_128_bits_and_nothing_spills():
    for step in STEPS:
        vec = op.knobs_from_schedule(step.schedule)["vec"]
        f = facts(step.schedule)
        assert f.spill_bytes == 0 and f.local_ops == 0, step.title
        assert (f.ldg128 > 0 and f.stg128 > 0) == (vec == 4), (step.title, f.ldg128, f.stg128)


@pytest.mark.nvrtc
def test_default_fits_2048_threads_per_sm():
    # 64-thread blocks, 32 of them per SM: 65536 registers / 2048 threads = 32
    assert facts(op.default_schedule()).registers <= 32


@pytest.mark.emulate
@pytest.mark.parametrize("knobs", [dict(vec=2, rows=16), dict(tile=64, vec=4, rows=4), dict(tile=64, rows=16, vec=1),
                                   dict(vec=4, rows=32, order="diagonal"), dict(tile=16, rows=4, vec=1, staged=False),
                                   dict(grid_stride=1, order="diagonal"), dict(grid_stride=1, vec=1, pad=0)])
def test_other_layouts_are_correct_on_the_emulator(knobs):
    for sizes in op.test_problems():
        v = validate(op, op.schedule(**knobs), op.problem(sizes), backend="emulate")
        assert v.ok, (knobs, sizes, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("knobs", [dict(grid_stride=1), dict(grid_stride=1, order="diagonal", vec=1)])
def test_blocks_looping_over_tiles_are_correct_on_the_emulator(knobs):
    p = op.problem({"M": 1000, "N": 1004})             # 32 x 32 tiles > 132 blocks: each block loops
    assert op.plan(op.kernel(op.schedule(**knobs)), p).launches[0].grid == (132, 1, 1)
    v = validate(op, op.schedule(**knobs), p, backend="emulate", order="random")
    assert v.ok, v.summary()
