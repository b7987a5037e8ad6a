"""Tensor-core pieces on the CPU emulator: templates/common/mma.cuh (mma.sync m16n8k16 and every
ldmatrix variant, checked lane by lane against a numpy model of the PTX ISA fragment layouts) and
nvcuda::wmma 16x16x16; the same kernels compile with NVRTC to HMMA and LDSM."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernelgen.emulate import EmulationError, execute
from kernelgen.errors import CompileError
from kernelgen.ops.base import Kernel, Launch, Plan, Problem
from kernelgen.schedule import Schedule

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "common"
MMA = (TEMPLATES / "prelude.cuh").read_text() + (TEMPLATES / "mma.cuh").read_text()
MODES = [dict(check=True, order="forward"), dict(check=True, order="random", seed=3),
         dict(check=False, order="reverse")]


def run(symbol: str, args: tuple[str, ...], buffers: dict, source: str, *, threads: int = 32, **mode) -> None:
    kern = Kernel("test", symbol, Schedule("test"), (), "", ())
    # the kernels read the 16-bit buffers as 32-bit words: the plan declares it (the emulator places a buffer
    # at the weakest alignment its plan accepts)
    plan = Plan(kern, Problem((("n", 1),)), (Launch(symbol, (1, 1, 1), (threads, 1, 1), args),),
                alignment=tuple((a, 16) for a in args if a in buffers))
    execute(plan, source, buffers, **mode)


# ---- ldmatrix: every variant's lane mapping --------------------------------------------------------
# The tile is 32 rows of 8 16-bit values (4 matrices of 8x8, matrix i = rows 8i..8i+7); lane l passes
# the address of row l, and the values are their own indices, so the registers say where they came from.
# Tiles go to shared memory a 4-byte word per thread.
MMA += r"""
__device__ void copy_words(unsigned short* dst, const unsigned short* src, int count) {
  for (int i = threadIdx.x; i < count / 2; i += 32)
    reinterpret_cast<unsigned*>(dst)[i] = reinterpret_cast<const unsigned*>(src)[i];
}
"""
LDMATRIX = MMA + r"""
template <int N, void (*kLoad)(unsigned (&)[N], const void*)>
__device__ void load_tile(const unsigned short* tile, unsigned* out) {
  __shared__ __align__(16) unsigned short s[32 * 8];
  copy_words(s, tile, 32 * 8);
  __syncthreads();
  unsigned r[N];
  kLoad(r, &s[threadIdx.x * 8]);
  for (int i = 0; i < N; ++i) out[threadIdx.x * 4 + i] = r[i];
}
""" + "".join(f"""extern "C" __global__ void ldm_{v}(const unsigned short* tile, unsigned* out) {{
  load_tile<{n}, kg_ldmatrix_{v}>(tile, out);
}}
""" for v, n in (("x1", 1), ("x2", 2), ("x4", 4), ("x2_trans", 2), ("x4_trans", 4)))


def ldmatrix_model(tile: np.ndarray, n: int, trans: bool) -> np.ndarray:
    """The PTX ISA's ldmatrix: register i of lane l holds matrix i's (row l/4, columns 2(l%4), +1), or
    with .trans (rows 2(l%4), +1; column l/4); the first value in the low 16 bits."""
    out = np.zeros((32, 4), np.uint32)
    m = tile.reshape(4, 8, 8).astype(np.uint32)
    for lane in range(32):
        for i in range(n):
            r, c = lane // 4, 2 * (lane % 4)
            lo, hi = (m[i, c, r], m[i, c + 1, r]) if trans else (m[i, r, c], m[i, r, c + 1])
            out[lane, i] = lo | hi << 16
    return out


@pytest.mark.emulate
@pytest.mark.parametrize("n, trans", [(1, False), (2, False), (4, False), (2, True), (4, True)])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: f"{m['order']}{'-check' if m['check'] else ''}")
def test_ldmatrix_lane_mapping(n, trans, mode):
    tile = np.arange(32 * 8, dtype=np.uint16) * 7 + 3
    out = np.zeros(32 * 4, np.uint32)
    run(f"ldm_x{n}{'_trans' if trans else ''}", ("tile", "out"), {"tile": tile, "out": out}, LDMATRIX, **mode)
    assert (out.reshape(32, 4)[:, :n] == ldmatrix_model(tile, n, trans)[:, :n]).all()


# ---- mma.sync m16n8k16: A by ldmatrix.x4, B by ldmatrix.x2.trans from a row-major [k][n] tile ------
GEMM = MMA + r"""
template <bool kBf16>
__device__ void tile_mma(const unsigned short* a, const unsigned short* b, const float* c, float* d) {
  __shared__ __align__(16) unsigned short sa[16 * 16];   // A[m][k], row-major
  __shared__ __align__(16) unsigned short sb[16 * 8];    // B[k][n], row-major
  const int lane = threadIdx.x;
  copy_words(sa, a, 16 * 16);
  copy_words(sb, b, 16 * 8);
  __syncthreads();
  // x4: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15)
  unsigned ra[4], rb[2];
  kg_ldmatrix_x4(ra, &sa[(lane % 16) * 16 + (lane / 16) * 8]);
  // x2.trans: matrices k 0-7 and k 8-15 of B[k][n]; row address of lane l is B[l % 16][0]
  kg_ldmatrix_x2_trans(rb, &sb[(lane % 16) * 8]);
  const int g = lane / 4, t = lane % 4;
  float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  if (kBf16) kg_mma_m16n8k16_bf16(acc, ra, rb); else kg_mma_m16n8k16_f16(acc, ra, rb);
  d[g * 8 + 2 * t] = acc[0]; d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2]; d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}
