"""What is specific to staged_load: the seed's ladder (align -> fuse -> vectorize -> bind) as
schedules, legality messages, dynamic shared memory in the plan, SASS facts (the vectorised steps
read x with 128-bit loads) and short tail tiles on the emulator."""
import pytest

from kernelgen import get_op, render, schedule
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.validate import validate

op = get_op("staged_load")
STEPS = op.ladder()


def facts(sched):
    k = op.kernel(sched)
    return {f.symbol: f for f in facts_of(compile_cuda(render(k), "sm_90", k.name))}[k.name]


def test_ladder_follows_the_seed_notes():
    knobs = [op.knobs_from_schedule(s.schedule) for s in STEPS]
    assert [(k["pad"], k["fused"], k["vec"], k["threads"]) for k in knobs] == [
        (0, False, 1, 1), (1, False, 1, 1), (1, True, 1, 1), (1, True, 4, 1), (1, True, 4, 256)]
    assert all(k["rows"] == 1024 for k in knobs) and STEPS[-1].schedule == op.default_schedule()


def test_example_ladder_is_the_ops_ladder():
    import importlib.util
    spec = importlib.util.spec_from_file_location("ex", "examples/staged_load_ladder.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    assert list(ex.LADDER.values()) == [s.schedule for s in STEPS]


def test_illegal_schedules_say_why():
    tile = schedule("staged_load").split("j", 1024).bind("j.0", "blockIdx.x").cache_read("x", "shared")
    with pytest.raises(ScheduleError, match="after fuse"):            # vectorise before fusing
        op.kernel(tile.split("ij", 4, 4).vectorize("ij.2", 4))
    with pytest.raises(ScheduleError, match="need bind"):             # threads without binding
        op.kernel(tile.fuse("i", "j.1").split("ij", 256, 1))
    with pytest.raises(ScheduleError, match="allowed: 1, 4"):
        op.kernel(tile.fuse("i", "j.1").split("ij", 2, 2).vectorize("ij.2", 2))
    with pytest.raises(ScheduleError, match=r"knob threads=96 is not one of its choices \(allowed: 1, 32, 64"):
        op.kernel(op.schedule(threads=96))
    with pytest.raises(ScheduleError, match="shared memory"):         # 32 x 4097 floats > 227 KB
        op.kernel(schedule("staged_load").split("j", 4096).cache_read("x", "shared").storage_align("x", 1))
    with pytest.raises(ScheduleError, match="no use for this step"):
        op.kernel(op.default_schedule().swizzle(2))


def test_plan_launches_one_block_per_tile_with_dynamic_shared_memory():
    plan = op.plan(op.kernel(op.default_schedule()), op.problem({"n": 2500}))
    (launch,) = plan.launches
    assert launch.grid == (3, 1, 1) and launch.block == (256, 1, 1)
    assert launch.shared_bytes == 32 * 1025 * 4
    assert op.plan(op.kernel(STEPS[0].schedule), op.problem({"n": 2500})).launches[0].block == (1, 1, 1)


@pytest.mark.nvrtc
def test_vectorised_steps_read_128_bits():
    for step in STEPS:
        f = facts(step.schedule)
        assert f.spill_bytes == 0 and f.local_ops == 0, step.title
        assert (f.ldg128 > 0) == (op.knobs_from_schedule(step.schedule)["vec"] == 4), step.title


@pytest.mark.emulate
@pytest.mark.parametrize("knobs", [dict(rows=256, threads=128), dict(vec=1, threads=1024), dict(pad=0),
                                   dict(rows=32, threads=32, vec=1)])
def test_other_layouts_are_correct_on_the_emulator(knobs):
    for sizes in op.test_problems():
        v = validate(op, op.schedule(**knobs), op.problem(sizes), backend="emulate")
        assert v.ok, (knobs, sizes, v.summary())
