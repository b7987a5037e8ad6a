"""fp32 data on tensor cores, opt-in (issue 12: "tf32 for fp32 inputs as an explicit opt-in"): `--dtype tf32`
rounds each input to TF32 for one mma.sync m16n8k8 a product; `--dtype tf32x3` adds the products of the
rounding's remainders (3xTF32), about fp32's accuracy. The same gemm template and pieces as the 16-bit path: the
copies and the swizzle see fp32 values as pairs of halves; fragments by ldmatrix where a tile lies along K."""
import numpy as np
import pytest

from kernelgen import get_op
from kernelgen.compile import compile_cuda
from kernelgen.errors import KernelgenError
from kernelgen.inspect import facts_of
from kernelgen.ops.gemm import WGMMA_KNOBS
from kernelgen.render import render
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("gemm")
SMALL = dict(bm=64, bn=64, wm=32, wn=32)
LAYOUTS = ("NN", "NT", "TN", "TT")


def fractional(shape, rng) -> np.ndarray:
    """Values below 4 with bits down to 2^-14 (16 significant bits): TF32 keeps 11 of them, a high and a low TF32
    part all of them."""
    return (rng.integers(-3, 4, shape) + rng.integers(-2 ** 13, 2 ** 13, shape) * 2.0 ** -14).astype(np.float32)


def relative_error(c, a, b) -> float:
    """max |C - A @ B| / (|A| @ |B|), in float64 (A, B as M x K and K x N)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return float(np.max(np.abs(c - a64 @ b64) / (np.abs(a64) @ np.abs(b64) + 1e-300)))


def stored(x: np.ndarray, transposed: bool) -> np.ndarray:
    return np.ascontiguousarray(x.T) if transposed else x


def emulated_product(dtype: str, layout: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A @ B (A M x K, B K x N, float32) on the emulator in `dtype` with the SMALL tile, A and B stored as `layout`
    says, C poisoned with NaN first."""
    from kernelgen import emulate
    from kernelgen.prepared import prepare
    (M, K), N = a.shape, b.shape[1]
    prep = prepare(op, op.schedule(**SMALL), op.problem({"M": M, "N": N, "K": K}, dtype=dtype, layout=layout))
    c = np.full((M, N), np.nan, np.float32)
    emulate.execute(prep.plan, prep.source, {"A": stored(a, layout[0] == "T"), "B": stored(b, layout[1] == "T"), "C": c})
    return c


