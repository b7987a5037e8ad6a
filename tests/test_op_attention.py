"""What is specific to attention: the problem's parameters (seq shorthand, causal), the knobs read
from the schedule, legality and bad input with the numbers in the message, the plans (three launches
and a workspace unfused, one launch and its unaligned twin fused), the reference, SASS facts for
sm_80 and sm_90, every step on the emulator at awkward sizes (the fp32 steps in float32, the
tensor-core step in float16 and bfloat16; the checker on, as conftest sets), and the GPU."""
import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.errors import KnobError, ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.schedule import schedule as kg_schedule
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("attention")
STEPS = op.ladder()
# (step, input type): every step in each type it runs in
TYPED = [(i, d) for i, st in enumerate(STEPS) for d in st.dtypes or ("float32",)]
EMULATED = [(i, d) for i, d in TYPED if not STEPS[i].arch]   # the emulator runs no wgmma or TMA: the Hopper step on the GPU
MMA = dict(algo="flash_mma")
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
    (dict(head_dim=129), r"head_dim=129 is illegal \(must be an integer 1..128; .*at most 128 elements"),
    (dict(seq=-1), r"seq=-1 is illegal \(must be an integer >= 1\)"),
    (dict(seq_k=0), r"seq_k=0 is illegal \(must be an integer >= 1\)"),
    (dict(causal=2), r"causal=2 is illegal \(must be an integer 0..1; causal is 0 \(off\) or 1 \(on\)\)"),
    (dict(batch=65536, heads=32768), r"batch\*heads = 65536\*32768 = 2147483648 exceeds 2147483647 \(the float32 "
                                     r"flash kernel's gridDim.x"),
    (dict(seq=8, seq_q=9), r"seq=8 sets seq_q and seq_k, but seq_q=9 disagrees"),
    (dict(head=4), r"unknown size 'head'; sizes are batch, heads, seq_q, seq_k, head_dim, causal"),
])
def test_bad_problems_say_what_is_allowed(sizes, message):
    with pytest.raises(UsageError, match=message):
        op.problem(sizes)


def test_pairs_past_a_kernels_grid_dimension_are_refused_by_name():
    # float32's flash kernel holds the pairs in gridDim.x (2^31 - 1), the tensor-core and unfused kernels in
    # gridDim.y and gridDim.z (65535): a half problem is refused as a problem, the unfused plan by its kernel
    with pytest.raises(UsageError, match=r"batch\*heads = 300\*300 = 90000 exceeds 65535 \(the float16 flash_mma "
                       r"kernel's gridDim.y"):
        op.problem(dict(batch=300, heads=300), dtype="float16")
    p = op.problem(dict(batch=300, heads=300, seq=130, head_dim=64))
    assert op.plan(op.kernel(op.default_schedule()), p).launches[0].grid == (90000, 3, 1)
    with pytest.raises(ScheduleError, match=r"bind\(bh\): 'batch\*heads=90000' is illegal \(limit: the unfused "
                       r"kernels' gridDim.z holds 65535 \(batch, head\) pairs; algo flash \(float32\) takes 2147483647"):
        op.plan(op.kernel(STEPS[0].schedule), p)


def test_other_types_are_refused_by_name():
    with pytest.raises(UsageError, match="dtype 'int8' is unknown"):
        op.problem(dtype="int8")
    with pytest.raises(UsageError, match="output dtype float32 with float16 inputs is not supported"):
        op.problem(dtype="float16", out_dtype="float32")


def test_each_kernel_refuses_the_other_types_by_name():
    with pytest.raises(ScheduleError, match=r"annotate\(algo\): 'flash' is illegal \(limit: algo flash runs in "
                       r"float32; float16 runs on tensor cores; allowed: flash_mma\)"):
        op.kernel(op.default_schedule(), types=op.types("float16"))
    with pytest.raises(ScheduleError, match=r"tensorize\(j.1\).*takes float16 or bfloat16 inputs \(or fp32 data as "
                       r"tf32x3\), not float32; float32 runs algo flash; allowed: float16, bfloat16, tf32x3"):
        op.kernel(op.schedule(**MMA))
    with pytest.raises(ScheduleError, match=r"annotate\(algo\): 'flash' is illegal \(limit: algo flash runs in "
                       r"float32; tf32x3 runs on tensor cores; allowed: flash_mma\)"):
        op.kernel(op.default_schedule(), types=op.types("tf32x3"))


