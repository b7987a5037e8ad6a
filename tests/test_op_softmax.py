"""What is specific to softmax: how the algorithm is read from the schedule, legality messages, the
plans (any-alignment twin for odd column counts, the split's launch pairs and workspace), SASS facts
(128-bit accesses where vectorised, registers of the row-in-registers kernels), numerical stability
and the layouts the tuner searches, on the emulator."""
import numpy as np
import pytest

from kernelgen import get_op, render, schedule
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.target import Target, target
from kernelgen.validate import validate

op = get_op("softmax")
STEPS = op.ladder()


def facts(sched):
    k = op.kernel(sched)
    return {f.symbol: f for f in facts_of(compile_cuda(render(k), "sm_90", k.name))}, k.name


# -- schedules and knobs --------------------------------------------------------------------------
def test_algorithm_is_read_from_the_primitives():
    assert op.knobs_from_schedule(op.schedule(algo="registers")).get("algo") == "registers"
    assert any(s.prim == "cache_read" for s in op.schedule(algo="registers").steps)
    split = op.schedule(algo="split", l2_batch_mb=8)
    assert [(s.prim, s.target) for s in split.steps][-2:] == [("bind", "j.0"), ("annotate", "l2_batch_mb")]
    assert op.knobs_from_schedule(split)["l2_batch_mb"] == 8


def test_ladder_follows_the_seed_notes():
    knobs = [op.knobs_from_schedule(s.schedule) for s in STEPS]
    assert [k["algo"] for k in knobs] == ["three_pass"] * 3 + ["online"] * 2 + ["registers", "split"]
    assert [k["reduction"] for k in knobs[:3]] == ["serial", "shared", "shuffle"]
    assert knobs[0]["threads"] == 1 and knobs[4]["vec"] == 4


@pytest.mark.parametrize("change,message", [
    (dict(threads=48), r"knob threads=48 is not one of its choices \(allowed: 1, 2, 4, 8"),
    (dict(items=33), r"knob items=33 is outside its range \(allowed: an integer in 1..32\)"),
    (dict(threads=256, rows_per_block=2), "one row per block"),
    (dict(threads=8, rows_per_block=2), "whole warps"),
    (dict(threads=256, reduction="serial"), "allowed: shared, shuffle"),
    (dict(threads=1024, items=16), "40 floats per thread in registers with 1024 threads"),
    (dict(threads=16, rows_per_block=4, algo="split"), "threads per row >= 32"),
])
def test_illegal_knobs_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        op.kernel(op.schedule(**change))


def test_illegal_steps_are_rejected():
    with pytest.raises(ScheduleError, match=r"annotate\(l2_batch_mb\): 8 .*applies only with algo split, not algo=online"):
        op.kernel(op.schedule(algo="online").annotate("l2_batch_mb", 8))
    with pytest.raises(ScheduleError, match=r"annotate\(l2_batch_mb\): 12 .*knob l2_batch_mb of softmax; allowed: 0, 8, 16, 32"):
        op.kernel(op.schedule(algo="split").annotate("l2_batch_mb", 12))
    with pytest.raises(ScheduleError, match="reads x once"):
        op.kernel(op.schedule(algo="registers").annotate("softmax", "online"))
    with pytest.raises(ScheduleError, match="allowed: 1, 4"):
        op.kernel(schedule("softmax").split("j", 1024, 512, 2).vectorize("j.3", 2))
    with pytest.raises(ScheduleError, match="no use for this step"):
        op.kernel(op.default_schedule().cache_read("y", "shared"))


# -- plans -----------------------------------------------------------------------------------------
def test_a_row_that_does_not_fit_the_registers_names_the_limit():
    k = op.kernel(op.default_schedule())
    with pytest.raises(ScheduleError, match="cols <= items\\*threads\\*vec = 4096"):
        op.plan(k, op.problem({"rows": 2, "cols": 4097}))


def test_empty_dimensions_fail_before_any_compile():
    with pytest.raises(UsageError, match="cols=0"):
        op.problem({"rows": 4, "cols": 0})


def test_plan_takes_the_any_alignment_twin_for_odd_columns():
    k = op.kernel(op.schedule(threads=32, rows_per_block=8, items=4))
    p = op.plan(k, op.problem({"rows": 100, "cols": 512}))
    assert p.launches[0].symbol == k.name and dict(p.alignment)["x"] == 16
    assert p.launches[0].grid == (13, 1, 1) and p.launches[0].block == (32, 8, 1)
    p = op.plan(k, op.problem({"rows": 100, "cols": 510}))
    # rows start anywhere in a float4: the twin reads them as float4s from the aligned address below
    assert p.launches[0].symbol == k.name + "_anyalign" and dict(p.alignment) == {"x": 16, "y": 16}


