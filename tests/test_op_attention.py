"""What is specific to attention: the problem's parameters (seq shorthand, causal), the knobs read
from the schedule, legality and bad input with the numbers in the message, the plans (three launches
and a workspace unfused, one launch and its unaligned twin fused), the reference, SASS facts for
sm_80 and sm_90, every fp32 step on the emulator at awkward sizes (the checker on, as conftest
sets), and the GPU."""
import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("attention")
STEPS = op.ladder()
AWKWARD = (   # seq 1; seq 37 causal; d 64 with seq not a tile multiple; batch*heads 3; unaligned d
    dict(batch=1, heads=1, seq=1, head_dim=64, causal=0),
    dict(batch=1, heads=3, seq=37, head_dim=64, causal=1),
    dict(batch=3, heads=1, seq_q=70, seq_k=45, head_dim=64, causal=1),
    dict(batch=1, heads=3, seq_q=45, seq_k=150, head_dim=64, causal=0),
    dict(batch=1, heads=1, seq=150, head_dim=40, causal=1),
    dict(batch=1, heads=2, seq_q=19, seq_k=83, head_dim=23, causal=0),
)


# -- problems ---------------------------------------------------------------------------------------
def test_problems_print_seq_once_and_causal_only_when_on():
    assert str(op.problem(dict(batch=8, heads=16, seq=2048, head_dim=64))) == "batch=8,heads=16,seq=2048,head_dim=64"
    p = op.problem(dict(batch=1, heads=2, seq_q=5, seq_k=7, head_dim=32, causal=1))
    assert str(p) == "batch=1,heads=2,seq_q=5,seq_k=7,head_dim=32,causal=1"
    assert op.input_shapes(p) == {"Q": (1, 2, 5, 32), "K": (1, 2, 7, 32), "V": (1, 2, 7, 32)}


@pytest.mark.parametrize("sizes,message", [
    (dict(head_dim=129), r"head_dim=129 is illegal \(must be an integer 1..128; .*at most 128 floats"),
    (dict(seq=-1), r"seq=-1 is illegal \(must be an integer >= 1\)"),
    (dict(seq_k=0), r"seq_k=0 is illegal \(must be an integer >= 1\)"),
    (dict(causal=2), r"causal=2 is illegal \(must be an integer 0..1; causal is 0 \(off\) or 1 \(on\)\)"),
    (dict(batch=300, heads=300), r"batch\*heads = 300\*300 = 90000 exceeds 65535"),
    (dict(seq=8, seq_q=9), r"seq=8 sets seq_q and seq_k, but seq_q=9 disagrees"),
    (dict(head=4), r"unknown size 'head'; sizes are batch, heads, seq_q, seq_k, head_dim, causal"),
])
def test_bad_problems_say_what_is_allowed(sizes, message):
    with pytest.raises(UsageError, match=message):
        op.problem(sizes)


def test_fp16_is_refused_by_name():
    with pytest.raises(UsageError, match="dtype float16 is not supported; attention takes float32"):
        op.problem(dtype="float16")


# -- schedules and knobs ----------------------------------------------------------------------------
def test_ladder_climbs_from_unfused_to_cp_async():
    knobs = [op.knobs_from_schedule(s.schedule) for s in STEPS]
    assert [k["algo"] for k in knobs] == ["unfused", "flash", "flash"]
    assert (knobs[1]["stages"], knobs[1]["copy"]) == (1, "sync") and (knobs[2]["stages"], knobs[2]["copy"]) == (2, "cp_async")
    assert op.kernel(STEPS[0].schedule).name == "attention_f32_sm90_aunfused"


@pytest.mark.parametrize("change,message", [
    (dict(bk=64, rk=1), r"BK/RK = 64 threads share a row: a power of two up to 32"),
    (dict(bq=16, rq=8, bk=16, rk=2), r"2 x 8 = 16 threads: whole warps"),
    (dict(bk=32, rk=1, dmax=32, bq=128, rq=1), r"128 x 32 = 4096 threads: whole warps, at most 1024"),
    (dict(copy="cp_async", stages=1), r"double_buffer\(K\): 1 is illegal .*allowed: 2, 3"),
    (dict(copy="sync", stages=3), r"double_buffer\(K\): 3 is illegal .*allowed: 1, 2"),
    (dict(bq=128, rq=8, bk=128, rk=8, dmax=128, stages=3), r"534528 bytes.*232448 bytes of shared memory per block on sm_90"),
])
def test_illegal_knobs_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        op.kernel(op.schedule(**change))