# -- schedules and knobs ----------------------------------------------------------------------------
def test_ladder_climbs_from_unfused_to_tensor_cores():
    knobs = [op.knobs_from_schedule(s.schedule) for s in STEPS]
    assert [k["algo"] for k in knobs] == ["unfused", "flash", "flash", "flash_mma", "flash_mma", "flash_mma",
                                          "flash_wgmma"]
    assert [s.dtypes for s in STEPS] == [("float32",)] * 3 + [("float16", "bfloat16")] * 2 + [("tf32x3",)] + \
        [("float16", "bfloat16")]
    assert [s.arch for s in STEPS] == [""] * 6 + ["sm_90a"]      # the Hopper step names the arch it needs
    assert op.kernel(STEPS[5].schedule, types=op.step_types(STEPS[5])).name == \
        "attention_tf32x3_sm90_aflashmma_bq64_wq16_bk32_d64_st2_ccpasync_qr0"
    assert op.step_types(STEPS[3]).input.name == "float16" and op.step_types(STEPS[0]) is None
    assert op.step_types(STEPS[3], op.types("bfloat16")).input.name == "bfloat16"
    assert op.step_types(STEPS[1], op.types("bfloat16")).input.name == "float32"
    assert op.kernel(STEPS[3].schedule, types=op.types("bf16")).name == \
        "attention_bf16_sm90_aflashmma_bq64_wq16_bk64_d64_st2_ccpasync"
    assert STEPS[3].schedule.to_python().endswith('.split("j", 64).split("d", 64).tensorize("j.1", "mma.m16n8k16")'
                                                  '.double_buffer("K", 2).double_buffer("V", 2).annotate("copy", '
                                                  '"cp_async").annotate("algo", "flash_mma")')
    assert (knobs[1]["stages"], knobs[1]["copy"]) == (1, "sync") and (knobs[2]["stages"], knobs[2]["copy"]) == (2, "cp_async")
    assert op.kernel(STEPS[0].schedule).name == "attention_f32_sm90_aunfused"
    assert op.kernel(STEPS[4].schedule, types=op.types("f16")).name == \
        "attention_f16_sm90_aflashmma_bq128_wq32_bk64_d64_st2_ccpasync_esmem"
    assert STEPS[4].schedule.to_python().endswith('.annotate("algo", "flash_mma").cache_write("O", "shared")')


@pytest.mark.parametrize("change,message", [
    (dict(bk=64, rk=1), r"BK/RK = 64 threads share a row: a power of two up to 32"),
    (dict(bq=16, rq=8, bk=16, rk=2), r"2 x 8 = 16 threads: whole warps"),
    (dict(bk=32, rk=1, dmax=32, bq=128, rq=1), r"128 x 32 = 4096 threads: whole warps, at most 1024"),
    (dict(copy="cp_async", stages=1), r"double_buffer\(K\): 1 is illegal .*allowed: 2, 3"),
    (dict(copy="sync", stages=3), r"double_buffer\(K\): 3 is illegal .*allowed: 1, 2"),
    (dict(bq=128, rq=8, bk=128, rk=8, dmax=128, stages=3), r"530432 bytes.*232448 bytes of shared memory per block on sm_90"),
])
def test_illegal_knobs_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        op.kernel(op.schedule(**change))


@pytest.mark.parametrize("change,message", [
    (dict(bq=64, wq=32, dmax=128), r"~336 registers per thread.*limit: 255"),
    (dict(bq=16, wq=32), r"the warp's rows 32 divide the block's 16"),
    (dict(stages=3, copy="sync"), r"double_buffer\(K\): 3 is illegal .*allowed: 1, 2"),
    (dict(rq=4), r"knob rq=4 has no effect with algo='flash_mma' \(it applies with algo flash\)"),
])
def test_illegal_mma_knobs_say_why(change, message):
    with pytest.raises((ScheduleError, KnobError), match=message):
        op.kernel(op.schedule(**MMA, **change), types=op.types("float16"))


def test_mma_needs_sm_80_and_its_schedule_keeps_its_structure():
    with pytest.raises(ScheduleError, match="needs sm_80 or later; sm_75 lacks it"):
        op.kernel(op.schedule(**MMA), target("sm_75"), op.types("float16"))
    op.kernel(op.schedule(**MMA), target("sm_80"), op.types("bfloat16"))
    bad = STEPS[3].schedule.bind("j.1", "threadIdx.x")
    with pytest.raises(ScheduleError, match="no use for this step"):
        op.kernel(bad, types=op.types("float16"))
    s = op.schedule(**MMA)
    assert op.schedule_from_knobs(**op.knobs_from_schedule(s)) == s


