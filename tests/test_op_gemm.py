"""What is specific to the tensor-core gemm: tensorize and the knobs, legality messages with the numbers,
kernel names, the launch plan, the error measure, SASS facts of the ladder (HMMA, LDSM, LDGSTS, 128-bit
loads, no spills) and awkward sizes on the emulator (race and bounds checks) and the GPU."""
import itertools

import numpy as np
import pytest

from kernelgen import get_op, render, schedule
from kernelgen.compile import compile_cuda
from kernelgen.errors import CompileError, KnobError, ScheduleError, UsageError
from kernelgen.inspect import _sass, facts_of
from kernelgen.schedule import Schedule
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("gemm")
LADDER = op.ladder()
STEPS = [s for s in LADDER if not s.arch]              # WMMA and mma.sync: any arch from sm_75 / sm_80
HOPPER = [s for s in LADDER if s.arch == "sm_90a"]     # wgmma + TMA: proven on the GPU only
F16 = op.types("float16")
TYPES = [("float16", None), ("bfloat16", None), ("float16", "float32"), ("bfloat16", "float32")]
AWKWARD = ({"M": 1, "N": 1, "K": 1}, {"M": 33, "N": 17, "K": 40}, {"M": 70, "N": 130, "K": 24},
           {"M": 33, "N": 40, "K": 37})


def kernel_of(arch="sm_90", dtype="float16", **knobs):
    return op.kernel(op.schedule(**knobs), target(arch), op.types(dtype))


def knobs_of(step):
    return op.knobs_from_schedule(step.schedule)


# -- schedules and knobs --------------------------------------------------------------------------
def test_knobs_and_schedules_round_trip():
    scheds = [s.schedule for s in LADDER] + [op.schedule_from_knobs(**k) for k in op.space(op.problem(), target("sm_90a"))]
    for s in scheds:
        knobs = op.knobs_from_schedule(s)
        assert op.schedule_from_knobs(**knobs) == s
        assert Schedule.from_json(s.to_json()) == s
        assert Schedule.from_json(s.to_json()).to_python() == s.to_python()


def test_tensorize_names_the_instruction():
    s = op.default_schedule()
    assert ("tensorize", "k.1", "mma.m16n8k16") in [(t.prim, *t.args()) for t in s.steps]
    assert 'tensorize("k.1", "mma.m16n8k16")' in s.to_python()
    assert op.knobs_from_schedule(op.schedule(instr="wmma", smem="pad", pad=8, ldmatrix=False))["instr"] == "wmma"
    bad = Schedule.from_json(s.to_json().replace("mma.m16n8k16", "mma.m16n8k8"))
    with pytest.raises(ScheduleError, match="mma.m16n8k16, wmma.m16n16k16, wgmma.m64nNk16"):
        op.knobs_from_schedule(bad)
    with pytest.raises(ScheduleError, match="no use for this step"):
        op.kernel(s.tensorize("i.1", "mma.m16n8k16"), types=F16)


def test_ladder_climbs_from_wmma_to_the_default():
    k = [knobs_of(s) for s in STEPS]
    assert [x["instr"] for x in k] == ["wmma", "mma", "mma", "mma", "mma"]
    assert (k[0]["copy"], k[0]["smem"], k[1]["ldmatrix"], k[1]["smem"], k[2]["smem"]) == ("sync", "pad", True, "pad", "xor")
    assert k[3]["copy"] == "cp_async" and k[3]["stages"] >= 3
    assert STEPS[-1].schedule == op.schedule(**dict(op.default_knobs(), epilogue="smem"))
    assert list(LADDER[:len(STEPS)]) == STEPS
    h = [knobs_of(s) for s in HOPPER]
    assert [(x["instr"], x["copy"], x["ws"], x["epilogue"], x["cluster"], x["persistent"]) for x in h] == [
        ("wgmma", "tma", False, "direct", 1, "off"), ("wgmma", "tma", True, "direct", 1, "off"),
        ("wgmma", "tma", True, "smem", 1, "off"), ("wgmma", "tma", True, "smem", 2, "off"),
        ("wgmma", "tma", True, "smem", 1, "coop"), ("wgmma", "tma", True, "smem", 1, "pingpong")]
    d = op.default_knobs()
    assert (d["instr"], d["copy"], d["smem"], d["ldmatrix"], d["wm"], d["wn"]) == ("mma", "cp_async", "xor", True, 64, 64)
    assert d["stages"] in (3, 4) and op.threads(d) == 128


