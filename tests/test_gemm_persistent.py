"""Persistent wgmma blocks (annotate(persistent, coop|pingpong)): what a schedule may combine them with and
the error that says so, the plan's one-block-an-SM grid and its recipe, SASS facts (no spills, the HGMMA
steps), and on the GPU awkward sizes and sizes with several tiles a block, with a fused epilogue and fp32 C.
The emulator refuses wgmma by name (tests/test_op_gemm.py), so these kernels are proven on the GPU."""
import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError
from kernelgen.ops.gemm import WGMMA_HEURISTIC
from kernelgen.recipe import evaluate
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("gemm")
H100 = target("sm_90a")
F16 = op.types("float16")
COOP = dict(WGMMA_HEURISTIC, persistent="coop")                  # 4 stages: C staged 32 rows at a time
COOP3 = dict(COOP, stages=3)                                       # 3 stages: 64 rows at a time
COOP192 = dict(WGMMA_HEURISTIC, bn=192, wn=192, persistent="coop", epilogue="direct")
PINGPONG = dict(WGMMA_HEURISTIC, bm=128, wm=128, bn=128, wn=128, persistent="pingpong")
PINGPONG64 = dict(WGMMA_HEURISTIC, bm=64, wm=64, bn=256, wn=256, stages=3, persistent="pingpong", epilogue="direct")
ASYNC = dict(COOP3, epilogue="async")                              # the whole tile staged, stored by spare warps
ASYNC192 = dict(ASYNC, bn=192, wn=192, stages=4)                   # a 16-bit 128x192 tile fits beside 4 stages
ASYNC192F = dict(ASYNC192, stages=3)                               # a fp32 one (a fused epilogue) beside 3
VARIANTS = (COOP, COOP3, COOP192, PINGPONG, PINGPONG64, ASYNC, ASYNC192)


def kernel(knobs, types=F16, layout="NN"):
    return op.kernel(op.schedule_from_knobs(**knobs), H100, types, layout)


@pytest.mark.parametrize("change,message", [
    (dict(COOP, ws=False), r"persistent blocks need annotate\(warp_specialize, 1\)"),
    (dict(COOP, split_k=2), r"persistent blocks need annotate\(split_k, 1\)"),
    (dict(COOP, cluster=2), r"persistent blocks need annotate\(cluster, 1\)"),
    (dict(PINGPONG, wm=64), "ping-pong gives each consumer warpgroup a whole tile: wm == bm"),
    (dict(PINGPONG, bn=256, wn=256), "a 128x256 tile holds ~296 registers a thread > 232"),
    (dict(COOP, bm=256, wm=128), r"297024 bytes of shared memory > 232448 on sm_90a"),   # 4 stages of 256x256, 2 areas
    (dict(PINGPONG, epilogue="async"), r"cache_write\(C\): 'shared_async' is illegal .*persistent, coop\) only"),
    (dict(WGMMA_HEURISTIC, epilogue="async"), r"'shared_async' is illegal"),
    (dict(ASYNC, stages=4), r"265296 bytes of shared memory > 232448"),     # 4 stages and a whole staged tile
])
def test_persistent_schedules_that_cannot_run_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        kernel(change)


def test_the_staging_areas_are_sized_in_cs_type_and_fit_beside_the_stages():
    """fp16 C stages in 2-byte values; fp32 C (or a fused epilogue's accumulators) in 4-byte ones. Each
    consumer warpgroup stages 64 rows at a time, or 32 where 64 would not fit beside the stages; where
    neither fits the error names the staged size."""
    rows = lambda knobs, types=F16: dict(kernel(knobs, types).params)["pass_rows"]
    assert (rows(COOP), rows(COOP3), rows(PINGPONG)) == (32, 64, 64)
    assert kernel(COOP).static_smem == 4 * 2 * (128 + 256) * 64 + 2 * 32 * (2 * 256 + 16) + 1024 + 4 * 16
    assert rows(COOP3, op.types("float16", "float32")) == 32
    with pytest.raises(ScheduleError, match=r"with C staged as 4-byte values > 232448"):
        kernel(COOP, op.types("float16", "float32"))
    assert rows(PINGPONG, op.types("float16", "float32")) == 64    # 4 stages of 32 KB and two 33 KB areas