def test_the_fp32_flash_schedule_binds_the_pairs_to_x_and_the_query_blocks_to_y():
    s = op.default_schedule()
    assert op.schedule_from_knobs(**op.knobs_from_schedule(s)) == s
    old = kg_schedule("attention").fuse("b", "h").bind("bh", "blockIdx.y").split("i", 64, 8).bind("i.0", "blockIdx.x")
    with pytest.raises(ScheduleError, match=r"bind\(bh\): 'blockIdx.y' is illegal \(limit: the float32 flash kernel's "
                       r"grid is \(pairs, query blocks\).*allowed: blockIdx.x\)"):
        op.kernel(old.split("j", 64, 4).split("d", 64).annotate("algo", "flash"))


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
    # (pairs, query blocks): blocks start x fastest, every pair's longest causal block before any pair's next one
    assert launch.symbol == k.name and launch.grid == (6, 3, 1) and launch.block == (16, 8, 1)
    assert launch.shared_bytes == k.static_smem > 48 * 1024 and dict(plan.alignment)["Q"] == 16
    plan = op.plan(k, op.problem(dict(batch=2, heads=3, seq=130, head_dim=63)))
    assert plan.launches[0].symbol == k.name + "_unaligned" and dict(plan.alignment)["Q"] == 4


def test_mma_plan_takes_one_warp_per_wq_rows_and_the_unaligned_twin_off_multiples_of_8():
    k = op.kernel(op.schedule(**MMA, bq=128, wq=32), types=op.types("float16"))
    plan = op.plan(k, op.problem(dict(batch=2, heads=3, seq=130, head_dim=64), dtype="float16"))
    (launch,) = plan.launches
    assert launch.symbol == k.name and launch.grid == (2, 6, 1) and launch.block == (128, 1, 1)
    assert launch.shared_bytes == k.static_smem == 2 * (128 * 64 + 2 * 2 * 64 * 64) and dict(plan.alignment)["O"] == 16
    plan = op.plan(k, op.problem(dict(batch=2, heads=3, seq=130, head_dim=60), dtype="float16"))
    assert plan.launches[0].symbol == k.name + "_unaligned" and dict(plan.alignment)["Q"] == 2
    with pytest.raises(ScheduleError, match="head_dim <= DMAX = 64"):
        op.plan(k, op.problem(dict(batch=1, heads=1, seq=8, head_dim=80), dtype="float16"))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("d", [16, 64, 80, 128])
@pytest.mark.parametrize("bh,seq", [(128, 2048), (1, 100)])
def test_schedule_for_takes_tensor_cores_for_16_bit_types(dt, d, bh, seq):
    p = op.problem(dict(batch=bh, heads=1, seq=seq, head_dim=d, causal=1), dtype=dt)
    for arch in ("sm_80", "sm_90"):
        k = op.knobs_from_schedule(op.schedule_for(p, target(arch)))
        kernel = op.kernel(op.schedule_for(p, target(arch)), target(arch), p.types)
        op.plan(kernel, p)
        assert k["algo"] == "flash_mma" and k["dmax"] >= d and k["copy"] == "cp_async"
        assert k["bq"] == (128 if bh > 1 else 64) and k["wq"] == (32 if bh > 1 else 16)
        # d128 at 32 rows a warp: 32-key tiles and Q read from shared memory keep the registers under 255
        assert (k["bk"], k["qreg"]) == ((32, False) if bh > 1 and d > 64 else (64, True))
        assert (k["pipe"], k["stages"], k["epilogue"]) == ("joint", 2, "smem")
    assert op.knobs_from_schedule(op.schedule_for(op.problem(dict(batch=bh, heads=1, seq=seq, head_dim=d))))["algo"] == "flash"


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


