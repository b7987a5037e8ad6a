"""The instruction ceilings the GEMM targets sit under: mma.sync m16n8k16 (fp16 and bf16 in, fp32
accumulators) and FFMA, each issued from registers only (no memory in the loop), every SM full.

    PYTHONPATH=. python3 bench/mma_peak.py          # on a GPU; prints TFLOP/s per configuration

Each warp keeps `chains` independent accumulators so that one MMA's latency hides behind the others;
the best over warps per block and chain counts is the instruction's throughput on this GPU. The
mma.sync GEMM ladder step is bounded by it (plus what loads and ldmatrix take from the same warps).
"""
import datetime

import cupy

from kernelgen import gpu
from kernelgen.timing import time_callable

ITERS = 4096
SRC = r'''
template <int CHAINS, bool BF16>
__device__ void mma_loop(float* out, int iters) {
  unsigned a[4], b[2];
  #pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ (threadIdx.x * (i + 1));   // varied inputs
  b[0] = 0x3c003c00u ^ threadIdx.x; b[1] = 0x3c003c00u ^ (threadIdx.x << 1);
  float c[CHAINS][4] = {};
  for (int it = 0; it < iters; ++it) {
    #pragma unroll
    for (int ch = 0; ch < CHAINS; ++ch) {
      if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[ch][0]), "+f"(c[ch][1]), "+f"(c[ch][2]), "+f"(c[ch][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[ch][0]), "+f"(c[ch][1]), "+f"(c[ch][2]), "+f"(c[ch][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  }
  float s = 0.f;
  #pragma unroll
  for (int ch = 0; ch < CHAINS; ++ch) s += c[ch][0] + c[ch][1] + c[ch][2] + c[ch][3];
  if (s == 12345.f) out[threadIdx.x] = s;   // keeps the loop alive; never true for these inputs
}
template <int CHAINS>
__device__ void ffma_loop(float* out, int iters) {
  float x[CHAINS], y = 1.0001f + threadIdx.x * 1e-7f, z = 0.9999f;
  #pragma unroll
  for (int ch = 0; ch < CHAINS; ++ch) x[ch] = ch * 1e-3f;
  for (int it = 0; it < iters; ++it) {
    #pragma unroll
    for (int r = 0; r < 8; ++r) {
      #pragma unroll
      for (int ch = 0; ch < CHAINS; ++ch) x[ch] = fmaf(x[ch], y, z);
    }
  }
  float s = 0.f;
  #pragma unroll
  for (int ch = 0; ch < CHAINS; ++ch) s += x[ch];
  if (s == 12345.f) out[threadIdx.x] = s;
}
extern "C" __global__ void mma_f16_4(float* o, int n) { mma_loop<4, false>(o, n); }
extern "C" __global__ void mma_f16_8(float* o, int n) { mma_loop<8, false>(o, n); }
extern "C" __global__ void mma_f16_16(float* o, int n) { mma_loop<16, false>(o, n); }
extern "C" __global__ void mma_bf16_8(float* o, int n) { mma_loop<8, true>(o, n); }
extern "C" __global__ void mma_bf16_16(float* o, int n) { mma_loop<16, true>(o, n); }
extern "C" __global__ void ffma_8(float* o, int n) { ffma_loop<8>(o, n); }
extern "C" __global__ void ffma_16(float* o, int n) { ffma_loop<16>(o, n); }
'''
FLOP = {"mma": 2 * 16 * 8 * 16, "ffma": 2}     # per warp instruction (mma) and per thread instruction (ffma)


def main():
    dev = gpu.device()
    print(f"# instruction ceilings: {dev.gpu} ({dev.arch}, {dev.sms} SMs), {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print("# events around one launch, median of 10; blocks = SMs x blocks_per_sm\n")
    mod = cupy.RawModule(code=SRC, options=("-std=c++17",))
    out = cupy.zeros(1024, cupy.float32)
    print("| kernel | chains | warps/block | blocks/SM | us | TFLOP/s |")
    print("|---|---|---|---|---|---|")
    for name in ("mma_f16_4", "mma_f16_8", "mma_f16_16", "mma_bf16_8", "mma_bf16_16", "ffma_8", "ffma_16"):
        fn, chains = mod.get_function(name), int(name.rsplit("_", 1)[1])
        for warps, per_sm in ((4, 1), (4, 2), (8, 1), (8, 2), (16, 1)):
            blocks, threads = dev.sms * per_sm, 32 * warps
            t = time_callable(lambda: fn((blocks,), (threads,), (out, cupy.int32(ITERS))), reps=10).median_us
            if name.startswith("mma"):
                flop = blocks * warps * ITERS * chains * FLOP["mma"]
            else:
                flop = blocks * threads * ITERS * 8 * chains * FLOP["ffma"]
            print(f"| {name} | {chains} | {warps} | {per_sm} | {t:.1f} | {flop / t / 1e6:.1f} |")


if __name__ == "__main__":
    main()
