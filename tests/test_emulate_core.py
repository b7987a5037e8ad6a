"""The CPU emulator on hand-written kernels: each CUDA semantic it covers, the bugs it must make
visible (missing barriers, off-by-one accesses, races), what it refuses, and a timed register-tiled SGEMM."""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

from kernelgen.emulate import EmulationError, execute
from kernelgen.emulate.build import build
from kernelgen.errors import CompileError, LaunchError, UsageError
from kernelgen.ops.base import Kernel, Launch, Plan, Problem, Scalar, Workspace
from kernelgen.schedule import Schedule

pytestmark = pytest.mark.emulate

PRELUDE = (Path(__file__).resolve().parent.parent / "templates" / "common" / "prelude.cuh").read_text()
FULL = "0xffffffffu"


def plan(*launches, workspaces=(), scalars=(), name="emu_test", alignment=()) -> Plan:
    kern = Kernel("test", name, Schedule("test"), (), "", ())
    return Plan(kern, Problem((("n", 1),)), tuple(launches), tuple(workspaces), tuple(scalars), tuple(alignment))


def launch(sym, grid, block, *args, smem=0) -> Launch:
    as3 = lambda v: tuple(v) + (1,) * (3 - len(v)) if isinstance(v, tuple) else (v, 1, 1)  # noqa: E731
    return Launch(sym, as3(grid), as3(block), tuple(args), smem)