def test_cp_async_needs_sm_80_and_unfused_takes_no_splits():
    with pytest.raises(ScheduleError, match="cp_async needs sm_80 or later; sm_75 lacks it"):
        op.kernel(op.schedule(copy="cp_async"), target("sm_75"))
    with pytest.raises(ScheduleError, match="no use for this step"):
        op.kernel(STEPS[0].schedule.split("i", 64, 8))
    with pytest.raises(ScheduleError, match=r"double_buffer\(K\).*applies only with algo flash"):
        op.kernel(STEPS[0].schedule.double_buffer("K", 2).double_buffer("V", 2))


def test_a_head_dim_past_the_tiles_names_dmax():
    k = op.kernel(op.default_schedule())
    with pytest.raises(ScheduleError, match="head_dim <= DMAX = 64"):
        op.plan(k, op.problem(dict(batch=1, heads=1, seq=8, head_dim=80)))
    op.plan(op.kernel(op.schedule(dmax=128, rq=4)), op.problem(dict(batch=1, heads=1, seq=8, head_dim=80)))


# -- plans ------------------------------------------------------------------------------------------
def test_unfused_plan_runs_three_kernels_over_a_workspace():
    p = op.problem(dict(batch=2, heads=3, seq_q=37, seq_k=50, head_dim=64, causal=1))
    plan = op.plan(op.kernel(STEPS[0].schedule), p)
    assert [l.symbol.rsplit("_", 1)[1] for l in plan.launches] == ["scores", "softmax", "pv"]
    assert plan.launches[0].grid == (4, 3, 6) and plan.launches[2].grid == (4, 3, 6)
    assert plan.workspaces[0].count == 6 * 37 * 50 and dict((s.name, s.value) for s in plan.scalars)["scale"] == 0.125


def test_flash_plan_takes_the_unaligned_twin_for_odd_head_dims():
    k = op.kernel(op.default_schedule())
    plan = op.plan(k, op.problem(dict(batch=2, heads=3, seq=130, head_dim=64)))
    (launch,) = plan.launches
    assert launch.symbol == k.name and launch.grid == (3, 6, 1) and launch.block == (16, 8, 1)
    assert launch.shared_bytes == k.static_smem > 48 * 1024 and dict(plan.alignment)["Q"] == 16
    plan = op.plan(k, op.problem(dict(batch=2, heads=3, seq=130, head_dim=63)))
    assert plan.launches[0].symbol == k.name + "_unaligned" and dict(plan.alignment)["Q"] == 4


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
@pytest.mark.parametrize("d", [16, 64, 100, 128])
def test_schedule_for_is_legal_and_takes_cp_async_where_it_fits(arch, d):
    p = op.problem(dict(batch=8, heads=16, seq=2048, head_dim=d, causal=1))
    sched = op.schedule_for(p, target(arch))
    k = op.knobs_from_schedule(sched)
    op.plan(op.kernel(sched, target(arch)), p)
    assert k["dmax"] >= d and (k["copy"] == "cp_async") == (arch != "sm_75")


# -- numbers ----------------------------------------------------------------------------------------
def test_reference_is_softmax_weighted_v_and_causal_row_0_is_v_0():
    p = op.problem(dict(batch=1, heads=2, seq=5, head_dim=8, causal=1))
    inputs = op.make_inputs(p, np.random.default_rng(3))
    o = op.reference(inputs, p)["O"]
    assert np.allclose(o[0, :, 0], inputs["V"][0, :, 0])
    q, k, v = (inputs[n][0, 1].astype(np.float64) for n in "QKV")
    s = q[4] @ k.T / np.sqrt(8)
    e = np.exp(s - s.max())
    assert np.allclose(o[0, 1, 4], e @ v / e.sum())


def test_flops_halve_under_the_causal_mask():
    full = op.flops(op.problem(dict(batch=8, heads=16, seq=2048, head_dim=64)))
    assert full == 4 * 8 * 16 * 2048 * 2048 * 64
    assert op.flops(op.problem(dict(batch=8, heads=16, seq=2048, head_dim=64, causal=1))) == full * 2049 // 4096


# -- SASS -------------------------------------------------------------------------------------------
@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("knobs", [dict(), dict(dmax=128, rq=4, bk=32, rk=2), dict(stages=1, copy="sync"),
                                   dict(dmax=32, bk=32, rk=2)])