def test_an_epilogue_without_a_residual_runs_on_the_fragments_and_stages_cs_own_type():
    """bias and gelu need a fragment's columns only: the tile is staged as C's values (the 4-stage block
    fits), the epilogue's code is emitted once for the tile; a residual is read on the way out, from
    fp32 accumulators (the 4-stage block then does not fit)."""
    def compiled(epilogue, knobs=COOP):
        p = op.problem({"M": 256, "N": 256, "K": 64}, dtype="float16", epilogue=epilogue)
        o = op.for_problem(p)
        k = o.kernel(o.schedule_from_knobs(**knobs), H100, p.types)
        return k, render(k)
    k, src = compiled("gelu(acc + bias)")
    assert dict(k.params)["ep_regs"] and dict(k.params)["staged_type"] == "__half"
    assert src.count("_ep(acc[i][j][r]") == 1 and "tanh.approx.f32" in src     # gelu last, into fp16
    k, src = compiled("gelu(acc + bias) + res", COOP3)
    assert not dict(k.params)["ep_regs"] and dict(k.params)["staged_type"] == "float"
    assert "tanh.approx" not in src                                           # gelu is not the last step
    with pytest.raises(ScheduleError, match=r"bytes of shared memory > 232448"):
        compiled("gelu(acc + bias) + res")


def test_persistent_kernels_are_named_by_the_knob_and_the_others_are_not():
    assert kernel(COOP).name.endswith("_esmem_cl1_pscoop_sw8")
    assert kernel(PINGPONG).name.endswith("_pspingpong_sw8")
    assert "_ps" not in kernel(WGMMA_HEURISTIC).name               # the names before the knob existed
    assert "_ps" not in op.kernel(op.default_schedule(), H100, F16).name