@pytest.mark.emulate
@pytest.mark.parametrize("dtype", ["tf32", "tf32x3"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_at_ragged_sizes_on_the_emulator(dtype, layout):
    """Small-integer inputs (exact in TF32): the result is the exact product. Ragged edges, K of one and of
    several tiles, odd K (the element-wise kernel), races and bounds checked."""
    for sizes, over in (({"M": 70, "N": 72, "K": 48}, {}), ({"M": 33, "N": 41, "K": 37}, {}),
                        ({"M": 1, "N": 9, "K": 1}, {}), ({"M": 64, "N": 128, "K": 96}, dict(epilogue="smem")),
                        ({"M": 40, "N": 72, "K": 300}, dict(split_k=3)),
                        ({"M": 50, "N": 30, "K": 40}, dict(ldmatrix=False, smem="pad", pad=8, copy="sync", stages=2))):
        p = op.problem(sizes, dtype=dtype, layout=layout)
        v = validate(op, op.schedule(**SMALL, **over), p, backend="emulate", check=True, order="random")
        assert v.ok, (sizes, over, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("layout", ["NN", "TN"])
def test_3xtf32_recovers_what_tf32_rounds_away_on_the_emulator(layout):
    """Inputs with 16 significant bits: one TF32 product errs by ~2^-12 of |A||B|, three by the dropped low*low
    product and fp32 sums (below 2^-18 here)."""
    rng = np.random.default_rng(7)
    M, N, K = 40, 48, 96
    a, b = fractional((M, K), rng), fractional((K, N), rng)
    errors = {dtype: relative_error(emulated_product(dtype, layout, a, b), a, b) for dtype in ("tf32", "tf32x3")}
    assert 2.0 ** -16 < errors["tf32"] < 2.0 ** -10, errors
    assert errors["tf32x3"] < 2.0 ** -18, errors


@pytest.mark.parametrize("knobs,arch,message", [
    (WGMMA_KNOBS, "sm_90a", "takes 16-bit inputs"),
    (dict(instr="wmma", smem="pad", pad=8, ldmatrix=False), "sm_90", "takes 16-bit inputs"),
    (dict(persistent="coop", min_blocks=2, epilogue="smem"), "sm_90", "tf32 takes the per-tile kernel"),
    (dict(frag_buffers=2), "sm_90", "rounded where they are used"),
    (dict(bn=256, stages=4), "sm_86", "bytes of shared memory for tf32 tiles"),
])
def test_what_tf32_cannot_take_is_refused_with_the_numbers(knobs, arch, message):
    with pytest.raises(KernelgenError, match=message):
        op.kernel(op.schedule(**knobs), target(arch), op.types("tf32"))


def test_3xtf32_takes_warp_tiles_whose_registers_fit():
    """The 16-bit default's 64x64 warp tiles with split fragments and a stage's separate sums: ~392 registers
    (measured without the sums: 255 and 400 bytes of local memory), refused; the heuristic picks among the tiles
    that fit."""
    with pytest.raises(KernelgenError, match="~392 registers per thread"):
        op.kernel(op.default_schedule(), target("sm_90"), op.types("tf32x3"))
    for dtype in ("tf32", "tf32x3"):
        for sizes in ({"M": 4096, "N": 4096, "K": 4096}, {"M": 64, "N": 5000, "K": 3000}, {"M": 33, "N": 17, "K": 5}):
            p = op.problem(sizes, dtype=dtype)
            k = op.knobs_from_schedule(op.schedule_for(p, target("sm_90a")))
            assert k["instr"] == "mma", (dtype, sizes, k)
            op.kernel(op.schedule_for(p, target("sm_90a")), target("sm_90a"), op.types(dtype))


def test_tf32_data_is_fp32_in_and_out():
    t = op.types("tf32x3")
    assert t.short == "tf32x3" and t["C"].name == "float32" and op.out_dtypes("tf32") == ("float32",)
    assert t["A"].data == "float32" and op.types("bfloat16")["A"].data == "bfloat16"     # what torch and CuPy hold
    p = op.problem({"M": 4, "N": 4, "K": 4}, dtype="tf32")
    assert op.bytes_moved(p) == 4 * 3 * 16 and op.math(p) == "tf32"
    with pytest.raises(KernelgenError, match="choose one of float32"):
        op.types("tf32", "float16")


@pytest.mark.nvrtc
@pytest.mark.parametrize("dtype,wn,per_step", [("tf32", 64, 32), ("tf32x3", 32, 48)])
def test_sass_runs_tf32_mma_without_local_memory(dtype, wn, per_step):
    """HMMA.1684.F32.TF32, one m16n8k8 each: a k8 step of a 64 x wn warp tile is 4 x wn/8 of them (three times as
    many for tf32x3); the aligned kernel keeps every register (the element-wise twin may reload one)."""
    kernel = op.kernel(op.schedule(wn=wn), target("sm_90"), op.types(dtype))
    c = compile_cuda(render(kernel), kernel.arch, kernel.name)
    for f in facts_of(c):
        if not f.symbol.endswith("_unaligned"):
            assert f.spill_bytes == 0 and f.local_ops == 0, f
        assert f.hmma > 0 and f.hmma % per_step == 0, f


# -- GPU ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["tf32", "tf32x3"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_heuristic_and_a_wide_tile_on_the_gpu(dtype, layout):
    """Exact small-integer products (C poisoned first) at ragged, aligned and odd sizes, M, N or K of 1."""
    wide = dict(bn=256, wn=64 if dtype == "tf32" else 32, stages=3, epilogue="smem")
    for sizes in ({"M": 1, "N": 1, "K": 1}, {"M": 33, "N": 17, "K": 40}, {"M": 1, "N": 300, "K": 77},
                  {"M": 1000, "N": 1032, "K": 1000}, {"M": 1000, "N": 1030, "K": 999}, {"M": 2048, "N": 2048, "K": 512}):
        p = op.problem(sizes, dtype=dtype, layout=layout)
        for sched in (op.schedule_for(p), op.schedule(**wide)):
            v = validate(op, sched, p, backend="gpu")
            assert v.ok, (sizes, v.summary())


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NN", "NT"])
def test_3xtf32_recovers_what_tf32_rounds_away_on_the_gpu(layout):
    """As on the emulator, with the tensor cores' own sums: 16-bit significands, 1024^3."""
    import cupy
    from kernelgen.prepared import prepare
    rng = np.random.default_rng(11)
    n = 1024
    a, b = fractional((n, n), rng), fractional((n, n), rng)
    errors = {}
    for dtype in ("tf32", "tf32x3"):
        p = op.problem({"M": n, "N": n, "K": n}, dtype=dtype, layout=layout)
        prep = prepare(op, op.schedule_for(p), p)
        c = cupy.full((n, n), cupy.nan, cupy.float32)
        prep(A=cupy.asarray(a), B=cupy.asarray(stored(b, layout[1] == "T")), C=c)
        errors[dtype] = relative_error(cupy.asnumpy(c).astype(np.float64), a, b)
    assert 2.0 ** -16 < errors["tf32"] < 2.0 ** -10, errors
    assert errors["tf32x3"] < 2.0 ** -18, errors


@pytest.mark.gpu
def test_3xtf32_keeps_fp32_accuracy_over_a_long_k():
    """The tensor cores' fp32 sums truncate: summed into the accumulators step after step over K = 16384, 3xTF32
    erred ~50x the SGEMM (2048 x 4096 x 16384 on the H100, 2026-11-25); a stage's products summed apart and then
    added keep it within a few times the SGEMM's error."""
    import cupy
    from kernelgen.prepared import prepare
    rng = np.random.default_rng(5)
    M, N, K = 256, 256, 16384
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    errors = {}
    for name, dtype in (("sgemm", "float32"), ("gemm", "tf32x3")):
        o = get_op(name)
        p = o.problem({"M": M, "N": N, "K": K}, dtype=dtype)
        prep = prepare(o, o.schedule_for(p), p)
        c = cupy.full((M, N), cupy.nan, cupy.float32)
        prep(A=cupy.asarray(a), B=cupy.asarray(b), C=c)
        errors[dtype] = float(np.linalg.norm(cupy.asnumpy(c) - ref) / np.linalg.norm(ref))
    assert errors["tf32x3"] < 8 * errors["float32"], errors
