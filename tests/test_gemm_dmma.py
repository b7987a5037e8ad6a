"""fp32 data on the fp64 tensor cores (gemm `--dtype dmma`): each value widened to fp64 (exact), mma.sync m16n8k8
.f64 (four m8n8k4 on sm_80), fp64 accumulators rounded once to fp32. The tf32 path's copies, swizzle and fragment
loads (the two m16n8k8 layouts put A's and B's values in the same places); kernelgen.torch.linear takes it for
float32 tensors where the cost models find it faster than the CUDA-core SGEMM."""
import numpy as np
import pytest

from kernelgen import get_op
from kernelgen.compile import compile_cuda
from kernelgen.errors import KernelgenError
from kernelgen.inspect import facts_of
from kernelgen.ops.gemm import WGMMA_KNOBS
from kernelgen.ops.gemm_cost import choose, fp32_on_dmma
from kernelgen.render import render
from kernelgen.target import target
from kernelgen.validate import validate
from test_gemm_tf32 import LAYOUTS, SMALL, emulated_product   # the same tile and layouts as the tf32 tests

op = get_op("gemm")


def full_precision(shape, rng) -> np.ndarray:
    """fp32 values with all 24 significant bits in use, magnitudes over 2^-6 .. 2^6."""
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 7, shape)).astype(np.float32)