def test_16_bit_inputs_are_stored_rounded_and_the_reference_reads_them_so():
    p = op.problem(dict(batch=1, heads=2, seq=5, head_dim=8), dtype="bfloat16")
    inputs = op.make_inputs(p, np.random.default_rng(3))
    assert inputs["Q"].dtype == np.uint16
    q = p.dtype("Q").decode(inputs["Q"])
    f32 = op.make_inputs(op.problem(dict(batch=1, heads=2, seq=5, head_dim=8)), np.random.default_rng(3))["Q"]
    assert np.abs(q - f32).max() <= 2 ** -8 * np.abs(f32).max() and not np.array_equal(q, f32)
    o = op.reference(inputs, p)["O"]
    as_f32 = {n: p.dtype(n).decode(a).astype(np.float32) for n, a in inputs.items()}    # exact: bf16 is in fp32
    assert o.dtype == np.float64 and np.array_equal(o, op.reference(as_f32, op.problem(dict(batch=1, heads=2, seq=5, head_dim=8)))["O"])
    assert op.tolerance(p) == 3 * 2 ** -8 and op.tolerance(op.problem(dtype="float16")) == 3 * 2 ** -11
    assert op.math(p) == "fp16" and op.bytes_moved(p) == 2 * 4 * 2 * 5 * 8


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
    # NVRTC 12's ptxas keeps 8 bytes of the one-stage kernel on the stack for sm_80 (168 registers); at DMAX 128
    # it holds the element-wise twin to 128 registers (two blocks of 256 threads an SM) and since the strides
    # became arguments spills 16 (sm_80) and 56 (sm_90) bytes there: the aligned kernel, which runs, spills none
    most = 8 if arch == "sm_80" and knobs.get("copy") == "sync" else 0
    for sym, f in found.items():
        bound = 64 if knobs.get("dmax") == 128 and sym.endswith("_unaligned") else most
        assert f.spill_bytes <= bound and f.local_ops <= bound // 4, (sym, f)
        assert f.lds128 > 0, sym                           # Q, K, P and V read from shared as float4s
    assert found[k.name].ldg128 + found[k.name].stg128 > 0 and found[k.name + "_unaligned"].stg128 == 0


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dt,knobs", [("float16", dict()), ("bfloat16", dict()), ("float16", dict(bq=128, wq=32)),
                                      ("bfloat16", dict(dmax=128)), ("float16", dict(dmax=128, bq=128)),
                                      ("bfloat16", dict(stages=1, copy="sync")), ("float16", dict(stages=3, bk=32, dmax=32))])