def test_mma_only_knobs_are_refused_elsewhere_by_name():
    wmma = dict(instr="wmma", smem="pad", pad=8, ldmatrix=False)
    with pytest.raises(KnobError, match="knob frag_buffers=2 has no effect with instr='wmma' .it applies with instr mma"):
        op.schedule(frag_buffers=2, **wmma)
    with pytest.raises(KnobError, match="knob epilogue='smem' has no effect with instr='wmma'"):
        op.schedule(epilogue="smem", **wmma)
    with pytest.raises(KnobError, match="knob min_blocks=2 has no effect with instr='wmma'"):
        op.schedule(min_blocks=2, **wmma)
    with pytest.raises(ScheduleError, match="knob frag_buffers applies only with instr mma, not instr=wgmma"):
        op.kernel(op.schedule(**WGMMA).annotate("warp_fragments", 2), target("sm_90a"), F16)


def test_new_mma_knobs_are_named_only_where_they_change_the_kernel():
    base = kernel_of().name
    assert kernel_of(frag_buffers=2).name == base.replace("_ld1_sw1", "_ld1_fb2_sw1")
    assert kernel_of(epilogue="smem").name == base.replace("_ld1_sw1", "_ld1_esmem_sw1")
    assert kernel_of(frag_buffers=2, epilogue="smem").name == base.replace("_ld1_sw1", "_ld1_fb2_esmem_sw1")
    assert kernel_of(wn=32, min_blocks=2).name == base.replace("wn64", "wn32").replace("_ld1_sw1", "_ld1_mb2_sw1")
    assert "__launch_bounds__(256, 2)" in render(kernel_of(wn=32, min_blocks=2))
    s = op.schedule(frag_buffers=2, epilogue="smem")
    assert 'annotate("warp_fragments", 2)' in s.to_python() and 'cache_write("C", "shared")' in s.to_python()
    assert "fb1" not in kernel_of("sm_90a", **WGMMA).name


def test_the_staged_epilogue_needs_16_byte_rows_of_c_and_fits_any_tile():
    for knobs in (dict(epilogue="smem"), dict(WGMMA, epilogue="smem")):
        kernel = kernel_of("sm_90a", **knobs)
        p = op.plan(kernel, op.problem({"M": 64, "N": 64, "K": 64}))
        assert dict(p.alignment)["C"] == 16
        assert dict((b, n) for b, n, _ in op.recipe(kernel).alignment)["C"] == 16
    assert dict(op.plan(kernel_of(), op.problem({"M": 64, "N": 64, "K": 64})).alignment)["C"] == 4
    # 16 rows of fp32 a warp: 8 warps of 64x64 need 8 * 16 * 272 bytes, more than 2 stages of 128x256x16
    small = dict(bn=256, bk=16, stages=2, epilogue="smem")
    assert op.shared_bytes(dict(op.default_knobs(), **small)) == 8 * 16 * (64 * 4 + 16)
    kernel_of(**small)


def test_kernel_names_carry_dtype_arch_and_knobs():
    assert kernel_of().name.startswith("gemm_f16_sm90_imma_bm128_bn128_bk32_wm64_wn64_st4_ccpasync")
    assert op.kernel(op.default_schedule(), target("sm_80"), op.types("bfloat16")).name.startswith("gemm_bf16_sm80_")
    assert op.kernel(op.default_schedule(), types=op.types("float16", "float32")).name.startswith("gemm_f16of32_sm90_")