def test_fused_kernels_compile_without_spills(arch, knobs):
    k = op.kernel(op.schedule(**knobs), target(arch))
    found = {f.symbol: f for f in facts_of(compile_cuda(render(k), arch, k.name))}
    assert set(found) == {k.name, k.name + "_unaligned"}
    # NVRTC 12's ptxas keeps 8 bytes of the one-stage kernel on the stack for sm_80 (168 registers)
    most = 8 if arch == "sm_80" and knobs.get("copy") == "sync" else 0
    for sym, f in found.items():
        assert f.spill_bytes <= most and f.local_ops <= most // 4, (sym, f)
        assert f.lds128 > 0, sym                           # Q, K, P and V read from shared as float4s
    assert found[k.name].ldg128 + found[k.name].stg128 > 0 and found[k.name + "_unaligned"].stg128 == 0


@pytest.mark.nvrtc
def test_every_step_compiles_for_sm_80_and_sm_90():
    for arch in ("sm_80", "sm_90"):
        for step in STEPS:
            k = op.kernel(step.schedule, target(arch))
            assert compile_cuda(render(k), arch, k.name).cubin[:4] == b"\x7fELF"


# -- the emulator -----------------------------------------------------------------------------------
@pytest.mark.emulate
@pytest.mark.parametrize("step", range(len(STEPS)), ids=lambda i: f"step{i}")
@pytest.mark.parametrize("sizes", AWKWARD, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_every_step_is_correct_on_the_emulator_at_awkward_sizes(step, sizes):
    v = validate(op, STEPS[step].schedule, op.problem(sizes), backend="emulate", order="random")
    assert v.ok, v.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("knobs,sizes", [
    (dict(dmax=128, rq=4), dict(batch=1, heads=1, seq=70, head_dim=128, causal=1)),
    (dict(dmax=128, rq=4), dict(batch=1, heads=1, seq=33, head_dim=97, causal=0)),
    (dict(bq=32, rq=4, bk=32, rk=2, dmax=32, stages=3), dict(batch=2, heads=1, seq_q=100, seq_k=130, head_dim=32, causal=1)),
    (dict(bq=16, rq=2, bk=16, rk=2, dmax=32, stages=2, copy="sync"), dict(batch=1, heads=2, seq=50, head_dim=20, causal=1)),
])
def test_other_tiles_are_correct_on_the_emulator(knobs, sizes):
    v = validate(op, op.schedule(**knobs), op.problem(sizes), backend="emulate", order="random")
    assert v.ok, v.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("old,new", [
    ("l[r] *= alpha;", ""),                                  # the running sum not rescaled
    ("key > q0 + ty * 8 + r", "key > q0 + ty * 8"),          # the causal mask off by rows
    ("const int ntiles = (kend + 63) / 64;", "const int ntiles = (kend + 63) / 64 - (kend > 64);"),  # a tile dropped
])
def test_the_emulator_catches_broken_online_softmax(old, new):
    def mutate(src):
        assert old in src
        return src.replace(old, new)
    v = validate(op, op.default_schedule(), op.problem(dict(batch=1, heads=1, seq=150, head_dim=64, causal=1)),
                 backend="emulate", mutate=mutate)
    assert not v.ok


# -- the GPU ----------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("step", range(len(STEPS)), ids=lambda i: f"step{i}")
@pytest.mark.parametrize("sizes", [dict(batch=2, heads=3, seq=1000, head_dim=64, causal=1),
                                   dict(batch=1, heads=4, seq_q=333, seq_k=1027, head_dim=64, causal=0),
                                   dict(batch=1, heads=2, seq=513, head_dim=63, causal=1)] + list(AWKWARD))
def test_every_step_is_correct_on_the_gpu(step, sizes):
    v = validate(op, STEPS[step].schedule, op.problem(sizes), backend="gpu")
    assert v.ok, v.summary()


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [dict(batch=2, heads=4, seq=700, head_dim=d, causal=c) for d in (32, 64, 80, 128)
                                   for c in (0, 1)])
def test_heuristic_is_correct_on_the_gpu(sizes):
    p = op.problem(sizes)
    v = validate(op, op.schedule_for(p), p, backend="gpu")
    assert v.ok, v.summary()


def test_the_example_ladder_is_the_ops_ladder():
    import importlib.util
    spec = importlib.util.spec_from_file_location("ex", "examples/attention_ladder.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    assert len(ex.LADDER) == len(STEPS)
    for sched, step in zip(ex.LADDER.values(), STEPS):
        assert sched == step.schedule
