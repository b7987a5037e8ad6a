// Prototype, not a kernelgen template: NT SGEMM (C = A . B^T, A's and B's rows along K, as x . W^T) on Hopper,
// A's and B's K tiles (32 floats, 128-byte swizzled) landed by TMA through STAGES stages on mbarriers (thread 0
// issues the copies LAG tiles behind the stage's release, so no warp waits on a block barrier), each thread's
// TM x TN tile read as K vectors (lanes on adjacent rows, the swizzle keeping their 16-byte reads in distinct
// banks). Measured (bench_results/2026-11-25-s19/): 0.90-0.93x cuBLAS at the 7B layer's shapes, below the
// register-copied 256x128 tile's 0.94-0.95x; ncu: issue slots 77-79% busy, dispatch stalls 0.33-0.35 an
// instruction against cuBLAS's 0.10. Build flags: BM BN TM TN STAGES LAG UNROLL PIPE (B's next fragments during
// this step's math) HB64 / A64 (8-byte fragment loads) MINB GROUP; -DKERNEL_ONLY for ptxas' report alone.
// The figures were measured at commit 76892f1; since then both loops share loadb and math, which left the SASS's
// instructions and FFMA register reads as they were and renumbered its registers (ffma_banks.py).
#include <cuda.h>
#include <cuda_runtime.h>
#ifndef KERNEL_ONLY
#include <cublas_v2.h>
#endif
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <random>

#ifndef BM
#define BM 256
#endif
#ifndef BN
#define BN 128
#endif
#ifndef TM
#define TM 16
#endif
#ifndef TN
#define TN 8
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef GROUP
#define GROUP 8
#endif
#define BK 32
constexpr int KUNROLL = UNROLL;
#define LM 4
#define LN 8
constexpr int WM = LM * TM, WN = LN * TN;
constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
constexpr int CONSUMERS = WARPS_M * WARPS_N * 32;
constexpr int THREADS = CONSUMERS;
#ifndef A64
#define A64 0
#endif
#ifndef HB64
#define HB64 0
#endif
#ifndef PIPE
#define PIPE 0
#endif
#ifndef LAG
#define LAG 2
#endif
constexpr int A_BYTES = BM * BK * 4, B_BYTES = BN * BK * 4, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int SMEM = STAGES * STAGE_BYTES + 2 * STAGES * 8 + 1024;

#include "../../templates/common/wgmma.cuh"   // kg_mbar_*, kg_tma_load_2d, kg_tensor_map