# -- legality -------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch,dtype,change,message", [
    ("sm_75", "float16", dict(copy="sync", stages=2), "mma_m16n8k16_f16 needs sm_80 or later; sm_75 lacks it"),
    ("sm_75", "float16", dict(instr="wmma", smem="pad", pad=8, ldmatrix=False, stages=2),
     "cp_async needs sm_80 or later; sm_75 lacks it"),
    ("sm_75", "bfloat16", dict(instr="wmma", smem="pad", pad=8, ldmatrix=False, copy="sync", stages=2),
     "bf16 needs sm_80 or later; sm_75 lacks it"),
    ("sm_90", "float16", dict(wn=24), "the warp tile 24 divides the block tile 128"),
    ("sm_90", "float16", dict(bn=96, wn=12), r"knob wn=12 is outside its range \(allowed: a multiple of 8 in 8..256\)"),
    ("sm_90", "float16", dict(instr="wmma", smem="pad", pad=8, ldmatrix=False, bn=96, wn=24),
     r"wmma.m16n16k16 shape 16x16x16 divides the warp tile: 24 % 16 != 0"),
    ("sm_90", "float16", dict(wm=24, bm=96), r"knob wm=24 is outside its range \(allowed: a multiple of 16 in 16..128"),
    ("sm_90", "float16", dict(bk=8), r"knob bk=8 is outside its range \(allowed: a multiple of 16 in 16..64\)"),
    ("sm_86", "float16", dict(bk=64), "131072 bytes of shared memory > 101376 on sm_86"),
    ("sm_90", "float16", dict(bm=256, bn=256, wm=16, wn=32), "4096 threads.*1024 threads per block"),
    ("sm_90", "float16", dict(wm=128, wn=128), "registers"),
    ("sm_90", "float16", dict(copy="sync", stages=3), "at most 2 stages"),
    ("sm_90", "float16", dict(stages=1), "2..6 stages"),
    ("sm_90", "float16", dict(pad=4, smem="pad"), r"knob pad=4 is not one of its choices \(allowed: 0, 8, 16\)"),
    ("sm_90", "float16", dict(pad=8), "XOR-swizzled layout has no padding"),
    ("sm_90", "float16", dict(instr="wmma", ldmatrix=False), "load_matrix_sync reads plain strided rows"),
    ("sm_90", "float16", dict(instr="wmma", smem="pad", pad=8), "wmma loads its own fragments"),
    ("sm_90", "float16", dict(frag_buffers=2, copy="sync", stages=2),
     r"annotate\(warp_fragments\): 2 is illegal .limit: fragments double-buffered across tiles need a cp.async "
     r"pipeline of 3\+ stages, not 2 stage\(s\) copied by sync; allowed: 1\)"),
    ("sm_90", "float16", dict(frag_buffers=2, stages=2), "3\\+ stages, not 2 stage"),
    ("sm_90", "float16", dict(frag_buffers=2, bk=48), "an even number of k16 steps a tile: bk 32 or 64, not 48"),
    ("sm_90", "float16", dict(wn=32, min_blocks=2, frag_buffers=2),
     r"annotate\(min_blocks\): 2 is illegal .limit: 2 blocks of 256 threads leave 128 registers a thread, the tile "
     r"needs ~152 \(2048 threads per SM\); allowed: 1\)"),
    ("sm_90", "float16", dict(bn=256, min_blocks=2), "2 blocks of 256 threads leave 128 registers a thread, the tile needs ~200"),
])
def test_illegal_schedules_say_why_with_the_numbers(arch, dtype, change, message):
    with pytest.raises(ScheduleError, match=message):
        kernel_of(arch, dtype, **change)


WGMMA = dict(instr="wgmma", bm=128, bn=256, bk=64, wm=64, wn=256, stages=4, copy="tma", pad=0, smem="xor",
             ldmatrix=False, swizzle=8, ws=True)


@pytest.mark.parametrize("arch,change,message", [
    ("sm_80", {}, "wgmma needs sm_90a .an arch-specific target"),
    ("sm_90", {}, "wgmma needs sm_90a .an arch-specific target: no other arch runs it.; sm_90 lacks it"),
    ("sm_90a", dict(bk=32), r"split\(k\): 32 is illegal .limit: K is read 64 at a time"),
    ("sm_90a", dict(wn=64), "wgmma spans the block's whole width: wn == bn"),
    ("sm_90a", dict(copy="cp_async"), "wgmma's tiles arrive by TMA"),
    ("sm_90a", dict(bm=192, wm=64), "3 consumer warpgroups > 2"),
    ("sm_90a", dict(bm=96, wm=48), r"whole m64 tiles"),
    ("sm_90a", dict(bn=320, wn=320), "knob bn of gemm; allowed: a multiple of 8 in 8..256"),
    ("sm_90a", dict(bm=256, wm=128), r"263232 bytes of shared memory > 232448 on sm_90a"),
    ("sm_90a", dict(ldmatrix=True), "wgmma reads its operands from shared memory itself"),
    ("sm_90a", dict(bm=256, wm=128, stages=2), "~296 registers per thread"),
    ("sm_90a", dict(instr="mma", wn=64, bk=32, ldmatrix=True, ws=False), "TMA fills 128-byte swizzled rows: K is read 64 at a time"),
    ("sm_90a", dict(stages=2, bm=256, wm=128, bn=256, wn=256, epilogue="smem"),
     r"the staged C tile \(135168 bytes of float16\) reuses the 131072 bytes of the stages"),
])
def test_illegal_wgmma_schedules_say_why(arch, change, message):
    with pytest.raises(ScheduleError, match=message):
        op.kernel(op.schedule_from_knobs(**dict(WGMMA, **change)), target(arch), F16)


@pytest.mark.parametrize("step", [("annotate", "warp_specialize", 1), ("annotate", "cluster", 2)])
def test_the_hopper_steps_are_refused_for_mma_by_name(step):   # (cache_write(C, shared) serves mma too)
    mma = op.schedule_from_knobs(**dict(WGMMA, instr="mma", wn=64, bk=32, ldmatrix=True, copy="cp_async"))
    prim, target_, value = step
    with pytest.raises(ScheduleError, match="applies only with instr wgmma, not instr=mma"):
        op.kernel(getattr(mma, prim)(target_, value), target("sm_90a"), F16)