# ---- the semantics kernels, one source (two builds: plain and check) --------------------------------
SEMANTICS = PRELUDE + r"""
extern "C" __global__ void indices(int* out) {
  int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int* o = out + (b * (blockDim.x * blockDim.y * blockDim.z) + t) * 8;
  o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
  o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
  o[6] = blockDim.x * 100 + blockDim.y * 10 + blockDim.z;
  o[7] = gridDim.x * 100 + gridDim.y * 10 + gridDim.z + warpSize * 1000;
}

extern "C" __global__ void __launch_bounds__(64) smem_reverse(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float s[64];
  const int t = threadIdx.x, base = blockIdx.x * 64;
  s[t] = x[base + t];
  __syncthreads();
  y[base + t] = s[63 - t];
}

// dynamic shared memory, seen through two extern declarations, next to a static array
extern __shared__ int ibuf[];
extern "C" __global__ void dyn_smem(const float* x, float* y, int* z, int n) {
  extern __shared__ float dbuf[];
  __shared__ float stat[4];
  const int t = threadIdx.x;
  if (t < 4) stat[t] = 1000.0f + t;
  dbuf[t] = 2.0f * x[t];
  ibuf[n + t] = 3 * t;
  __syncthreads();
  y[t] = dbuf[(t + 1) % n] + stat[t % 4];
  z[t] = ibuf[n + (t + 5) % n];
}

extern "C" __global__ void shuffles(const float* x, float* out, int* iout, double* dout) {
  const int t = threadIdx.x, lane = t % 32;
  const float v = x[t];
  float* o = out + t * 8;
  o[0] = __shfl_sync(FULL, v, lane * 7 + 3);
  o[1] = __shfl_up_sync(FULL, v, 3);
  o[2] = __shfl_down_sync(FULL, v, 5);
  o[3] = __shfl_xor_sync(FULL, v, 9);
  o[4] = __shfl_sync(FULL, v, 2, 8);
  o[5] = __shfl_down_sync(FULL, v, 3, 16);
  o[6] = __shfl_up_sync(FULL, v, 2, 8);
  o[7] = __shfl_xor_sync(FULL, v, 4, 8);
  iout[t] = __shfl_xor_sync(FULL, 3 * t, 1);
  dout[t] = __shfl_down_sync(FULL, (double)v * 0.5, 1);
}

extern "C" __global__ void votes(const float* x, int* out) {
  const int t = threadIdx.x;
  const float v = x[t];
  int* o = out + t * 9;
  o[0] = (int)__ballot_sync(FULL, v > 0.0f);
  o[1] = __any_sync(FULL, v > 100.0f);
  o[2] = __all_sync(FULL, v > -100.0f);
  o[3] = __syncthreads_count(v > 0.0f);
  o[4] = __syncthreads_and(v > -1000.0f);
  o[5] = __syncthreads_or(v > 1000.0f);
  o[6] = (int)__activemask();
  __syncwarp();
  o[7] = __reduce_add_sync(FULL, t);
  o[8] = __any_sync(FULL, t == 37);
}

extern "C" __global__ void atomics(const float* x, float* fsum, int* ints, int* scounts) {
  __shared__ int scount;
  const int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  if (t == 0) scount = 0;
  __syncthreads();
  atomicAdd(&scount, 1);
  atomicAdd(fsum, x[g]);
  atomicAdd(&ints[0], 1);
  atomicMax(&ints[1], (int)x[g]);
  atomicMin(&ints[2], (int)x[g]);
  int old;
  do { old = ints[3]; } while (atomicCAS(&ints[3], old, old + 2) != old);
  atomicExch(&ints[4], 7);
  atomicAdd((unsigned int*)&ints[5], 2u);
  __syncthreads();
  if (t == 0) scounts[blockIdx.x] = scount;
}

static_assert(alignof(float4) == 16 && alignof(float2) == 8 && alignof(int4) == 16 && alignof(uint4) == 16 &&
              alignof(int2) == 8 && sizeof(float4) == 16 && sizeof(uint4) == 16, "vector types as CUDA's");
extern "C" __global__ void vectors(const float* __restrict__ x, float* __restrict__ y, int* __restrict__ yi) {
  alignas(16) __shared__ float4 sv[32];
  const int t = threadIdx.x;
  const float4 v = reinterpret_cast<const float4*>(x)[t];
  const float2 w = __ldg(reinterpret_cast<const float2*>(x) + t);
  sv[t] = make_float4(v.w, v.z, v.y, v.x + w.y);
  __syncthreads();
  reinterpret_cast<float4*>(y)[t] = sv[31 - t];
  const uint4 u = make_uint4(t, t + 1u, t + 2u, t + 3u);
  const int2 p = make_int2(u.y, u.w);
  reinterpret_cast<int4*>(yi)[t] = make_int4(p.x, p.y, (int)u.z, (int)u.x);
  alignas(16) __shared__ float4 st[32];
  kg_cp_async16(&st[t], &reinterpret_cast<const float4*>(x)[t]);   // the prelude's guarded cp.async
  kg_cp_async_commit();
  kg_cp_async_wait<0>();
  const float4 tmp = st[t];
  y[128 + t] = tmp.x + tmp.w;
}

#define NMATH 24
extern "C" __global__ void math(const float* x, float* out) {
  const int t = threadIdx.x;
  const float v = x[t];
  float* o = out + t * NMATH;
  o[0] = expf(v); o[1] = __expf(v); o[2] = exp2f(v); o[3] = logf(v); o[4] = __logf(v);
  o[5] = fmaxf(v, 0.5f); o[6] = fminf(v, 0.5f); o[7] = rsqrtf(v); o[8] = sqrtf(v); o[9] = tanhf(v - 1.0f);
  o[10] = erff(v - 1.0f); o[11] = erfcf(v - 1.0f); o[12] = fabsf(-v); o[13] = __fdividef(v, 3.0f);
  o[14] = __frcp_rn(v); o[15] = fmaf(v, 2.0f, 1.0f); o[16] = __fmaf_rn(v, v, -1.0f);
  o[17] = (float)max(t, 5); o[18] = (float)min(t, 5); o[19] = max(v, 0.75f); o[20] = min(v, 0.75f);
  o[21] = (v < INFINITY) ? FLT_MAX : 0.0f; o[22] = (float)max(t, 3u); o[23] = __saturatef(v - 1.0f);
}

extern "C" __global__ void scalars(float* y, long long n, float a, int b) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * (float)i + (float)b;
}

// the warp-synchronous tail of a reduction, each step fenced with __syncwarp (race-free)
extern "C" __global__ void __launch_bounds__(128) warp_tail(const float* x, float* out) {
  __shared__ float s[128];
  const int t = threadIdx.x;
  s[t] = x[blockIdx.x * 128 + t];
  __syncthreads();
  if (t < 64) s[t] += s[t + 64];
  __syncthreads();
  if (t < 32) {
    volatile float* vs = s;
    for (int k = 32; k > 0; k >>= 1) {
      const float v = vs[t] + vs[t + k];
      __syncwarp();
      vs[t] = v;
      __syncwarp();
    }
    if (t == 0) out[blockIdx.x] = vs[0];
  }
}

// shared words handed over through a shuffle: warp-synchronous, so no race
extern "C" __global__ void shfl_handoff(float* out) {
  __shared__ float s[32];
  const int t = threadIdx.x;
  s[t] = (float)t;
  __syncwarp();                                   // orders the lanes' stores before their neighbours' loads
  const int token = __shfl_xor_sync(FULL, t, 1);
  out[t] = s[token] + s[(t + 1) % 32];
}

// __shared__ in a template (a slot per instantiation) and at file scope
__shared__ int file_scope_counts[4];
template <int N> __device__ float tile_sum(const float* x) {
  __shared__ __align__(16) float t[N][N + 1];
  const int i = threadIdx.x;
  if (i < N * N) t[i / N][i % N] = x[i];
  __syncthreads();
  float acc = 0.0f;
  for (int k = 0; k < N; ++k) acc += t[k][i % N];
  __syncthreads();
  return acc;
}
extern "C" __global__ void templated_shared(const float* x, float* y, int* counts) {
  const int i = threadIdx.x;
  if (i < 4) file_scope_counts[i] = 0;
  __syncthreads();
  y[i] = tile_sum<4>(x) + 1000.0f * tile_sum<2>(x);
  atomicAdd(&file_scope_counts[i % 4], 1);
  __syncthreads();
  if (i < 4) counts[i] = file_scope_counts[i];
}

extern "C" __global__ void shared_atomics(int* out) {
  __shared__ int hist[4];
  const int t = threadIdx.x;
  if (t < 4) hist[t] = 0;
  __syncthreads();
  atomicAdd(&hist[t % 4], 1);
  __syncthreads();
  if (t < 4) out[t] = hist[t];
}

// Where the emulator placed the buffers: their addresses modulo 1024 bytes.
extern "C" __global__ void placement(const float* x, const __half* h, unsigned* out) {
  out[0] = (unsigned)(reinterpret_cast<unsigned long long>(x) % 1024);
  out[1] = (unsigned)(reinterpret_cast<unsigned long long>(h) % 1024);
  out[2] = (unsigned)(reinterpret_cast<unsigned long long>(out) % 1024);
}
""".replace("FULL", FULL)