def test_mma_kernels_compile_to_tensor_cores_without_spills(arch, dt, knobs):
    k = op.kernel(op.schedule(**MMA, **knobs), target(arch), op.types(dt))
    found = {f.symbol: f for f in facts_of(compile_cuda(render(k), arch, k.name))}
    assert set(found) == {k.name, k.name + "_unaligned"}
    mi, kq = k.knob("wq") // 16, k.knob("dmax") // 16
    for sym, f in found.items():
        assert f.spill_bytes == 0 and f.local_ops == 0, (sym, f)
        # every product is an HMMA: S (dmax/16 k-steps x bk/8 n-tiles) and P V (bk/16 x dmax/8), per m16 tile
        assert f.hmma == mi * (kq * k.knob("bk") // 8 + k.knob("bk") // 16 * k.knob("dmax") // 8), (sym, f)
        assert f.ldsm > 0 and f.registers <= 255, (sym, f)
    # 16-byte copies (LDGSTS.128 for cp.async, LDG.128 through registers) where rows are aligned, none in the twin
    assert found[k.name].ldg128 > 0 and found[k.name + "_unaligned"].ldg128 == 0


@pytest.mark.nvrtc
def test_every_step_compiles_for_sm_80_and_sm_90():
    for arch in ("sm_80", "sm_90"):
        for step in STEPS:
            if step.arch:    # the Hopper step compiles for the arch it names (test_op_attention_wgmma.py)
                with pytest.raises(ScheduleError, match=f"wgmma needs sm_90a .* {arch} lacks it"):
                    op.kernel(step.schedule, target(arch), op.step_types(step))
                continue
            k = op.kernel(step.schedule, target(arch), op.step_types(step))
            assert compile_cuda(render(k), arch, k.name).cubin[:4] == b"\x7fELF"


# -- the emulator -----------------------------------------------------------------------------------
@pytest.mark.emulate
@pytest.mark.parametrize("step,dt", EMULATED, ids=lambda c: str(c))
@pytest.mark.parametrize("sizes", AWKWARD, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_every_step_is_correct_on_the_emulator_at_awkward_sizes(step, dt, sizes):
    v = validate(op, STEPS[step].schedule, op.problem(sizes, dtype=dt), backend="emulate", order="random")
    assert v.ok, v.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("dt,knobs,sizes", [
    ("float16", dict(bq=128, wq=32), dict(batch=1, heads=3, seq=200, head_dim=64, causal=1)),
    ("bfloat16", dict(bq=128, wq=32), dict(batch=2, heads=1, seq_q=130, seq_k=77, head_dim=56, causal=0)),
    ("float16", dict(dmax=128), dict(batch=1, heads=1, seq=70, head_dim=128, causal=1)),
    ("bfloat16", dict(dmax=128, bq=128), dict(batch=1, heads=2, seq=33, head_dim=97, causal=0)),
    ("float16", dict(stages=1, copy="sync"), dict(batch=3, heads=1, seq=100, head_dim=64, causal=1)),
    ("bfloat16", dict(stages=2, copy="sync", bk=32), dict(batch=1, heads=2, seq_q=50, seq_k=150, head_dim=48, causal=1)),
    ("float16", dict(stages=3, bk=32, dmax=32), dict(batch=2, heads=1, seq_q=100, seq_k=130, head_dim=32, causal=1)),
    ("bfloat16", dict(bk=128), dict(batch=1, heads=1, seq=300, head_dim=64, causal=1)),
    ("float16", dict(bq=192, wq=32), dict(batch=1, heads=2, seq_q=400, seq_k=300, head_dim=64, causal=1)),   # 6 warps
])
def test_other_mma_tiles_are_correct_on_the_emulator(dt, knobs, sizes):
    v = validate(op, op.schedule(**MMA, **knobs), op.problem(sizes, dtype=dt), backend="emulate", order="random")
    assert v.ok, v.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("old,new", [
    ("lrow[i][h] *= alpha;", ""),                                                   # the running sum not rescaled
    ("acc[i][j][2 * h + 1] *= alpha;", ""),                                        # half of O not rescaled
    ("(causal && key > row)", "(causal && key > row + 1)"),                         # the causal mask off by one
    ("p[i][2] = ", "p[i][1] = "),                                                   # P's fragment mis-assembled
])
def test_the_emulator_catches_broken_mma_softmax(old, new):
    def mutate(src):
        assert old in src
        return src.replace(old, new)
    v = validate(op, STEPS[3].schedule, op.problem(dict(batch=1, heads=1, seq=150, head_dim=64, causal=1), dtype="float16"),
                 backend="emulate", mutate=mutate)
    assert not v.ok


@pytest.mark.emulate
@pytest.mark.parametrize("knobs,sizes", [
    (dict(dmax=128, rq=4), dict(batch=1, heads=1, seq=70, head_dim=128, causal=1)),
    (dict(dmax=128, rq=4), dict(batch=1, heads=1, seq=33, head_dim=97, causal=0)),
    (dict(bq=32, rq=4, bk=32, rk=2, dmax=32, stages=3), dict(batch=2, heads=1, seq_q=100, seq_k=130, head_dim=32, causal=1)),
    (dict(bq=16, rq=2, bk=16, rk=2, dmax=32, stages=2, copy="sync"), dict(batch=1, heads=2, seq=50, head_dim=20, causal=1)),
    (dict(bq=192, rq=8), dict(batch=1, heads=2, seq_q=400, seq_k=300, head_dim=64, causal=1)),   # 24 rows of threads
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
@pytest.mark.parametrize("step,dt", TYPED, ids=lambda c: str(c))
@pytest.mark.parametrize("sizes", [dict(batch=2, heads=3, seq=1000, head_dim=64, causal=1),
                                   dict(batch=1, heads=4, seq_q=333, seq_k=1027, head_dim=64, causal=0),
                                   dict(batch=1, heads=2, seq=513, head_dim=63, causal=1)] + list(AWKWARD))
def test_every_step_is_correct_on_the_gpu(step, dt, sizes):
    if STEPS[step].arch and sizes["head_dim"] % 8:      # rows TMA cannot read: refused, schedule_for's cue
        with pytest.raises(ScheduleError, match="TMA reads rows that start 16-byte aligned"):
            validate(op, STEPS[step].schedule, op.problem(sizes, dtype=dt), backend="gpu")
        return
    v = validate(op, STEPS[step].schedule, op.problem(sizes, dtype=dt), backend="gpu")
    assert v.ok, v.summary()


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [dict(batch=2, heads=4, seq=700, head_dim=d, causal=c) for d in (32, 64, 80, 128)
                                   for c in (0, 1)])
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_heuristic_is_correct_on_the_gpu(sizes, dt):
    p = op.problem(sizes, dtype=dt)
    v = validate(op, op.schedule_for(p), p, backend="gpu")
    assert v.ok, v.summary()


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("sizes", [dict(batch=8, heads=16, seq=2048, head_dim=d, causal=c) for d in (64, 128) for c in (0, 1)])
def test_the_issue_shapes_are_correct_on_the_gpu_in_16_bits(sizes, dt):
    p = op.problem(sizes, dtype=dt)
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