def test_wgmma_binds_warpgroups_and_names_only_its_knobs():
    s = op.schedule(**WGMMA)
    assert 'bind("i.1", "warpgroup")' in s.to_python() and 'annotate("warp_specialize", 1)' in s.to_python()
    assert kernel_of("sm_90a", **WGMMA).name == "gemm_f16_sm90a_iwgmma_bm128_bn256_bk64_wm64_wn256_st4_ctma_ws1_edirect_cl1_sw8"
    warp = Schedule.from_json(s.to_json().replace('"warpgroup"', '"warp"'))
    with pytest.raises(ScheduleError, match="wgmma.m64nNk16 is issued by a warpgroup"):
        op.kernel(warp, target("sm_90a"), F16)


def test_the_wgmma_plan_encodes_tensor_maps_and_pads_unaligned_rows():
    kernel = kernel_of("sm_90a", **WGMMA)
    p = op.plan(kernel, op.problem({"M": 300, "N": 520, "K": 1000}))
    (launch,) = p.launches
    assert launch.args == ("tmA", "tmB", "C", "M", "N", "K") and launch.grid == (3, 3, 1) and launch.block == (384, 1, 1)
    assert launch.shared_bytes == 4 * 2 * (128 + 256) * 64 + 1024 + 4 * 16
    assert [(t.buffer, t.rows, t.cols, t.box_rows, t.box_cols) for t in p.tensor_maps] == \
        [("A", 300, 1000, 128, 64), ("B", 1000, 520, 64, 64)]
    clustered = op.plan(op.kernel(op.schedule(**dict(WGMMA, cluster=2)), target("sm_90a"), F16),
                        op.problem({"M": 300, "N": 520, "K": 1000}))
    assert clustered.launches[0].grid == (3, 4, 1)              # whole clusters of 2 along M
    cluster_kernel = op.kernel(op.schedule(**dict(WGMMA, cluster=2)), target("sm_90a"), F16)
    with pytest.raises(UsageError, match="needs 65536 block rows of 128"):   # 65535 rows, rounded to clusters
        op.plan(cluster_kernel, op.problem({"M": 65535 * 128, "N": 256, "K": 64}))
    # Rows TMA cannot read (K or N not a multiple of 8): the operand is copied into a workspace of padded
    # rows first, and its map reads the copy (its own sizes, the padded pitch); C is stored at any N.
    for sizes, b, rows, cols in (({"M": 64, "N": 64, "K": 37}, "A", 64, 37), ({"M": 64, "N": 63, "K": 64}, "B", 64, 63)):
        p = op.plan(kernel, op.problem(sizes))
        pad, main = p.launches
        assert pad.symbol == kernel.name + "_pad" and pad.args == (b, f"{b}_pitched", "M" if b == "A" else "K",
                                                                   "K" if b == "A" else "N")
        assert main.symbol == kernel.name and [w.name for w in p.workspaces] == [f"{b}_pitched"]
        assert p.workspaces[0].count == rows * ((cols + 7) // 8 * 8)
        m = {t.name: t for t in p.tensor_maps}[f"tm{b}"]
        assert (m.buffer, m.rows, m.cols, m.pitch, m.dtype) == (f"{b}_pitched", rows, cols, (cols + 7) // 8 * 8, "float16")
        assert b not in dict(p.alignment)


def test_schedule_for_takes_wgmma_on_sm_90a_at_any_size():
    h100 = target("sm_90a")
    big = op.knobs_from_schedule(op.schedule_for(op.problem({"M": 4096, "N": 4096, "K": 4096}), h100))
    assert (big["instr"], big["bm"], big["bn"], big["split_k"]) == ("wgmma", 128, 256, 1)
    ragged = op.knobs_from_schedule(op.schedule_for(op.problem({"M": 4096, "N": 4096, "K": 4095}), h100))
    assert ragged["instr"] == "wgmma"                               # A copied into padded rows first
    assert op.knobs_from_schedule(op.schedule_for(op.problem({"M": 4096, "N": 4096, "K": 4096})))["instr"] == "mma"
    batched = op.problem({"M": 512, "N": 512, "K": 512}, batch=4)
    assert op.knobs_from_schedule(op.for_problem(batched).schedule_for(batched, h100))["instr"] == "mma"


@pytest.mark.emulate
def test_the_emulator_refuses_wgmma_by_name():
    with pytest.raises(CompileError, match="the CPU emulator does not support .*proven on the GPU"):
        validate(op, HOPPER[0].schedule, op.problem({"M": 64, "N": 64, "K": 64}), backend="emulate", arch="sm_90a")


@pytest.mark.nvrtc
@pytest.mark.parametrize("dtype,out", TYPES)
@pytest.mark.parametrize("step", range(len(HOPPER)), ids=lambda i: f"step{len(STEPS) + i + 1}")
def test_hopper_steps_compile_to_hgmma_and_tma(step, dtype, out):
    kernel = op.kernel(HOPPER[step].schedule, target("sm_90a"), op.types(dtype, out))
    facts = sass_facts(kernel)
    assert set(facts) == {kernel.name, kernel.name + "_pad"}       # the product, the padded copy of an operand
    pad, _ = facts.pop(kernel.name + "_pad")
    assert pad.spill_bytes == 0 and pad.stg128 > 0, pad             # 16-byte chunks of the padded rows
    (f, ops), = facts.values()
    assert f.spill_bytes == 0 and f.local_ops == 0 and f.registers <= 168, f
    assert f.hgmma > 0 and f.tma > 0 and f.hmma == 0 and f.ldg == 0, f
    k = op.knobs_from_schedule(HOPPER[step].schedule)
    assert f.hgmma == 4 * k["wm"] // 64    # the k-tile of 64: four unrolled k16 steps a warpgroup's m64 tile


def test_legal_on_the_archs_that_have_the_instructions():
    kernel_of("sm_80")
    kernel_of("sm_80", "bfloat16")
    kernel_of("sm_75", **knobs_of(STEPS[0]))
    kernel_of("sm_86", stages=3)                                    # 73728 bytes fit sm_86's 99 KB


def test_the_tuning_space_is_mostly_legal():
    space = list(op.space(op.problem(), target()))     # sm_90: no wgmma in the space
    legal = 0
    for k in space:
        try:
            op.kernel(op.schedule_from_knobs(**k), types=F16)
            legal += 1
        except ScheduleError:
            pass
    assert 200 <= legal <= len(space) <= 1000, (legal, len(space))


# -- plan, heuristic, numbers ---------------------------------------------------------------------
def test_the_plan_picks_the_16_byte_kernel_only_where_rows_are_aligned():
    kernel = kernel_of()
    p = op.plan(kernel, op.problem({"M": 4096, "N": 4096, "K": 4096}))
    (launch,) = p.launches
    assert launch.symbol == kernel.name and launch.grid == (32, 32, 1) and launch.block == (128, 1, 1)
    assert launch.shared_bytes == 4 * 2 * (128 * 32 + 32 * 128) and dict(p.alignment) == {"A": 16, "B": 16, "C": 4}
    for sizes in ({"M": 64, "N": 64, "K": 37}, {"M": 64, "N": 63, "K": 64}):
        p = op.plan(kernel, op.problem(sizes))
        assert p.launches[0].symbol == kernel.name + "_unaligned" and p.alignment == ()
    f32 = op.kernel(op.default_schedule(), types=op.types("float16", "float32"))
    assert dict(op.plan(f32, op.problem({"M": 8, "N": 8, "K": 8}, out_dtype="float32")).alignment)["C"] == 8


def test_schedule_for_takes_more_blocks_for_small_problems():
    big = op.knobs_from_schedule(op.schedule_for(op.problem({"M": 4096, "N": 4096, "K": 4096})))
    small = op.knobs_from_schedule(op.schedule_for(op.problem({"M": 256, "N": 256, "K": 4096})))
    assert (big["bm"], big["bn"], big["split_k"]) == (128, 128, 1)   # the fastest mma.sync tile measured on the H100
    assert 256 // small["bm"] * 256 // small["bn"] * small["split_k"] >= 16    # 4 tiles of 128x128 would leave SMs idle
    for sizes in ({"M": 1, "N": 1, "K": 1}, {"M": 64, "N": 8192, "K": 512}, {"M": 5000, "N": 3000, "K": 100}):
        op.kernel(op.schedule_for(op.problem(sizes)), types=F16)     # legal


@pytest.mark.parametrize("dtype,out", TYPES)
def test_inputs_are_exact_small_integers_in_the_storage_type(dtype, out):
    p = op.problem({"M": 5, "N": 6, "K": 7}, dtype=dtype, out_dtype=out)
    x = op.make_inputs(p, np.random.default_rng(1))
    assert x["A"].dtype == np.dtype("float16" if dtype == "float16" else "uint16") and x["A"].shape == (5, 7)
    a = p.dtype("A").decode(x["A"])
    assert np.array_equal(a, np.round(a)) and np.abs(a).max() <= 3
    assert op.bytes_moved(p) == 2 * (5 * 7 + 7 * 6) + p.dtype("C").itemsize * 5 * 6 and op.flops(p) == 2 * 5 * 6 * 7
    assert op.math(p) == "fp16"


@pytest.mark.parametrize("dtype,out", TYPES)
def test_the_error_passes_correct_rounding_and_fails_a_wrong_element(dtype, out):
    p = op.problem({"M": 40, "N": 30, "K": 600}, dtype=dtype, out_dtype=out)
    x = op.make_inputs(p, np.random.default_rng(2))
    ref = op.reference(x, p)["C"]
    c = p.dtype("C")
    rounded = c.decode(c.encode(ref))
    assert op.error("C", rounded, ref, x, p) <= op.tolerance(p)
    for i in (0, 7, ref.size - 1):
        wrong = rounded.copy().ravel()
        wrong[i] = c.decode(c.encode(np.array([ref.ravel()[i] + max(4.0, 0.02 * abs(ref.ravel()[i]))])))[0]
        assert op.error("C", wrong.reshape(ref.shape), ref, x, p) > op.tolerance(p), i
    nan = rounded.copy()
    nan[3, 3] = np.nan
    assert op.error("C", nan, ref, x, p) == np.inf
    if out == "float32":   # fp32 output is exact: one unit off anywhere fails
        one = rounded.copy()
        one[5, 5] += 1
        assert op.error("C", one, ref, x, p) > op.tolerance(p)


# -- SASS (NVRTC) ---------------------------------------------------------------------------------
def sass_facts(kernel):
    c = compile_cuda(render(kernel), kernel.arch, kernel.name)
    ops = _sass(c.cubin)
    return {f.symbol: (f, ops[f.symbol]) for f in facts_of(c)}


def count(ops, prefix, width=""):
    return sum(n for o, n in ops.items() if o.startswith(prefix) and width in o)


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("step", range(len(STEPS)), ids=lambda i: f"step{i + 1}")
def test_ladder_sass(step, dtype, arch):
    knobs = knobs_of(STEPS[step])
    kernel = op.kernel(STEPS[step].schedule, target(arch), op.types(dtype))
    facts = sass_facts(kernel)
    assert set(facts) == {kernel.name, kernel.name + "_unaligned"}
    for sym, (f, ops) in facts.items():
        assert f.spill_bytes == 0 and f.local_ops == 0, (sym, f)
        assert f.hmma > 0, sym
        if knobs["ldmatrix"]:
            assert f.ldsm > 0, sym
        aligned = not sym.endswith("_unaligned")
        ldg128 = count(ops, "LDG.", ".128")                            # LDG.E.128, not LDGSTS
        ldgsts = count(ops, "LDGSTS")
        if knobs["copy"] == "cp_async":
            assert (ldgsts > 0) == aligned and ldg128 == 0, (sym, ldgsts, ldg128)
        else:
            assert (ldg128 > 0) == aligned and ldgsts == 0, (sym, ldg128, ldgsts)
        assert f.registers <= 255


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype,out", TYPES[2:])
def test_float32_output_compiles_without_spills(dtype, out, arch):
    kernel = op.kernel(op.default_schedule(), target(arch), op.types(dtype, out))
    for sym, (f, _) in sass_facts(kernel).items():
        assert f.spill_bytes == 0 and f.local_ops == 0 and f.hmma > 0, (sym, f)


MMA_VARIANTS = (dict(frag_buffers=2), dict(epilogue="smem"), dict(frag_buffers=2, epilogue="smem", stages=3),
                dict(frag_buffers=2, epilogue="smem", bn=256, bk=64, stages=3, swizzle=8),
                dict(wn=32, min_blocks=2, epilogue="smem"))


@pytest.mark.nvrtc
@pytest.mark.parametrize("dtype,out", [("float16", None), ("bfloat16", "float32")])
@pytest.mark.parametrize("knobs", MMA_VARIANTS, ids=lambda k: "_".join(f"{n}{v}" for n, v in k.items()))
def test_fragments_across_tiles_and_the_staged_epilogue_sass(knobs, dtype, out):
    """The aligned kernel's interior loop (the shorter of the two: the edge blocks' copies test bounds)
    keeps every register: no local memory; each tile of the loop (the pipeline's stages unrolled: `stages` tiles a
    loop) loads bk/16 steps of mi + ni/2 ldmatrix.x4 (fb2: the next tile's first among them); the staged epilogue
    stores 16-byte chunks of C in the aligned kernel only."""
    from kernelgen.inspect import hot_loops
    kernel = op.kernel(op.schedule(**knobs), target("sm_90"), op.types(dtype, out))
    k = op.knobs_from_schedule(kernel.schedule)
    c = compile_cuda(render(kernel), kernel.arch, kernel.name)
    facts = {f.symbol: f for f in facts_of(c)}
    per_tile = 64 * k["bk"] // 16 * (k["wm"] // 16) * (k["wn"] // 8) // 64
    for sym, loops in hot_loops(c.cubin, per_tile, "HMMA").items():
        assert len(loops) == 2, (sym, len(loops))
        inner = min(loops, key=len)
        if not sym.endswith("_unaligned"):   # (the element-wise fallback may reload a register there)
            assert not [o for o in inner if o.startswith(("LDL", "STL"))], sym
        tiles, rest = divmod(sum(o.startswith("HMMA") for o in inner), per_tile)
        assert rest == 0 and tiles in (1, k["stages"]), (sym, tiles, rest)
        ldsm = sum(o.startswith("LDSM") for o in inner)
        assert ldsm == tiles * k["bk"] // 16 * (k["wm"] // 16 + k["wn"] // 16), (sym, ldsm)
        assert facts[sym].registers <= 65536 // (op.threads(k) * k["min_blocks"]) and facts[sym].registers <= 255
        assert (facts[sym].stg128 > 0) == (k["epilogue"] == "smem" and not sym.endswith("_unaligned")), sym


@pytest.mark.nvrtc
def test_the_wmma_step_compiles_for_sm_75():
    kernel = op.kernel(STEPS[0].schedule, target("sm_75"), F16)
    for sym, (f, _) in sass_facts(kernel).items():
        assert f.hmma > 0 and f.spill_bytes == 0, (sym, f)


# -- emulator -------------------------------------------------------------------------------------
@pytest.mark.emulate
@pytest.mark.parametrize("dtype,out", TYPES[:3])
@pytest.mark.parametrize("step", range(len(STEPS)), ids=lambda i: f"step{i + 1}")
def test_ladder_on_the_emulator_at_awkward_sizes(step, dtype, out):
    for sizes in AWKWARD:
        v = validate(op, STEPS[step].schedule, op.problem(sizes, dtype=dtype, out_dtype=out), backend="emulate",
                     check=True, order="random")
        assert v.ok, (sizes, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("dtype,out", TYPES[:3])
def test_blocks_inside_and_across_the_edges_on_the_emulator(dtype, out):
    # The default's 128x256 tile: block (0, 0) lies inside C (no bounds tests) beside ragged ones.
    for sizes in ({"M": 136, "N": 264, "K": 64}, {"M": 136, "N": 264, "K": 40}):
        v = validate(op, op.default_schedule(), op.problem(sizes, dtype=dtype, out_dtype=out), backend="emulate",
                     order="reverse")
        assert v.ok, (sizes, v.summary())


@pytest.mark.emulate
def test_mma_without_ldmatrix_and_other_knobs_on_the_emulator():
    for over in (dict(ldmatrix=False), dict(ldmatrix=False, smem="pad", pad=8), dict(bk=64, stages=2),
                 dict(bm=64, bn=64, wm=32, wn=32, bk=16, copy="sync", stages=1, smem="pad", pad=16),
                 dict(bm=64, bn=64, wm=16, wn=8, bk=16, stages=2),
                 dict(bm=64, bn=64, wm=32, wn=64, swizzle=2)):
        for sizes in ({"M": 70, "N": 72, "K": 48}, {"M": 33, "N": 40, "K": 37}):
            v = validate(op, op.schedule(**over), op.problem(sizes), backend="emulate", check=True)
            assert v.ok, (over, sizes, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("stages", [5, 6])
def test_deep_cp_async_pipelines_on_the_emulator(stages):
    """5 and 6 stages: K shorter than the pipeline (the fill copies zeros) and K of 13 tiles (the ring wraps twice
    and ends mid-round), races and bounds checked."""
    knobs = dict(bm=64, bn=64, wm=32, wn=32, stages=stages, epilogue="smem")
    for sizes in ({"M": 70, "N": 72, "K": 48}, {"M": 64, "N": 64, "K": 416}):
        v = validate(op, op.schedule(**knobs), op.problem(sizes), backend="emulate", check=True, order="random")
        assert v.ok, (knobs, sizes, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_fragments_across_tiles_and_the_staged_epilogue_on_the_emulator(layout):
    """Race and bounds checks on: K of several tiles (the fragments cross tiles) beside 1, ragged edges,
    aligned sizes (the staged epilogue) and not (the direct one)."""
    for knobs, (dtype, out) in zip((dict(frag_buffers=2, epilogue="smem"), dict(frag_buffers=2, stages=3),
                                    dict(epilogue="smem", bn=64, wn=32, bk=64, stages=3, frag_buffers=2, swizzle=2)),
                                   TYPES[:3]):
        for sizes in AWKWARD + ({"M": 136, "N": 264, "K": 72}, {"M": 136, "N": 136, "K": 104}):
            v = validate(op, op.schedule(**knobs), op.problem(sizes, dtype=dtype, out_dtype=out, layout=layout),
                         backend="emulate", check=True, order="random")
            assert v.ok, (knobs, sizes, v.summary())


# -- GPU ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype,out", TYPES)
@pytest.mark.parametrize("knobs", MMA_VARIANTS, ids=lambda k: "_".join(f"{n}{v}" for n, v in k.items()))
def test_fragments_across_tiles_and_the_staged_epilogue_on_the_gpu(knobs, dtype, out):
    for layout in ("NN", "TT"):
        for sizes in AWKWARD + ({"M": 136, "N": 264, "K": 64}, {"M": 1024, "N": 1024, "K": 1024},
                                {"M": 1000, "N": 1032, "K": 1000}, {"M": 1000, "N": 1030, "K": 999}):
            p = op.problem(sizes, dtype=dtype, out_dtype=out, layout=layout)
            v = validate(op, op.schedule(**knobs), p, backend="gpu")
            assert v.ok, (layout, sizes, v.summary())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,out", TYPES)
@pytest.mark.parametrize("step", range(len(STEPS)), ids=lambda i: f"step{i + 1}")
def test_ladder_on_the_gpu(step, dtype, out):
    for sizes in AWKWARD + ({"M": 136, "N": 264, "K": 64}, {"M": 1024, "N": 1024, "K": 1024},
                            {"M": 1000, "N": 1030, "K": 999}):
        v = validate(op, STEPS[step].schedule, op.problem(sizes, dtype=dtype, out_dtype=out), backend="gpu")
        assert v.ok, (sizes, v.summary())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,out", TYPES)
@pytest.mark.parametrize("step", range(len(HOPPER)), ids=lambda i: f"step{len(STEPS) + i + 1}")
def test_hopper_steps_on_the_gpu(step, dtype, out):
    from kernelgen import gpu
    if not gpu.device().has("wgmma"):
        pytest.skip(f"{gpu.device().arch} has no wgmma")
    sched = HOPPER[step].schedule
    for sizes in op.test_problems_for(sched) + ({"M": 1000, "N": 1032, "K": 1000}, {"M": 2048, "N": 2048, "K": 2048}):
        v = validate(op, sched, op.problem(sizes, dtype=dtype, out_dtype=out), backend="gpu")
        assert v.ok, (sizes, v.summary())


@pytest.mark.gpu
def test_wgmma_space_samples_on_the_gpu():
    from kernelgen import gpu
    t = gpu.device()
    if not t.has("wgmma"):
        pytest.skip(f"{t.arch} has no wgmma")
    problem = op.problem({"M": 520, "N": 776, "K": 1096})
    for k in itertools.islice((k for k in op.space(problem, t) if k["instr"] == "wgmma"), 0, None, 11):
        try:
            sched = op.schedule_from_knobs(**k)
            op.kernel(sched, t, F16)
        except ScheduleError:
            continue
        v = validate(op, sched, problem, backend="gpu")
        assert v.ok, (sched.to_python(), v.summary())


@pytest.mark.gpu
def test_heuristic_and_space_samples_on_the_gpu():
    problem = op.problem({"M": 1024, "N": 1024, "K": 1024})
    scheds = [op.schedule_for(problem)]
    for k in itertools.islice(op.space(problem, target()), 0, None, 17):
        try:
            op.kernel(op.schedule_from_knobs(**k), types=F16)
            scheds.append(op.schedule_from_knobs(**k))
        except ScheduleError:
            pass
    for s in scheds:
        v = validate(op, s, problem, backend="gpu")
        assert v.ok, (s.to_python(), v.summary())


def test_the_mma_sync_probe_variants_are_legal_and_distinct_without_a_gpu():
    import importlib.util
    spec = importlib.util.spec_from_file_location("mma_sync_probe", "bench/mma_sync_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    names = set()
    for dtype in ("float16", "bfloat16"):
        for label, over in probe.VARIANTS:
            knobs = probe.knobs_of(op, over)
            kernel = op.kernel(op.schedule_from_knobs(**knobs), target("sm_90a"), op.types(dtype))
            names.add(kernel.name)
            assert probe.blocks_per_sm(op, kernel, None, target("sm_90a")) >= 1, label
    assert len(names) == 2 * len(probe.VARIANTS)
    assert probe.VARIANTS[0][1] == {k: v for k, v in knobs_of(STEPS[3]).items() if v != op.default_knobs()[k]}


def test_the_example_ladder_is_the_ops_ladder():
    import importlib.util
    spec = importlib.util.spec_from_file_location("ex", "examples/gemm_ladder.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    assert len(ex.LADDER) == len(LADDER)
    for sched, step in zip(ex.LADDER.values(), LADDER):
        assert op.knobs_from_schedule(sched) == op.knobs_from_schedule(step.schedule)