__global__ void __launch_bounds__(THREADS, MINB)
sgemm_tma(const __grid_constant__ kg_tensor_map tmA, const __grid_constant__ kg_tensor_map tmB, float* __restrict__ C,
          int M, int N, int K) {
  extern __shared__ unsigned char raw[];
  unsigned char* tiles = raw + ((1024 - (kg_smem(raw) & 1023)) & 1023);   // 1024-byte aligned (the 128-byte swizzle's period)
  unsigned long long* full = (unsigned long long*)(tiles + STAGES * STAGE_BYTES);
  unsigned long long* empty = full + STAGES;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // grouped block order
  const int gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
  const int id = blockIdx.x, per = GROUP * gx, g = id / per, first = g * GROUP;
  const int rows = min(GROUP, gy - first);
  const int by = first + (id % per) % rows, bx = (id % per) / rows;
  const int m0 = by * BM, n0 = bx * BN;
  const int ktiles = (K + BK - 1) / BK;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) { kg_mbar_init(&full[s], 1); kg_mbar_init(&empty[s], CONSUMERS); }
    kg_mbar_init_fence();
  }
  __syncthreads();
  // Thread 0 loads tile t into stage t % STAGES: tiles 0 .. STAGES-LAG-1 first, then at tile kt the tile
  // kt + STAGES - LAG, into the stage every thread released after tile kt - LAG.
  auto produce = [&](int t) {
    const int s = t % STAGES;
    if (t >= STAGES) kg_mbar_wait(&empty[s], ((t / STAGES) - 1) & 1);
    unsigned char* st = tiles + s * STAGE_BYTES;
    kg_mbar_expect_bytes(&full[s], STAGE_BYTES);
    kg_tma_load_2d(st, &tmA, &full[s], t * BK, m0);
    kg_tma_load_2d(st + A_BYTES, &tmB, &full[s], t * BK, n0);
  };
  if (threadIdx.x == 0)
    for (int t = 0; t < STAGES - LAG && t < ktiles; ++t) produce(t);
  const int wm = warp / WARPS_N, wn = warp % WARPS_N, lm = lane / LN, ln = lane % LN;
  const int xa0 = lm << 4, xa1 = (lm + 4) << 4, xb = ln << 4;   // row & 7 of A's even / odd rows, of B's rows, as chunk bytes
  const unsigned char* const a_base = tiles + (wm * WM + lm) * 128;
  const unsigned char* const b_base = tiles + A_BYTES + (wn * WN + ln) * 128;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
  // A step of K (chunk c, 4 floats, of the stage at as / bs): B's rows' fragments into h (HB64: two 8-byte loads a
  // row, whose pairs land in registers ptxas places freely, where a float4 of B and one of A put the same step of K
  // in the same register bank), then each A row's (A64: likewise) times them.
  auto loadb = [&](float4 (&h)[TN], const unsigned char* bs, int c) {
    const unsigned char* const pb = bs + ((c << 4) ^ xb);
#pragma unroll
    for (int j = 0; j < TN; ++j) {
#if HB64
      const float2 lo = *reinterpret_cast<const float2*>(pb + j * LN * 128);
      const float2 hi = *reinterpret_cast<const float2*>(pb + j * LN * 128 + 8);
      h[j] = make_float4(lo.x, lo.y, hi.x, hi.y);
#else
      h[j] = *reinterpret_cast<const float4*>(pb + j * LN * 128);
#endif
    }
  };
  auto math = [&](const float4 (&hb)[TN], const unsigned char* as, int c) {
    const unsigned char* const pa0 = as + ((c << 4) ^ xa0);
    const unsigned char* const pa1 = as + ((c << 4) ^ xa1);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const unsigned char* const pa = ((i & 1) ? pa1 : pa0) + i * LM * 128;
#if A64
      const float2 alo = *reinterpret_cast<const float2*>(pa), ahi = *reinterpret_cast<const float2*>(pa + 8);
      const float4 a = make_float4(alo.x, alo.y, ahi.x, ahi.y);
#else
      const float4 a = *reinterpret_cast<const float4*>(pa);
#endif
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a.x, hb[j].x, acc[i][j]);
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a.y, hb[j].y, acc[i][j]);
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a.z, hb[j].z, acc[i][j]);
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a.w, hb[j].w, acc[i][j]);
    }
  };
#if PIPE
  // B's fragments of the next step of K are loaded during this step's FMAs (h0 / h1 in turn); the last step
  // of a tile loads the next tile's first, after waiting for it.
  float4 h0[TN], h1[TN];
  kg_mbar_wait(&full[0], 0);
  loadb(h0, b_base, 0);
  for (int kt = 0; kt < ktiles; ++kt) {
    const int s = kt % STAGES, sn = (kt + 1) % STAGES;
    if (threadIdx.x == 0 && kt + STAGES - LAG < ktiles) produce(kt + STAGES - LAG);
    const unsigned char* const as = a_base + s * STAGE_BYTES;
    const unsigned char* const bs = b_base + s * STAGE_BYTES;
    const unsigned char* const bsn = b_base + sn * STAGE_BYTES;
    const bool more = kt + 1 < ktiles;
#pragma unroll (KUNROLL)
    for (int c = 0; c < 8; c += 2) {
      loadb(h1, bs, c + 1);
      math(h0, as, c);
      const bool last = c == 6;
      if (last && more) kg_mbar_wait(&full[sn], ((kt + 1) / STAGES) & 1);
      if (!last || more) loadb(h0, last ? bsn : bs, last ? 0 : c + 2);
      math(h1, as, c + 1);
    }
    kg_mbar_arrive(&empty[s]);
  }