def run(sym, grid, block, args, buffers, *, smem=0, scalars=(), check=False, order="forward", source=SEMANTICS,
        alignment=()):
    execute(plan(launch(sym, grid, block, *args, smem=smem), scalars=scalars, alignment=alignment), source, buffers,
            check=check, order=order)
    return buffers


MODES = [dict(check=False, order="forward"), dict(check=False, order="reverse"), dict(check=False, order="random"),
         dict(check=True, order="forward")]
mode_ids = ["forward", "reverse", "random", "check"]


@pytest.fixture(params=MODES, ids=mode_ids)
def mode(request):
    return request.param


def test_indices(mode):
    out = np.full(12 * 24 * 8, -1, np.int32)
    run("indices", (2, 3, 2), (4, 2, 3), ["out"], {"out": out}, **mode)
    o = out.reshape(2, 3, 2, 3, 2, 4, 8)     # bz by bx tz ty tx field
    bz, by, bx, tz, ty, tx = np.meshgrid(*[np.arange(n) for n in (2, 3, 2, 3, 2, 4)], indexing="ij")
    for k, want in enumerate((tx, ty, tz, bx, by, bz)):
        assert (o[..., k] == want).all(), k
    assert (o[..., 6] == 423).all() and (o[..., 7] == 32000 + 232).all()


def test_static_shared_and_barrier(mode):
    x = np.arange(256, dtype=np.float32)
    y = np.zeros_like(x)
    run("smem_reverse", 4, 64, ["x", "y"], {"x": x, "y": y}, **mode)
    assert (y == x.reshape(4, 64)[:, ::-1].ravel()).all()


def test_dynamic_shared(mode):
    n = 48
    x = np.arange(n, dtype=np.float32)
    y, z = np.zeros(n, np.float32), np.zeros(n, np.int32)
    run("dyn_smem", 1, n, ["x", "y", "z", "n"], {"x": x, "y": y, "z": z}, smem=2 * n * 4,
        scalars=(Scalar("n", "int", n),), **mode)
    t = np.arange(n)
    assert (y == 2 * x[(t + 1) % n] + 1000 + t % 4).all()
    assert (z == 3 * ((t + 5) % n)).all()


def test_shared_in_templates_and_at_file_scope(mode):
    x = np.arange(16, dtype=np.float32) + 1
    y, counts = np.zeros(16, np.float32), np.zeros(4, np.int32)
    run("templated_shared", 1, 16, ["x", "y", "counts"], {"x": x, "y": y, "counts": counts}, **mode)
    i = np.arange(16)
    want = sum(x[4 * k + i % 4] for k in range(4)) + 1000 * sum(x[2 * k + i % 2] for k in range(2))
    assert (y == want).all() and (counts == 4).all()


def _src(lane, kind, arg, width=32):
    seg = lane & ~(width - 1)
    if kind == "idx":
        return seg + arg % width
    if kind == "up":
        return lane - arg if lane % width >= arg else lane
    if kind == "down":
        return lane + arg if lane % width + arg < width else lane
    return lane ^ arg if (lane ^ arg) - seg < width else lane


def test_shuffles(mode):
    x = (np.arange(64, dtype=np.float32) * 1.5 + 0.25)
    out, iout, dout = np.zeros(64 * 8, np.float32), np.zeros(64, np.int32), np.zeros(64, np.float64)
    run("shuffles", 1, 64, ["x", "out", "iout", "dout"], {"x": x, "out": out, "iout": iout, "dout": dout}, **mode)
    out = out.reshape(64, 8)
    cases = [("idx", None, 32), ("up", 3, 32), ("down", 5, 32), ("xor", 9, 32), ("idx", 2, 8), ("down", 3, 16),
             ("up", 2, 8), ("xor", 4, 8)]
    for t in range(64):
        w, lane = t // 32 * 32, t % 32
        for k, (kind, arg, width) in enumerate(cases):
            a = (lane * 7 + 3) % 32 if arg is None else arg
            assert out[t, k] == x[w + _src(lane, kind, a, width)], (t, k)
        assert iout[t] == 3 * (w + (lane ^ 1))
        assert dout[t] == x[w + _src(lane, "down", 1)] * 0.5


def test_votes_and_block_reductions(mode):
    rng = np.random.default_rng(1)
    x = rng.uniform(-10, 10, 64).astype(np.float32)
    out = np.zeros(64 * 9, np.int32)
    run("votes", 1, 64, ["x", "out"], {"x": x, "out": out}, **mode)
    o = out.reshape(64, 9)
    for w in range(2):
        lanes = slice(32 * w, 32 * w + 32)
        ballot = sum(1 << i for i in range(32) if x[32 * w + i] > 0)
        assert (o[lanes, 0].view(np.uint32) == ballot).all()
        assert (o[lanes, 7] == sum(range(32 * w, 32 * w + 32))).all()
        assert (o[lanes, 8] == int(w == 1)).all()
    assert (o[:, 1] == 0).all() and (o[:, 2] == 1).all()
    assert (o[:, 3] == (x > 0).sum()).all() and (o[:, 4] == 1).all() and (o[:, 5] == 0).all()
    assert (o[:, 6].view(np.uint32) == 0xFFFFFFFF).all()


