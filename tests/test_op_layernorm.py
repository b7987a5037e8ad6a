"""What is specific to layernorm: the algorithm read from the schedule, legality messages, the plan
(any-alignment twin for odd column counts, register-row limit), SASS facts, a variance that survives a
large mean, and the layouts the tuner searches, on the emulator."""
import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.target import Target, target
from kernelgen.validate import validate

op = get_op("layernorm")
STEPS = op.ladder()


def facts(sched):
    k = op.kernel(sched)
    return {f.symbol: f for f in facts_of(compile_cuda(render(k), "sm_90", k.name))}, k.name


def test_ladder_goes_naive_warp_welford_registers():
    knobs = [op.knobs_from_schedule(s.schedule) for s in STEPS]
    assert [k["algo"] for k in knobs] == ["two_pass", "two_pass", "welford", "registers"]
    assert [k["threads"] for k in knobs[:3]] == [256, 32, 32] and knobs[0]["reduction"] == "shared"
    assert STEPS[-1].schedule == op.default_schedule()


@pytest.mark.parametrize("change,message", [
    (dict(threads=96), r"knob threads=96 is not one of its choices \(allowed: 1, 2, 4, 8"),
    (dict(items=33), r"knob items=33 is outside its range \(allowed: an integer in 1..32\)"),
    (dict(threads=64, rows_per_block=2), "one row per block"),
    (dict(threads=1, rows_per_block=64, reduction="shuffle"), "allowed: serial"),
    (dict(threads=512, items=32), "floats per thread in registers with 512 threads"),
])
def test_illegal_knobs_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        op.kernel(op.schedule(**change))


def test_conflicting_algorithms_are_rejected():
    with pytest.raises(ScheduleError, match="reads x once"):
        op.kernel(op.schedule(algo="registers").annotate("layernorm", "welford"))


def test_plan_limits_and_twins():
    k = op.kernel(op.default_schedule())
    with pytest.raises(ScheduleError, match="cols <= items\\*threads\\*vec = 4096"):
        op.plan(k, op.problem({"rows": 2, "cols": 5000}))
    p = op.plan(k, op.problem({"rows": 8192, "cols": 4096}))
    assert p.launches[0].grid == (8192, 1, 1) and dict(p.alignment) == {"x": 16, "gamma": 16, "beta": 16, "y": 16}
    odd = op.plan(k, op.problem({"rows": 3, "cols": 4093}))
    # the any-alignment twin: x and y float4-aligned, and gamma and beta too (it reads them as aligned float4s,
    # funnel-shifted by the row's offset; the emulator, placing them 4 bytes past a multiple of 8, faulted there)
    assert odd.launches[0].symbol == k.name + "_anyalign"
    assert dict(odd.alignment) == {"x": 16, "gamma": 16, "beta": 16, "y": 16}
    with pytest.raises(UsageError, match="rows=0"):
        op.problem({"rows": 0, "cols": 8})


def test_space_fits_the_benchmark_shape():
    p = op.problem()
    good = [k for k in op.space(p, target()) if k["algo"] == "registers"]
    assert good and all(k["items"] * k["threads"] * 4 >= 4096 for k in good)


@pytest.mark.nvrtc
def test_vectorised_steps_move_128_bits_and_spill_nothing():
    for step in STEPS:
        found, name = facts(step.schedule)
        vec = op.knobs_from_schedule(step.schedule)["vec"]
        for sym, f in found.items():
            assert f.spill_bytes == 0 and f.local_ops == 0, (step.title, sym)
            wide = vec == 4                      # the any-alignment twin too
            assert (f.ldg128 > 0 and f.stg128 > 0) == wide, (step.title, sym, f.ldg128, f.stg128)


@pytest.mark.nvrtc
def test_default_keeps_occupancy():
    found, name = facts(op.default_schedule())
    assert found[name].registers <= 40      # 256 threads x 16 floats: 6 blocks per SM at most 40 registers


def test_reference_is_torch_layer_norm_in_float64():
    p = op.problem({"rows": 3, "cols": 6})
    inputs = op.make_inputs(p, np.random.default_rng(2))
    y = op.reference(inputs, p)["y"]
    x = inputs["x"].astype(np.float64)
    z = (y - inputs["beta"]) / inputs["gamma"]
    assert np.allclose(z.mean(axis=1), 0.0, atol=1e-9)
    assert np.allclose((z ** 2).mean(axis=1), x.var(axis=1) / (x.var(axis=1) + 1e-5))


@pytest.mark.emulate
@pytest.mark.parametrize("knobs", [
    dict(threads=8, rows_per_block=16, items=4),
    dict(threads=4, rows_per_block=16, items=2, algo="welford"),
    dict(threads=64, items=2, reduction="shared", algo="welford"),
    dict(threads=1024, items=1),
    dict(threads=16, rows_per_block=4, items=4, reduction="shared"),
    dict(threads=1, rows_per_block=64, items=2, reduction="serial", algo="welford"),
])
def test_other_layouts_are_correct_on_the_emulator(knobs):
    k = op.knobs_from_schedule(op.schedule(**knobs))
    for sizes in op.test_problems():
        if k["algo"] == "registers" and sizes["cols"] > op.max_cols(k):
            continue
        v = validate(op, op.schedule(**knobs), op.problem(sizes), backend="emulate", order="reverse")
        assert v.ok, (knobs, sizes, v.summary())