#else
  for (int kt = 0; kt < ktiles; ++kt) {
    const int s = kt % STAGES;
    if (threadIdx.x == 0 && kt + STAGES - LAG < ktiles) produce(kt + STAGES - LAG);
    kg_mbar_wait(&full[s], (kt / STAGES) & 1);
    const unsigned char* const as = a_base + s * STAGE_BYTES;
    const unsigned char* const bs = b_base + s * STAGE_BYTES;
#pragma unroll (KUNROLL)
    for (int c = 0; c < 8; ++c) {
      float4 hb[TN];
      loadb(hb, bs, c);
      math(hb, as, c);
    }
    kg_mbar_arrive(&empty[s]);
  }
#endif
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + wm * WM + i * LM + lm;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + wn * WN + j * LN + ln;
      if (n < N) C[(size_t)m * N + n] = acc[i][j];
    }
  }
}

#ifndef KERNEL_ONLY
static void encode(CUtensorMap* map, const float* p, int rows, int K, int box_rows) {
  cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)K * 4};
  cuuint32_t box[2] = {BK, (cuuint32_t)box_rows};
  cuuint32_t es[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void*)p, dims, strides, box, es,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) { printf("encode failed %d\n", (int)r); exit(1); }
}

int main(int argc, char** argv) {
  const int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]), reps = argc > 4 ? atoi(argv[4]) : 20;
  std::vector<float> hA((size_t)M * K), hB((size_t)N * K);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& x : hA) x = u(rng);
  for (auto& x : hB) x = u(rng);
  float *A, *B, *Cm, *Cr;
  cudaMalloc(&A, hA.size() * 4); cudaMalloc(&B, hB.size() * 4);
  cudaMalloc(&Cm, (size_t)M * N * 4); cudaMalloc(&Cr, (size_t)M * N * 4);
  cudaMemcpy(A, hA.data(), hA.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(B, hB.data(), hB.size() * 4, cudaMemcpyHostToDevice);
  cudaMemset(Cm, 0xff, (size_t)M * N * 4);
  CUtensorMap ta, tb;
  encode(&ta, A, M, K, BM); encode(&tb, B, N, K, BN);
  cudaFuncSetAttribute(sgemm_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
  const int blocks = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  cublasHandle_t h; cublasCreate(&h);
  const float one = 1, zero = 0;
  auto mine = [&] { sgemm_tma<<<blocks, THREADS, SMEM>>>(*reinterpret_cast<kg_tensor_map*>(&ta), *reinterpret_cast<kg_tensor_map*>(&tb), Cm, M, N, K); };
  auto ref = [&] { cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, B, K, A, K, &zero, Cr, N); };
  mine(); ref();
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
  std::vector<float> c1((size_t)M * N), c2((size_t)M * N);
  cudaMemcpy(c1.data(), Cm, c1.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(c2.data(), Cr, c2.size() * 4, cudaMemcpyDeviceToHost);
  double err = 0, mx = 0;
  for (size_t i = 0; i < c1.size(); ++i) { err = std::max(err, (double)fabsf(c1[i] - c2[i])); mx = std::max(mx, (double)fabsf(c2[i])); }
  if (reps == 0) { printf("maxerr/max %.2e\n", err / mx); return 0; }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto time = [&](auto f) {
    std::vector<float> t;
    for (int r = 0; r < 3; ++r) f();
    for (int r = 0; r < reps; ++r) { cudaEventRecord(e0); f(); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms * 1000); }
    std::sort(t.begin(), t.end()); return t[t.size() / 2];
  };
  // interleave to share clocks
  double tm = 0, tr = 0;
  for (int round = 0; round < 3; ++round) { tm += time(mine); tr += time(ref); }
  tm /= 3; tr /= 3;
  int regs = 0; cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, sgemm_tma); regs = fa.numRegs;
  int occ = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, sgemm_tma, THREADS, SMEM);
  printf("A%d H%d P%d BM%d BN%d TM%d TN%d ST%d LAG%d MB%d U%d G%d regs %d spill %zu occ %d | %dx%dx%d mine %.1f us cublas %.1f us ratio %.3f  maxerr/max %.2e\n",
         A64, HB64, PIPE, BM, BN, TM, TN, STAGES, LAG, MINB, UNROLL, GROUP, regs, fa.localSizeBytes, occ, M, N, K, tm, tr, tr / tm, err / mx);
  return 0;
}
#endif
