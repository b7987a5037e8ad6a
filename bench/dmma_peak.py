"""Is fp64 tensor-core math (DMMA) a faster road to an fp32 GEMM than FFMA on this GPU?

    PYTHONPATH=. python3 bench/dmma_peak.py        # on a GPU

fp32 inputs widened to fp64 multiply exactly (24 + 24 bits < 53) and sum in fp64, so a GEMM on DMMA
is at least as accurate as any FFMA SGEMM. It pays only if DMMA runs faster than FFMA does in
practice. Prints (1) the instruction ceilings from registers only: mma.sync f64 at each shape sm_90
has and FFMA, every SM full; (2) cuBLAS DGEMM against cuBLAS SGEMM (TF32 off) at the 7B block's
GEMM shapes, both through torch, events around each, L2 flushed, median of 10.
"""
import datetime

import sys
from pathlib import Path

import cupy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mma_peak import SRC as MMA_PEAK_SRC           # noqa: E402  (its FFMA loop, the same ceiling)

from kernelgen import gpu
from kernelgen.timing import time_callable

ITERS = 1024
SHAPES = {"m8n8k4": (8, 8, 4, 1, 1, 2), "m16n8k4": (16, 8, 4, 2, 1, 4),
          "m16n8k8": (16, 8, 8, 4, 2, 4), "m16n8k16": (16, 8, 16, 8, 4, 4)}   # m, n, k, A, B, C doubles a lane


def mma_source(shape):
    m, n, k, na, nb, nc = SHAPES[shape]
    d = ",".join(f"%{i}" for i in range(nc))
    a = ",".join(f"%{nc + i}" for i in range(na))
    b = ",".join(f"%{nc + na + i}" for i in range(nb))
    outs = ", ".join(f'"+d"(c[ch][{i}])' for i in range(nc))
    ins = ", ".join([f'"d"(a[{i}])' for i in range(na)] + [f'"d"(b[{i}])' for i in range(nb)])
    return f'''
template <int CHAINS>
__device__ void loop_{shape}(double* out, int iters) {{
  double a[{na}], b[{nb}], c[CHAINS][{nc}] = {{}};
  #pragma unroll
  for (int i = 0; i < {na}; ++i) a[i] = 1.0 + 1e-3 * (threadIdx.x + i);
  #pragma unroll
  for (int i = 0; i < {nb}; ++i) b[i] = 1.0 - 1e-3 * (threadIdx.x + i);
  for (int it = 0; it < iters; ++it) {{
    #pragma unroll
    for (int ch = 0; ch < CHAINS; ++ch)
      asm volatile("mma.sync.aligned.{shape}.row.col.f64.f64.f64.f64 {{{d}}}, {{{a}}}, {{{b}}}, {{{d}}};"
                   : {outs} : {ins});
  }}
  double s = 0.0;
  #pragma unroll
  for (int ch = 0; ch < CHAINS; ++ch) for (int i = 0; i < {nc}; ++i) s += c[ch][i];
  if (s == 12345.0) out[threadIdx.x] = s;
}}
extern "C" __global__ void {shape}_4(double* o, int n) {{ loop_{shape}<4>(o, n); }}
extern "C" __global__ void {shape}_8(double* o, int n) {{ loop_{shape}<8>(o, n); }}
'''


SRC = "".join(mma_source(s) for s in SHAPES)


def ceilings(dev):
    mods = {"f64": cupy.RawModule(code=SRC, options=("-std=c++17",)),
            "ffma": cupy.RawModule(code=MMA_PEAK_SRC, options=("-std=c++17",))}
    outs = {"f64": cupy.zeros(1024, cupy.float64), "ffma": cupy.zeros(1024, cupy.float32)}
    print("| kernel | chains | warps/block | blocks/SM | us | TFLOP/s |")
    print("|---|---|---|---|---|---|")
    names = [f"{s}_{c}" for s in SHAPES for c in (4, 8)] + ["ffma_16"]
    for name in names:
        kind = "ffma" if name.startswith("ffma") else "f64"
        fn, out, chains = mods[kind].get_function(name), outs[kind], int(name.rsplit("_", 1)[1])
        for warps, per_sm in ((4, 2), (8, 1), (8, 2), (16, 1)):
            blocks, threads = dev.sms * per_sm, 32 * warps
            if per_sm * warps * 32 * fn.num_regs > 65536:
                continue                                        # more registers than an SM has
            t = time_callable(lambda: fn((blocks,), (threads,), (out, cupy.int32(ITERS))), reps=10).median_us
            if name.startswith("ffma"):
                flop = blocks * threads * ITERS * 8 * chains * 2
            else:
                m, n, k = SHAPES[name.rsplit("_", 1)[0]][:3]
                flop = blocks * warps * ITERS * chains * 2 * m * n * k
            print(f"| {name} | {chains} | {warps} | {per_sm} | {t:.1f} | {flop / t / 1e6:.1f} |")


def vendor():
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print("\n| M x N x K (NT) | cuBLAS SGEMM us | TFLOP/s | cuBLAS DGEMM us | TFLOP/s | DGEMM / SGEMM time |")
    print("|---|---|---|---|---|---|")
    for m, n, k in ((2048, 12288, 4096), (2048, 4096, 4096), (2048, 16384, 4096), (2048, 4096, 16384), (4096, 4096, 4096)):
        row = []
        for dt in (torch.float32, torch.float64):
            a = torch.randn(m, k, device="cuda", dtype=dt)
            w = torch.randn(n, k, device="cuda", dtype=dt)
            ts = []
            for _ in range(12):
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); torch.mm(a, w.t()); e.record(); torch.cuda.synchronize()
                ts.append(s.elapsed_time(e) * 1e3)
            t = sorted(ts[2:])[len(ts[2:]) // 2]
            row += [t, 2 * m * n * k / t / 1e6]
        print(f"| {m}x{n}x{k} | {row[0]:.1f} | {row[1]:.1f} | {row[2]:.1f} | {row[3]:.1f} | {row[2] / row[0]:.3f} |")


def main():
    dev = gpu.device()
    print(f"# DMMA against FFMA: {dev.gpu} ({dev.arch}, {dev.sms} SMs), {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC\n")
    ceilings(dev)
    vendor()


if __name__ == "__main__":
    main()