def test_split_plan_runs_stats_then_write_per_batch_of_rows():
    k = op.kernel(op.schedule(threads=256, items=4, algo="split", l2_batch_mb=16))
    p = op.plan(k, op.problem({"rows": 1024, "cols": 32768}))
    # 4096 columns per block -> 8 blocks per row; 16 MB = 128 rows of 128 KB per launch pair
    assert len(p.launches) == 16 and p.launches[0].grid == (128, 8, 1)
    assert [l.symbol.rsplit("_", 1)[-1] for l in p.launches[:2]] == ["stats", "write"]
    assert p.workspaces[0].count == 2 * 1024 * 8
    one = op.plan(op.kernel(op.schedule(threads=256, items=4, algo="split", l2_batch_mb=0)),
                  op.problem({"rows": 1024, "cols": 32768}))
    assert len(one.launches) == 2 and one.launches[1].grid == (1024, 8, 1)


@pytest.mark.emulate
def test_split_batches_of_rows_are_correct_on_the_emulator():
    # 5 rows of 419431 floats (1.6 MB each) in 8 MB batches: two stats+write launch pairs, the second
    # starting at row 4 (row0 > 0), which no other size reaches (every other one fits a batch)
    k = op.schedule(threads=256, items=4, algo="split", l2_batch_mb=8)
    p = op.problem({"rows": 5, "cols": 419431})
    assert len(op.plan(op.kernel(k), p).launches) == 4
    v = validate(op, k, p, backend="emulate", order="reverse")
    assert v.ok, v.summary()


def test_space_holds_a_register_row_for_each_benchmark_shape():
    for rows, cols in ((4096, 4096), (32768, 1024), (8192, 128), (1024, 32768)):
        p = op.problem({"rows": rows, "cols": cols})
        algos = set()
        for knobs in op.space(p, target()):
            try:
                op.plan(op.kernel(op.schedule_from_knobs(**knobs)), p)
            except ScheduleError:
                continue
            algos.add(knobs["algo"])
        assert "registers" in algos and "online" in algos, (rows, cols, algos)


# -- SASS ------------------------------------------------------------------------------------------
@pytest.mark.nvrtc
def test_vectorised_steps_move_128_bits_and_spill_nothing():
    for step in STEPS:
        found, name = facts(step.schedule)
        vec = op.knobs_from_schedule(step.schedule)["vec"]
        for sym, f in found.items():
            assert f.spill_bytes == 0 and f.local_ops == 0, (step.title, sym)
            wide = vec == 4                      # the any-alignment twin too
            assert (f.ldg128 > 0) == wide, (step.title, sym, f.ldg128)
            assert (f.stg128 > 0) == (wide and "_stats" not in sym), (step.title, sym, f.stg128)


@pytest.mark.nvrtc
@pytest.mark.parametrize("knobs,most", [
    (dict(), 40),                                        # 4096x4096: 16 floats of a row per thread
    (dict(threads=32, rows_per_block=8, items=1), 24),   # 8192x128: a warp per row, one float4 per lane
    (dict(threads=1024, items=8), 64),                   # 1024x32768: the whole row in one block's registers
])
def test_register_rows_keep_occupancy(knobs, most):
    found, name = facts(op.schedule(**knobs))
    assert found[name].registers <= most and found[name].spill_bytes == 0


# -- numbers ---------------------------------------------------------------------------------------
def test_reference_rows_sum_to_one_and_survive_large_offsets():
    p = op.problem({"rows": 4, "cols": 9})
    inputs = op.make_inputs(p, np.random.default_rng(1))
    y = op.reference(inputs, p)["y"]
    assert np.allclose(y.sum(axis=1), 1.0) and np.all(np.isfinite(y))


@pytest.mark.emulate
@pytest.mark.parametrize("knobs", [
    dict(threads=8, rows_per_block=16, items=4),
    dict(threads=4, rows_per_block=16, items=2, algo="online"),
    dict(threads=64, items=2, reduction="shared", algo="online"),
    dict(threads=16, rows_per_block=4, items=4, reduction="shared"),
    dict(threads=1024, items=1),
    dict(threads=64, items=1, algo="split"),
    dict(threads=32, items=2, vec=1, algo="split", l2_batch_mb=0),
])
def test_other_layouts_are_correct_on_the_emulator(knobs):
    k = op.knobs_from_schedule(op.schedule(**knobs))
    for sizes in op.test_problems():
        if k["algo"] == "registers" and sizes["cols"] > op.max_cols(k):
            continue    # the plan refuses it (tested above)
        v = validate(op, op.schedule(**knobs), op.problem(sizes), backend="emulate", order="reverse")
        assert v.ok, (knobs, sizes, v.summary())