def test_atomics(mode):
    x = np.arange(-100, 156, dtype=np.float32)
    fsum = np.zeros(1, np.float32)
    ints = np.array([0, -10**9, 10**9, 0, 0, 0], np.int32)
    scounts = np.zeros(4, np.int32)
    run("atomics", 4, 64, ["x", "fsum", "ints", "scounts"], {"x": x, "fsum": fsum, "ints": ints, "scounts": scounts},
        **mode)
    assert fsum[0] == x.sum()
    assert ints.tolist() == [256, 155, -100, 512, 7, 512]
    assert (scounts == 64).all()


def test_buffers_sit_at_the_weakest_alignment_the_plan_declares():
    # a declared a bytes: a past a multiple of 2a; undeclared: one element past a multiple of two (a PyTorch view
    # can start at any element), so code assuming more than its plan declares misaligns or misreads here
    out = np.zeros(3, np.uint32)
    args = {"x": np.zeros(4, np.float32), "h": np.zeros(4, np.float16), "out": out}
    run("placement", 1, 1, ["x", "h", "out"], args, alignment=(("x", 16),))
    assert out[0] % 32 == 16 and out[1] % 4 == 2 and out[2] % 8 == 4
    run("placement", 1, 1, ["x", "h", "out"], args, alignment=(("x", 4), ("h", 8), ("out", 256)))
    assert out[0] % 8 == 4 and out[1] % 16 == 8 and out[2] % 512 == 256
    x, y, yi = np.arange(128, dtype=np.float32), np.zeros(128 + 32, np.float32), np.zeros(128, np.int32)
    with pytest.raises(EmulationError, match=r"vectors: misaligned 16-byte read at x\[0\]"):
        run("vectors", 1, 32, ["x", "y", "yi"], {"x": x, "y": y, "yi": yi}, check=True)   # float4s, 4 bytes declared


def test_vectors_and_alignment(mode):
    x = np.arange(128, dtype=np.float32)
    y, yi = np.zeros(128 + 32, np.float32), np.zeros(128, np.int32)
    # float4 accesses: the plan declares 16 bytes (the emulator places a buffer at the weakest alignment the
    # plan accepts, an element for one it does not name)
    run("vectors", 1, 32, ["x", "y", "yi"], {"x": x, "y": y, "yi": yi}, alignment=(("x", 16), ("y", 16), ("yi", 16)),
        **mode)
    v = x.reshape(32, 4)
    w = x.reshape(64, 2)
    expect = np.stack([v[:, 3], v[:, 2], v[:, 1], v[:, 0] + w[:32, 1]], axis=1)[::-1]
    assert (y[:128].reshape(32, 4) == expect).all()
    t = np.arange(32)
    assert (yi.reshape(32, 4) == np.stack([t + 1, t + 3, t + 2, t], axis=1)).all()
    assert (y[128:] == v[:, 0] + v[:, 3]).all()


def test_math():
    x = np.linspace(0.1, 3.0, 32).astype(np.float32)
    out = np.zeros(32 * 24, np.float32)
    run("math", 1, 32, ["x", "out"], {"x": x, "out": out})
    o = out.reshape(32, 24).astype(np.float64)
    v = x.astype(np.float64)
    t = np.arange(32)
    erf = np.vectorize(math.erf)
    want = [np.exp(v), np.exp(v), np.exp2(v), np.log(v), np.log(v), np.maximum(v, 0.5), np.minimum(v, 0.5),
            1 / np.sqrt(v), np.sqrt(v), np.tanh(v - 1), erf(v - 1), 1 - erf(v - 1), v, v / 3, 1 / v, 2 * v + 1,
            v * v - 1, np.maximum(t, 5), np.minimum(t, 5), np.maximum(v, 0.75), np.minimum(v, 0.75),
            np.full(32, np.finfo(np.float32).max, np.float64), np.maximum(t, 3), np.clip(v - 1, 0, 1)]
    for k, w in enumerate(want):
        np.testing.assert_allclose(o[:, k], w, rtol=2e-6, atol=1e-6, err_msg=f"math column {k}")


def test_scalar_arguments():
    y = np.zeros(100, np.float32)
    sc = (Scalar("n", "long long", 100), Scalar("a", "float", 0.5), Scalar("b", "int", -3))
    run("scalars", 2, 64, ["y", "n", "a", "b"], {"y": y}, scalars=sc)
    assert (y == 0.5 * np.arange(100) - 3).all()


def test_argument_types_are_checked():
    y = np.zeros(100, np.float32)
    with pytest.raises(EmulationError, match=r"scalars: parameter 1 is long long, but the launch passes scalar 'n' as int"):
        run("scalars", 2, 64, ["y", "n", "a", "b"], {"y": y},
            scalars=(Scalar("n", "int", 100), Scalar("a", "float", 0.5), Scalar("b", "int", -3)))
    with pytest.raises(EmulationError, match=r"parameter 0 points to float, but buffer 'y' is int32"):
        run("scalars", 2, 64, ["y", "n", "a", "b"], {"y": y.view(np.int32)},
            scalars=(Scalar("n", "long long", 100), Scalar("a", "float", 0.5), Scalar("b", "int", -3)))