extern "C" __global__ void mma_f16(const unsigned short* a, const unsigned short* b, const float* c, float* d) {
  tile_mma<false>(a, b, c, d);
}
extern "C" __global__ void mma_bf16(const unsigned short* a, const unsigned short* b, const float* c, float* d) {
  tile_mma<true>(a, b, c, d);
}
"""


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 values exactly representable in bf16 -> their 16-bit patterns."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


@pytest.mark.emulate
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: f"{m['order']}{'-check' if m['check'] else ''}")
def test_mma_m16n8k16_matches_numpy(dtype, mode):
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    b = rng.integers(-4, 5, (16, 8)).astype(np.float32)
    c = rng.integers(-50, 51, (16, 8)).astype(np.float32)
    bits = (lambda x: x.astype(np.float16).view(np.uint16)) if dtype == "f16" else bf16_bits
    d = np.full(16 * 8, np.nan, np.float32)
    run(f"mma_{dtype}", ("a", "b", "c", "d"), {"a": bits(a).ravel(), "b": bits(b).ravel(), "c": c.ravel(), "d": d},
        GEMM, **mode)
    expect = a.astype(np.float64) @ b.astype(np.float64) + c
    assert (d.reshape(16, 8) == expect).all()


# ---- instructions the emulator refuses by name ------------------------------------------------------
@pytest.mark.emulate
@pytest.mark.parametrize("insn, what", [
    ("wgmma.fence.sync.aligned;", "wgmma (sm_90a warpgroup MMA)"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1];", "cp.async.bulk"),
    ("mbarrier.init.shared.b64 [%0], 1;", "mbarrier"),
    ("setmaxnreg.inc.sync.aligned.u32 240;", "setmaxnreg"),
])
def test_gpu_only_instructions_are_named(insn, what):
    source = f'extern "C" __global__ void k(float* y) {{\n  asm volatile("{insn}");\n  y[0] = 1.0f;\n}}\n'
    with pytest.raises(CompileError) as e:
        run("k", ("y",), {"y": np.zeros(1, np.float32)}, source)
    msg = str(e.value)
    assert f"the CPU emulator does not support {what}" in msg and "it is proven on the GPU" in msg, msg
    assert "k.cu(2): error" in msg


# ---- WMMA 16x16x16: fragments over warp shuffles -----------------------------------------------------
WMMA = r"""
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;
template <class T, class LB>
__device__ void wmma_tile(const T* a, const T* b, const float* c, float* d) {
  __shared__ __align__(32) float sc[16 * 16];
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LB> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);                 // A B
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> cf;
  wmma::load_matrix_sync(cf, c, 16, wmma::mem_col_major);
  for (int i = 0; i < cf.num_elements; ++i) acc.x[i] += 2.0f * cf.x[i];   // + 2 C^T, element-wise
  wmma::store_matrix_sync(sc, acc, 16, wmma::mem_row_major);
  __syncthreads();
  for (int i = threadIdx.x; i < 256; i += 32) d[i] = sc[i];
}
extern "C" __global__ void wmma_f16_row(const __half* a, const __half* b, const float* c, float* d) {
  wmma_tile<__half, wmma::row_major>(a, b, c, d);
}
extern "C" __global__ void wmma_f16_col(const __half* a, const __half* b, const float* c, float* d) {
  wmma_tile<__half, wmma::col_major>(a, b, c, d);
}
extern "C" __global__ void wmma_bf16_row(const __nv_bfloat16* a, const __nv_bfloat16* b, const float* c, float* d) {
  wmma_tile<__nv_bfloat16, wmma::row_major>(a, b, c, d);
}
"""


@pytest.mark.emulate
@pytest.mark.parametrize("kernel", ["wmma_f16_row", "wmma_f16_col", "wmma_bf16_row"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: f"{m['order']}{'-check' if m['check'] else ''}")
def test_wmma_16x16x16_matches_numpy(kernel, mode):
    rng = np.random.default_rng(11)
    a = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    b = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    c = rng.integers(-50, 51, (16, 16)).astype(np.float32)
    stored_b = b.T.copy() if kernel.endswith("col") else b       # col_major: element (k, n) at n*16 + k
    if "bf16" in kernel:
        bufs = {"a": bf16_bits(a).ravel(), "b": bf16_bits(stored_b).ravel()}
    else:
        bufs = {"a": a.astype(np.float16).ravel(), "b": stored_b.astype(np.float16).ravel()}
    d = np.full(256, np.nan, np.float32)
    run(kernel, ("a", "b", "c", "d"), {**bufs, "c": c.ravel(), "d": d}, WMMA, **mode)
    expect = a.astype(np.float64) @ b.astype(np.float64) + 2 * c.T
    assert (d.reshape(16, 16) == expect).all()


# A warp stores two accumulators in turn through one staging area and reads each back lane by lane
# (e = lane, lane + 32, ...). The accumulator's layout is opaque: on the GPU those are other lanes' elements,
# so the store of the second may overwrite words another lane has yet to read unless a __syncwarp comes
# between. The emulator's accumulator layout is not that walk's either, so the checker sees the race.
WMMA_STAGE = r"""
#include <mma.h>
using namespace nvcuda;
template <bool kFence>
__device__ void stage_twice(const float* c, float* d) {
  __shared__ __align__(32) float st[256];
  for (int j = 0; j < 2; ++j) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> f;
    wmma::load_matrix_sync(f, c + 256 * j, 16, wmma::mem_row_major);
    wmma::store_matrix_sync(st, f, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = threadIdx.x; e < 256; e += 32) d[256 * j + e] = st[e];
    if (kFence) __syncwarp();
  }
}
extern "C" __global__ void stage_fenced(const float* c, float* d) { stage_twice<true>(c, d); }
extern "C" __global__ void stage_unfenced(const float* c, float* d) { stage_twice<false>(c, d); }
"""


@pytest.mark.emulate
@pytest.mark.parametrize("mode", MODES, ids=lambda m: f"{m['order']}{'-check' if m['check'] else ''}")
def test_a_wmma_staging_area_reused_without_syncwarp_is_a_race(mode):
    c = np.arange(512, dtype=np.float32)
    d = np.full(512, np.nan, np.float32)
    run("stage_fenced", ("c", "d"), {"c": c, "d": d}, WMMA_STAGE, **mode)
    assert (d == c).all()
    if mode["check"]:
        with pytest.raises(EmulationError) as e:
            run("stage_unfenced", ("c", "d"), {"c": c, "d": d}, WMMA_STAGE, **mode)
        assert e.value.kind == "race"


# ---- the same kernels on the GPU path: NVRTC emits HMMA and LDSM ------------------------------------
@pytest.mark.nvrtc
@pytest.mark.parametrize("source, symbols, want", [
    (GEMM, ("mma_f16", "mma_bf16"), ("HMMA", "LDSM")),
    (LDMATRIX, ("ldm_x1", "ldm_x2", "ldm_x4", "ldm_x2_trans", "ldm_x4_trans"), ("LDSM",)),
    (WMMA, ("wmma_f16_row", "wmma_f16_col", "wmma_bf16_row"), ("HMMA",)),
], ids=["mma", "ldmatrix", "wmma"])
def test_tensor_core_kernels_compile_to_hmma_and_ldsm(source, symbols, want):
    from kernelgen.compile import compile_cuda
    from kernelgen.inspect import _sass
    try:
        sass = _sass(compile_cuda(source, "sm_80", symbols[0]).cubin)
    except CompileError as e:
        if "cannot open source file" in str(e):
            pytest.skip(f"CUDA headers missing for NVRTC (nvidia-cuda-runtime-cu12, nvidia-cuda-nvcc-cu12): {e}")
        raise
    for sym in symbols:
        ops = sass[sym]
        for prefix in want:
            assert any(op.startswith(prefix) for op in ops), (sym, prefix, sorted(ops))
        assert not any(op.startswith("BPT") for op in ops), (sym, "__trap() in the sm_80 code")