def test_the_plan_launches_one_block_an_sm_or_a_tile():
    tiles = lambda M, N, bm, bn: -(-M // bm) * -(-N // bn)
    for knobs in VARIANTS:
        k = kernel(knobs)
        for M, N in ((3001, 2056), (100, 300), (1, 8)):
            p = op.plan(k, op.problem({"M": M, "N": N, "K": 200}), H100)
            launch = p.launches[-1]                                 # (after B's padded copy where N = 300)
            assert launch.symbol == k.name and launch.grid == (min(tiles(M, N, knobs["bm"], knobs["bn"]), H100.sms), 1, 1)
            assert launch.block == (384, 1, 1)
        run = evaluate(op.recipe(k), {"M": 3001, "N": 2056, "K": 200}, sms=10)
        assert run.launches[-1].grid == (10, 1, 1)                  # the device's own multiprocessor count


def test_schedule_for_takes_a_persistent_kernel_only_with_k_whole():
    for sizes in ({"M": 8192, "N": 768, "K": 3072}, {"M": 16, "N": 512, "K": 50000}, {"M": 5000, "N": 3001, "K": 2000}):
        k = op.knobs_from_schedule(op.schedule_for(op.problem(sizes), H100))
        assert k["persistent"] == "off" or k["split_k"] == 1, (sizes, k)
        p = op.problem(sizes)
        op.plan(op.kernel(op.schedule_for(p, H100), H100, p.types, p.layout), p, H100)


@pytest.mark.nvrtc
@pytest.mark.parametrize("knobs", VARIANTS, ids=lambda k: f"{k['persistent']}{k['bm']}x{k['bn']}{k['epilogue']}")
@pytest.mark.parametrize("dtype,out,epilogue", [("float16", None, None), ("bfloat16", "float32", None),
                                                ("float16", None, "gelu(acc + bias)")])
def test_persistent_kernels_compile_without_spills(knobs, dtype, out, epilogue):
    from kernelgen.inspect import inspect_kernel
    if (out == "float32" or epilogue) and knobs is COOP:    # 4-byte staging areas do not fit beside 4 stages
        knobs = COOP3
    if (out == "float32" or epilogue) and knobs in (ASYNC, ASYNC192):   # nor a whole tile of them beside 4
        knobs = ASYNC192F
    p = op.problem({"M": 256, "N": 256, "K": 64}, dtype=dtype, out_dtype=out, epilogue=epilogue)
    o = op.for_problem(p)
    k = o.kernel(o.schedule_from_knobs(**knobs), H100, p.types)
    (f,) = [f for f in inspect_kernel(k, "sm_90a") if f.symbol == k.name]
    # (async with a fused epilogue: ptxas stores one 4-byte value before the setmaxnreg that splits the
    # warpgroups and loads it once a tile, outside the main loop: 4 bytes stored, 16 loaded)
    assert f.spill_bytes <= (20 if knobs["epilogue"] == "async" else 0), f
    # Accumulators defined by anything but wgmma inside the pipeline serialise the MMAs (ptxas C7515):
    # zeroing them for each tile did, at 0.5-0.75x the speed of the one-tile kernel on the H100.
    log = compile_cuda(render(k), "sm_90a", k.name).log
    assert "Potential Performance Loss" not in log, log
    assert f.hgmma == 4 * knobs["wm"] // 64 and f.tma > 0, f      # four k16 steps a warpgroup's m64 tile


# -- GPU --------------------------------------------------------------------------------------------
def _hopper():
    from kernelgen import gpu
    if not gpu.device().has("wgmma"):
        pytest.skip(f"{gpu.device().arch} has no wgmma")
    return gpu.device()


# Several tiles a block (more tiles than 2 x 132 SMs), ragged in M, N and K; N not a multiple of 8 (B
# copied into padded rows, C stored element by element); the wgmma test sizes (M = 1 among them).
MANY = ({"M": 3001, "N": 2056, "K": 200}, {"M": 2900, "N": 2050, "K": 136}, {"M": 4100, "N": 1032, "K": 72})


@pytest.mark.gpu
@pytest.mark.parametrize("knobs", VARIANTS, ids=lambda k: f"{k['persistent']}{k['bm']}x{k['bn']}{k['epilogue']}")
def test_persistent_blocks_on_the_gpu(knobs):
    _hopper()
    sched = op.schedule_from_knobs(**knobs)
    for sizes in MANY + op.test_problems_for(sched):
        for dtype, out in (("float16", None), ("bfloat16", None)):
            v = validate(op, sched, op.problem(sizes, dtype=dtype, out_dtype=out), backend="gpu")
            assert v.ok, (sizes, dtype, v.summary())


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NT", "TN", "TT"])
def test_persistent_blocks_in_every_layout_with_fp32_c_on_the_gpu(layout):
    _hopper()
    for knobs in (PINGPONG, COOP3, ASYNC192F):
        for sizes in MANY[:2]:
            p = op.problem(sizes, dtype="bfloat16", out_dtype="float32", layout=layout)
            v = validate(op, op.schedule_from_knobs(**knobs), p, backend="gpu")
            assert v.ok, (knobs["persistent"], sizes, v.summary())


@pytest.mark.gpu
def test_persistent_blocks_with_a_fused_epilogue_on_the_gpu():
    _hopper()
    for ep, dt in (("gelu(acc + bias) + res", "float16"), ("relu(acc) * 2", "float16"), ("gelu(acc + bias)", "bfloat16")):
        for sizes in ({"M": 33, "N": 17, "K": 40},) + MANY[:2]:
            p = op.problem(sizes, dtype=dt, epilogue=ep, layout="NT")
            for knobs in (PINGPONG, COOP192, COOP3, ASYNC192F) + ((COOP, WGMMA_HEURISTIC) if "res" not in ep else ()):
                v = validate(op.for_problem(p), op.schedule_from_knobs(**knobs), p, backend="gpu")
                assert v.ok, (ep, sizes, knobs["persistent"], v.summary())