@pytest.mark.parametrize("check", [False, True], ids=["plain", "check"])
def test_warp_synchronous_code_is_not_a_race(check):
    x = np.arange(256, dtype=np.float32)
    out = np.zeros(2, np.float32)
    run("warp_tail", 2, 128, ["x", "out"], {"x": x, "out": out}, check=check)
    assert out.tolist() == [x[:128].sum(), x[128:].sum()]
    hand = np.zeros(32, np.float32)
    run("shfl_handoff", 1, 32, ["out"], {"out": hand}, check=check)
    t = np.arange(32)
    assert (hand == (t ^ 1) + (t + 1) % 32).all()
    hist = np.zeros(4, np.int32)
    run("shared_atomics", 1, 64, ["out"], {"out": hist}, check=check)
    assert (hist == 16).all()


# ---- planted bugs ------------------------------------------------------------------------------
BUGS = r"""
extern "C" __global__ void no_barrier(const float* x, float* y) {
  __shared__ float tile[64];
  const int t = threadIdx.x;
  tile[t] = x[blockIdx.x * 64 + t];
  // __syncthreads() is missing here
  y[blockIdx.x * 64 + t] = tile[(t + 1) % 64];
}

extern "C" __global__ void no_syncwarp(const float* x, float* out) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = x[t];
  s[t + 32] = x[t + 32];
  __syncthreads();
  volatile float* vs = s;
  for (int k = 32; k > 0; k >>= 1) vs[t] += vs[t + k];   // the pre-Volta idiom: races without __syncwarp
  if (t == 0) out[0] = vs[0];
}

// A shuffle or a vote synchronises the lanes' execution, not their memory: only __syncwarp orders
// one lane's shared store before another lane's load (CUDA programming guide, warp sync functions).
extern "C" __global__ void shfl_handoff_unordered(float* out, int vote) {
  __shared__ float s[32];
  const int t = threadIdx.x;
  s[t] = (float)t;
  const int token = vote ? __all_sync(FULL, t >= 0) * (t ^ 1) : __shfl_xor_sync(FULL, t, 1);
  out[t] = s[token] + s[(t + 1) % 32];
}

extern "C" __global__ void read_past_end(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + x[i + 1];
}

extern "C" __global__ void write_past_end(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n && i < n + 1) y[i] = x[i < n ? i : 0];
}

extern "C" __global__ void read_before_start(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i - 1];
}

extern "C" __global__ void shared_past_end(float* y) {
  __shared__ float s[32];
  const int t = threadIdx.x;
  s[t] = (float)t;
  __syncthreads();
  y[t] = s[t + 1];
}

extern "C" __global__ void misaligned(const float* x, float4* y) {
  y[threadIdx.x] = *reinterpret_cast<const float4*>(x + 1);
}

extern "C" __global__ void wild(float* y) {
  if (threadIdx.x == 3) reinterpret_cast<float*>(0x10)[0] = 1.0f;
  y[threadIdx.x] = 1.0f;
}

extern "C" __global__ void divide(int* y, int d) { y[threadIdx.x] = 7 / (d - (int)threadIdx.x); }

extern "C" __global__ void asserts(float* y) {
  assert(threadIdx.x < 5);
  y[threadIdx.x] = 1.0f;
}

extern "C" __global__ void deadlock(float* y) {
  float v = (float)threadIdx.x;
  if (threadIdx.x < 16) __syncthreads();
  else v = __shfl_down_sync(FULL, v, 1);
  y[threadIdx.x] = v;
}

extern "C" __global__ void partial_warp(float* y) {
  float v = (float)threadIdx.x;
  v += __shfl_down_sync(FULL, v, 16);
  y[threadIdx.x] = v;
}

extern "C" __global__ void dynamic_race(float* y) {
  extern __shared__ float buf[];
  buf[threadIdx.x] = 1.0f;
  y[threadIdx.x] = buf[threadIdx.x ^ 1];
}

extern "C" __global__ void deep_stack(float* y, int n) {
  volatile float big[512 * 1024];
  big[n] = 1.0f;
  y[threadIdx.x] = big[n];
}
""".replace("FULL", FULL)