def worst_error(c, a, b) -> float:
    """max |C - A @ B| / (u |A @ B| + 2^-50 (|A| @ |B|)), in float64: <= 1 where every element is within half an
    fp32 ulp of the exact product, up to an fp64 summation's error (u = 2^-24)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    return float(np.max(np.abs(c - ref) / (2.0 ** -24 * np.abs(ref) + 2.0 ** -50 * (np.abs(a64) @ np.abs(b64)))))


@pytest.mark.emulate
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_at_ragged_sizes_on_the_emulator(layout):
    """Small-integer inputs: the exact product. Ragged edges, K of one and of several tiles, odd K and N (the
    element-wise kernel), C staged, K in slices, register copies; races and bounds checked, blocks in random order."""
    for sizes, over in (({"M": 70, "N": 72, "K": 48}, {}), ({"M": 33, "N": 41, "K": 37}, {}),
                        ({"M": 1, "N": 9, "K": 1}, {}), ({"M": 64, "N": 128, "K": 96}, dict(epilogue="smem")),
                        ({"M": 40, "N": 72, "K": 300}, dict(split_k=3)),
                        ({"M": 50, "N": 30, "K": 40}, dict(ldmatrix=False, smem="pad", pad=8, copy="sync", stages=2))):
        p = op.problem(sizes, dtype="dmma", layout=layout)
        v = validate(op, op.schedule(**SMALL, **over), p, backend="emulate", check=True, order="random")
        assert v.ok, (sizes, over, v.summary())


@pytest.mark.emulate
def test_fused_epilogues_and_a_batch_on_the_emulator():
    """bias + GELU and a residual add, applied to the fp64 sums rounded to fp32, at a ragged size; a batch of 3
    products sharing B (stride_b 0) on blockIdx.z."""
    for expr, batch in (("gelu(acc + bias)", None), ("acc + bias + res", None), ("gelu(acc + bias) + res", 3)):
        p = op.problem({"M": 37, "N": 45, "K": 29}, dtype="dmma", layout="NT", epilogue=expr, batch=batch,
                       stride_b=0 if batch else None)
        v = validate(op, op.schedule(**SMALL), p, backend="emulate", check=True)
        assert v.ok, (expr, batch, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("layout", ["NN", "NT"])
def test_every_bit_of_fp32_is_multiplied_on_the_emulator(layout):
    """Inputs with 24 significant bits: dmma's C lies within half an ulp of the exact product (fp64 sums), where
    3xTF32 (22 bits a value) errs by more; a kernel that rounded its inputs anywhere would fail the first."""
    rng = np.random.default_rng(3)
    M, N, K = 40, 48, 72
    a, b = full_precision((M, K), rng), full_precision((K, N), rng)
    errors = {dtype: worst_error(emulated_product(dtype, layout, a, b), a, b) for dtype in ("dmma", "tf32x3")}
    assert errors["dmma"] <= 1.0, errors
    assert errors["tf32x3"] > 4.0, errors


@pytest.mark.parametrize("knobs,arch,message", [
    (WGMMA_KNOBS, "sm_90a", "dmma data runs on mma.sync m16n8k8 .f64"),
    (dict(frag_buffers=2), "sm_90", "rounded where they are used"),
    ({}, "sm_90", "registers per thread"),          # the default's 64x64 warp tiles: 256 fp64 accumulator registers
    (dict(wn=32), "sm_75", "needs sm_80 or later"),   # no mma.sync (nor DMMA) before sm_80
])
def test_what_dmma_cannot_take_is_refused_with_the_numbers(knobs, arch, message):
    with pytest.raises(KernelgenError, match=message):
        op.kernel(op.schedule(**knobs), target(arch), op.types("dmma"))


def test_dmma_data_is_fp32_in_and_out():
    t = op.types("dmma")
    assert t.short == "dmma" and t["C"].name == "float32" and t["A"].data == "float32" and op.out_dtypes("dmma") == ("float32",)
    p = op.problem({"M": 4, "N": 4, "K": 4}, dtype="dmma")
    assert op.bytes_moved(p) == 4 * 3 * 16 and op.math(p) == "fp64"


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch,per_step,shape", [("sm_90", 16, "DMMA.16"), ("sm_80", 64, "DMMA.884")])
def test_sass_runs_dmma_without_local_memory(arch, per_step, shape):
    """A k8 step of a 64x32 warp tile is 4 x 4 m16n8k8 (sm_80: four m8n8k4 each); the aligned kernel keeps its
    registers (no spill, no local memory)."""
    from kernelgen.inspect import _sass
    kernel = op.kernel(op.schedule(wn=32), target(arch), op.types("dmma"))
    c = compile_cuda(render(kernel), kernel.arch, kernel.name)
    for ops in _sass(c.cubin).values():
        assert {o for o in ops if "MMA" in o} == {shape}, ops
    for f in facts_of(c):
        assert f.dmma > 0 and f.dmma % per_step == 0 and f.hmma == 0 and f.ffma == 0, f
        if not f.symbol.endswith("_unaligned"):
            assert f.spill_bytes == 0 and f.local_ops == 0, f


def test_the_cost_models_put_fp32_products_on_dmma_where_the_gpu_runs_it_fast():
    """H100-class targets (DMMA's rate = FFMA's): big products on dmma, thin ones (M of 1 or 16: sgemm's dot
    layout) on the CUDA cores; GPUs whose fp64 runs at 1/64 of fp32 (sm_86, sm_89) and archs without DMMA never."""
    h100 = target("sm_90a")
    for m, n, k in ((2048, 12288, 4096), (2048, 4096, 16384), (8192, 2304, 768), (4096, 4096, 4096)):
        assert fp32_on_dmma(m, n, k, "NT", h100), (m, n, k)
    for m, n, k in ((1, 4096, 4096), (16, 4096, 4096), (35, 8457, 4096)):
        assert not fp32_on_dmma(m, n, k, "NT", h100), (m, n, k)
    for arch in ("sm_86", "sm_89", "sm_75"):
        assert not fp32_on_dmma(4096, 4096, 4096, "NT", target(arch)), arch
    pick = choose(op, op.problem({"M": 2048, "N": 12288, "K": 4096}, dtype="dmma", layout="NT"), h100)
    assert pick.family == "mma 128x64" and pick.split_k == 1, pick


# -- GPU ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_heuristic_and_a_wide_tile_on_the_gpu(layout):
    """Exact small-integer products (C poisoned first) at ragged, aligned and odd sizes, M, N or K of 1."""
    wide = dict(bm=128, bn=128, wm=64, wn=32, stages=3, epilogue="smem")
    for sizes in ({"M": 1, "N": 1, "K": 1}, {"M": 33, "N": 17, "K": 40}, {"M": 1, "N": 300, "K": 77},
                  {"M": 1000, "N": 1032, "K": 1000}, {"M": 1000, "N": 1030, "K": 999}, {"M": 2048, "N": 2048, "K": 512}):
        p = op.problem(sizes, dtype="dmma", layout=layout)
        for sched in (op.schedule_for(p), op.schedule(**wide)):
            v = validate(op, sched, p, backend="gpu")
            assert v.ok, (sizes, v.summary())


@pytest.mark.gpu
def test_dmma_is_correctly_rounded_over_a_long_k_on_the_gpu():
    """Full-precision inputs at K = 16384. K whole: every element within half an ulp (fp64 sums). K in slices
    (schedule_for's pick for these few tiles): each slice's fp64 sum rounded to fp32 once and the slices summed in
    fp32, a few roundings where the CUDA-core SGEMM's fp32 sums make thousands: below its error."""
    import cupy
    from kernelgen.prepared import prepare
    rng = np.random.default_rng(5)
    M, N, K = 256, 192, 16384
    a, b = full_precision((M, K), rng), full_precision((K, N), rng)
    gemm, sgemm = get_op("gemm"), get_op("sgemm")
    dmma = gemm.problem({"M": M, "N": N, "K": K}, dtype="dmma")
    runs = {"K whole": (gemm, gemm.schedule(bm=128, bn=64, wm=64, wn=32), dmma),
            "K in slices": (gemm, gemm.schedule_for(dmma), dmma)}
    p32 = sgemm.problem({"M": M, "N": N, "K": K}, dtype="float32")
    runs["sgemm"] = (sgemm, sgemm.schedule_for(p32), p32)
    assert gemm.knobs_from_schedule(runs["K in slices"][1])["split_k"] > 1
    worst, relative = {}, {}
    for label, (o, sched, p) in runs.items():
        c = cupy.full((M, N), cupy.nan, cupy.float32)
        prepare(o, sched, p)(A=cupy.asarray(a), B=cupy.asarray(b), C=c)
        c = cupy.asnumpy(c).astype(np.float64)
        worst[label] = worst_error(c, a, b)
        ref, bound = a.astype(np.float64) @ b.astype(np.float64), np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        relative[label] = float(np.max(np.abs(c - ref) / bound))
    assert worst["K whole"] <= 1.0 and worst["sgemm"] > 4.0, worst
    # each slice's sum rounded once, then S - 1 fp32 additions: at most 2 S roundings of at most |A| |B| each (H200:
    # 4.6e-8 against the SGEMM's 1.8e-7)
    slices = gemm.knobs_from_schedule(runs["K in slices"][1])["split_k"]
    assert relative["K in slices"] <= 2 * slices * 2.0 ** -24 and relative["K in slices"] < relative["sgemm"] / 2, relative