@pytest.mark.parametrize("order", ["forward", "reverse", "random"])
def test_missing_barrier_shows_in_the_output(order):
    x = np.arange(128, dtype=np.float32)
    y = np.zeros_like(x)
    run("no_barrier", 2, 64, ["x", "y"], {"x": x, "y": y}, order=order, source=BUGS)
    t = np.arange(128)
    want = x[t // 64 * 64 + (t + 1) % 64]
    assert not (y == want).all()          # unwritten shared words read as NaN
    assert np.isnan(y).any()


def test_missing_barrier_is_a_race_in_check_mode():
    x = np.arange(128, dtype=np.float32)
    with pytest.raises(EmulationError) as e:
        run("no_barrier", 2, 64, ["x", "y"], {"x": x, "y": np.zeros_like(x)}, check=True, source=BUGS)
    msg = str(e.value)
    assert msg.startswith("no_barrier: shared-memory race on tile[")
    assert "in the same barrier phase" in msg and "block (" in msg and "\n" not in msg
    assert e.value.kind == "race" and e.value.buffer == "tile"
    # forward: thread 0 reads tile[1] before thread 1 writes it, so the write is the racing access
    assert "thread (1,0,0) writes it after thread (0,0,0) read it" in msg
    # reverse: thread 62 reads tile[63], which thread 63 wrote in this phase
    with pytest.raises(EmulationError, match=r"thread \(62,0,0\) reads it after thread \(63,0,0\) wrote it"):
        run("no_barrier", 1, 64, ["x", "y"], {"x": x, "y": np.zeros_like(x)}, check=True, order="reverse",
            source=BUGS)


def test_race_and_overflow_in_dynamic_shared_memory():
    y = np.zeros(32, np.float32)
    with pytest.raises(EmulationError, match=r"dynamic_race: shared-memory race on byte 4 of the dynamic shared memory "
                                             r"\(extern __shared__, 128 bytes at launch\): thread \(1,0,0\) writes it after "
                                             r"thread \(0,0,0\) read it"):
        run("dynamic_race", 1, 32, ["y"], {"y": y}, smem=128, check=True, source=BUGS)
    with pytest.raises(EmulationError, match=r"out-of-bounds shared-memory write of 4 bytes at byte 124 of the dynamic "
                                             r"shared memory \(extern __shared__, 64 bytes at launch\) by thread \(31,"):
        run("dynamic_race", 1, 32, ["y"], {"y": y}, smem=64, check=True, order="reverse", source=BUGS)


def test_warp_synchronous_code_without_syncwarp_is_a_race():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(1, np.float32)
    run("no_syncwarp", 1, 32, ["x", "out"], {"x": x, "out": out}, source=BUGS)   # "works" in plain mode
    with pytest.raises(EmulationError, match=r"no_syncwarp: shared-memory race on s\[\d+\]"):
        run("no_syncwarp", 1, 32, ["x", "out"], {"x": x, "out": out}, check=True, source=BUGS)


def test_a_shuffle_or_vote_does_not_order_shared_memory():
    # the same hand-off with __syncwarp (shfl_handoff) passes the checker: test_warp_synchronous_code_is_not_a_race
    for vote in (0, 1):
        out = np.zeros(32, np.float32)
        run("shfl_handoff_unordered", 1, 32, ["out", "vote"], {"out": out}, source=BUGS,
            scalars=(Scalar("vote", "int", vote),))                           # "works" in plain mode
        t = np.arange(32)
        assert (out == (t ^ 1) + (t + 1) % 32).all()
        with pytest.raises(EmulationError, match=r"shfl_handoff_unordered: shared-memory race on s\[\d+\] .*: thread "
                                                 r"\(\d+,0,0\) reads it after thread \(\d+,0,0\) wrote it"):
            run("shfl_handoff_unordered", 1, 32, ["out", "vote"], {"out": out}, check=True, source=BUGS,
                scalars=(Scalar("vote", "int", vote),))


def _n(n):
    return (Scalar("n", "int", n),)


def test_out_of_bounds_read_is_named():
    x, y = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    with pytest.raises(EmulationError) as e:
        run("read_past_end", 2, 64, ["x", "y", "n"], {"x": x, "y": y}, scalars=_n(100), check=True, source=BUGS)
    assert str(e.value) == ("read_past_end: out-of-bounds read of 4 bytes at x[100] (0 bytes past its end; x has 100 "
                            "float32 elements) by thread (35,0,0) of block (1,0,0)")
    assert (e.value.thread, e.value.block, e.value.buffer, e.value.index) == ((35, 0, 0), (1, 0, 0), "x", 100)
    assert isinstance(e.value, LaunchError)
    assert (y == 0).all()                 # buffers are copied back only after success
    with pytest.raises(EmulationError, match=r"read_before_start: out-of-bounds read of 4 bytes at x\[-1\] "
                                             r"\(4 bytes before its start; .*thread \(0,0,0\) of block \(0,0,0\)"):
        run("read_before_start", 2, 64, ["x", "y", "n"], {"x": x, "y": y}, scalars=_n(100), check=True, source=BUGS)


def test_out_of_bounds_write_is_named():
    x, y = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    with pytest.raises(EmulationError, match=r"^write_past_end: out-of-bounds write of 4 bytes at y\[100\] .* by "
                                             r"thread \(36,0,0\) of block \(1,0,0\)$"):
        run("write_past_end", 2, 64, ["x", "y", "n"], {"x": x, "y": y}, scalars=_n(100), check=True, source=BUGS)
    # without check the red zone still catches it, after the launch
    with pytest.raises(EmulationError, match=r"write_past_end: out-of-bounds write at y\[100\] .*red zone"):
        run("write_past_end", 2, 64, ["x", "y", "n"], {"x": x, "y": y}, scalars=_n(100), source=BUGS)


def test_out_of_bounds_shared_and_misaligned():
    y = np.zeros(32, np.float32)
    with pytest.raises(EmulationError, match=r"shared_past_end: out-of-bounds shared-memory read of 4 bytes at "
                                             r"s\[32\] .* by thread \(31,0,0\) of block \(0,0,0\)"):
        run("shared_past_end", 1, 32, ["y"], {"y": y}, check=True, source=BUGS)
    with pytest.raises(EmulationError, match=r"misaligned: misaligned 16-byte read at x\[1\] .*thread \(0,0,0\)"):
        run("misaligned", 1, 4, ["x", "y"], {"x": np.zeros(8, np.float32), "y": np.zeros(16, np.float32)},
            check=True, source=BUGS, alignment=(("x", 16), ("y", 16)))


def test_faults_traps_and_deadlocks_raise_instead_of_crashing():
    y = np.zeros(32, np.float32)
    with pytest.raises(EmulationError, match=r"wild: illegal memory access \(signal 11 at address 0x10\) in thread "
                                             r"\(3,0,0\) of block \(0,0,0\)"):
        run("wild", 1, 32, ["y"], {"y": y}, source=BUGS)
    with pytest.raises(EmulationError, match=r"divide: arithmetic exception .* thread \(5,0,0\)"):
        run("divide", 1, 32, ["y", "d"], {"y": np.zeros(32, np.int32)}, scalars=(Scalar("d", "int", 5),),
            source=BUGS)
    with pytest.raises(EmulationError, match=r"asserts: assert\(.*threadIdx.*\) failed .* thread \(5,0,0\)"):
        run("asserts", 1, 32, ["y"], {"y": y}, source=BUGS)
    with pytest.raises(EmulationError, match=r"deadlock: deadlock: lane 16 waits at __shfl_down_sync .* lane 0 of "
                                             r"its warp waits at __syncthreads"):
        run("deadlock", 1, 32, ["y"], {"y": y}, source=BUGS)
    with pytest.raises(EmulationError, match=r"stack overflow"):
        run("deep_stack", 1, 2, ["y", "n"], {"y": y}, scalars=_n(3), source=BUGS)
    # the emulator still works after all of that
    test_static_shared_and_barrier(dict(check=False, order="forward"))


def test_shuffle_from_a_missing_lane():
    y = np.zeros(48, np.float32)
    run("partial_warp", 1, 48, ["y"], {"y": y}, source=BUGS)
    assert np.isnan(y[32:]).all() and not np.isnan(y[:32]).any()   # lanes 48..63 do not exist: NaN
    with pytest.raises(EmulationError, match=r"__shfl_down_sync reads lane 16 of warp 1, which does not exist"):
        run("partial_warp", 1, 48, ["y"], {"y": y}, check=True, source=BUGS)


# ---- what the emulator refuses ---------------------------------------------------------------------
@pytest.mark.parametrize("body, what", [
    ('asm volatile("membar.gl;");', "inline assembly"),
    ("__nv_fp8_e4m3 h; (void)h;", "FP8"),
    ("cooperative_groups::thread_block b;", "cooperative groups"),
    ("float v = __shfl_down(1.0f, 1);", "without _sync"),
])
def test_unsupported_constructs_are_named(body, what):
    source = PRELUDE + f'extern "C" __global__ void unsupported(float* y) {{\n  {body}\n  y[0] = 1.0f;\n}}\n'
    with pytest.raises(CompileError) as e:
        run("unsupported", 1, 1, ["y"], {"y": np.zeros(1, np.float32)}, source=source)
    assert what in str(e.value) and "CPU emulator does not support" in str(e.value)
    assert f"({PRELUDE.count(chr(10)) + 2}): error" in str(e.value)      # the .cu line


def test_unsupported_header_and_compile_errors():
    with pytest.raises(CompileError, match=r"FP8 types \(cuda_fp8.h\)"):
        build('#include <cuda_fp8.h>\nextern "C" __global__ void k(float* y) { y[0] = 1.0f; }', ["k"])
    with pytest.raises(CompileError) as e:
        build('extern "C" __global__ void k(float* y) {\n  y[0] = undeclared;\n}', ["k"])
    assert "undeclared" in str(e.value) and "(2): error" in e.value.log
    assert "y[0] = undeclared" in e.value.details()
    with pytest.raises(CompileError, match="kernel symbol 'nope' is not defined"):
        build('extern "C" __global__ void k(float* y) { y[0] = 1.0f; }', ["nope"])


# ---- plans: several launches, workspaces, configuration ----------------------------------------
PLANS = r"""
extern "C" __global__ void __launch_bounds__(64) partial(const float* __restrict__ x, float* ws, int* count, int n) {
  __shared__ float s[64];
  const int t = threadIdx.x, i = blockIdx.x * 64 + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int k = 32; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) { ws[blockIdx.x] = s[0]; atomicAdd(count, 1); }
}

extern "C" __global__ void final(const float* ws, const int* count, float* out, float* spare, const float* untouched) {
  float acc = 0.0f;
  for (int i = threadIdx.x; i < *count; i += 32) acc += ws[i];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) { out[0] = acc; out[1] = (float)*count; }
  spare[threadIdx.x] = untouched[threadIdx.x];
}
"""


def test_multi_launch_plan_with_workspaces():
    n = 1000
    blocks = -(-n // 64)
    p = plan(launch("partial", blocks, 64, "x", "ws", "count", "n"),
             launch("final", 1, 32, "ws", "count", "out", "spare", "untouched"),
             workspaces=(Workspace("ws", "float32", blocks), Workspace("count", "int32", 1, fill=0),
                         Workspace("untouched", "float32", 32)),
             scalars=(Scalar("n", "int", n),))
    x = np.arange(n, dtype=np.float32)
    out, spare = np.zeros(2, np.float32), np.zeros(32, np.float32)
    for check in (False, True):
        execute(p, PLANS, {"x": x, "out": out, "spare": spare, "unused": np.zeros(3)}, check=check, order="random",
                seed=7)
        assert out.tolist() == [x.sum(), blocks]
        assert np.isnan(spare).all()      # workspaces without a fill value read as NaN


def test_launch_configuration_is_checked():
    for grid, block, smem, what in [((1, 1, 1), (2048, 1, 1), 0, "2048 threads per block"),
                                    ((1, 1, 1), (32, 1, 1), 300 * 1024, "bytes of dynamic shared memory")]:
        p = plan(Launch("indices", grid, block, ("out",), smem))
        with pytest.raises(EmulationError, match=what):
            execute(p, SEMANTICS, {"out": np.zeros(8 * 2048, np.int32)})
    with pytest.raises(UsageError, match="order"):
        execute(plan(launch("indices", 1, 1, "out")), SEMANTICS, {"out": np.zeros(8, np.int32)}, order="sideways")
    with pytest.raises(UsageError, match="'missing' is not a buffer"):
        execute(plan(launch("indices", 1, 1, "missing")), SEMANTICS, {"out": np.zeros(8, np.int32)})


def test_libraries_are_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    source = 'extern "C" __global__ void cached(float* y) { y[threadIdx.x] = 3.0f; }'
    lib = build(source, ["cached"])
    assert lib.path.is_relative_to(tmp_path / "emulate") and lib.path.suffix == ".so"
    assert build(source, ["cached"]) is lib
    assert list((tmp_path / "emulate").glob("runner-*.o"))


# ---- a 2-D register-tiled shared-memory SGEMM: 128x128 tile, 256 threads of 8x8 ----------------------
SGEMM = r"""
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
extern "C" __global__ void __launch_bounds__(256)
sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  alignas(16) __shared__ float As[2][BK][BM];   // A^T, double-buffered
  alignas(16) __shared__ float Bs[2][BK][BN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int a_r = tid / 2, a_c = (tid % 2) * 4, b_r = tid / 32, b_c = (tid % 32) * 4;
  float acc[TM][TN] = {};
  int buf = 0;
  auto load = [&](int k0, int b) {
    const float4 a = *reinterpret_cast<const float4*>(&A[(size_t)(row0 + a_r) * K + k0 + a_c]);
    As[b][a_c + 0][a_r] = a.x; As[b][a_c + 1][a_r] = a.y; As[b][a_c + 2][a_r] = a.z; As[b][a_c + 3][a_r] = a.w;
    kg_cp_async16(&Bs[b][b_r][b_c], &B[(size_t)(k0 + b_r) * N + col0 + b_c]);
    kg_cp_async_commit();
  };
  load(0, 0);
  kg_cp_async_wait<0>();
  __syncthreads();
  for (int k0 = 0; k0 < K; k0 += BK) {
    if (k0 + BK < K) load(k0 + BK, buf ^ 1);
    #pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
      *reinterpret_cast<float4*>(&a[0]) = *reinterpret_cast<const float4*>(&As[buf][k][ty * TM]);
      *reinterpret_cast<float4*>(&a[4]) = *reinterpret_cast<const float4*>(&As[buf][k][ty * TM + 4]);
      *reinterpret_cast<float4*>(&b[0]) = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * TN]);
      *reinterpret_cast<float4*>(&b[4]) = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * TN + 4]);
      #pragma unroll
      for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    kg_cp_async_wait<0>();
    __syncthreads();
    buf ^= 1;
  }
  #pragma unroll
  for (int i = 0; i < TM; ++i) {
    float* c = &C[(size_t)(row0 + ty * TM + i) * N + col0 + tx * TN];
    *reinterpret_cast<float4*>(c) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(c + 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "check"])
def test_sgemm_256_timing(check, record_property, capsys):
    m = n = k = 256
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    p = plan(launch("sgemm_tiled", (n // 128, m // 128), 256, "A", "B", "C", "M", "N", "K"),
             scalars=(Scalar("M", "int", m), Scalar("N", "int", n), Scalar("K", "int", k)),
             alignment=(("A", 16), ("B", 16), ("C", 16)))                  # its float4 loads and stores
    build(PRELUDE + SGEMM, ["sgemm_tiled"], check=check, name="emu_test")     # compile outside the timing
    t0 = time.perf_counter()
    execute(p, PRELUDE + SGEMM, {"A": a, "B": b, "C": c}, check=check)
    seconds = time.perf_counter() - t0
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-5
    record_property("sgemm_256_emulate_seconds" + ("_check" if check else ""), round(seconds, 3))
    with capsys.disabled():
        print(f"\n[emulate] 256^3 SGEMM (128x128 tile, 256 threads){' check=True' if check else ''}: {seconds:.2f} s")
    assert seconds < (120 if check else 30)
