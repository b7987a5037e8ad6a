"""Why the shared-memory prefetch forms are slower than the plain loop: hand-written variants of the
grid-stride sum over 2^28 floats, each timed at 1 and 4 blocks an SM (256 threads a block).

    OUT=/tmp/out python3 bench/prefetch_shared_micro.py

A diagnostic, not a kernelgen kernel: it isolates one choice at a time (the smem layout of the
per-thread slots, cp.async's cache operator, wait depth) so the template's form can follow the
measurement. Each kernel writes one partial sum a thread; the sums are checked against each other.
Prints a markdown table and writes $OUT/prefetch_shared_micro.md.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

HEAD = r"""
__device__ __forceinline__ void cpa(void* s, const void* g, bool full) {
  unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.%(CACHE)s.shared.global [%%0], [%%1], 16, %%2;\n" :: "r"(a), "l"(g), "r"(full ? 16 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %%0;\n" :: "n"(N)); }
__device__ __forceinline__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }
#define D %(D)d
// slot s of thread t: thread-major (t * SLOT + s, the seed note's per-thread slots) or slot-major (s * T + t)
#define SLOT_AT(s) (%(SLOTMAJOR)d ? smem[(s) * blockDim.x + threadIdx.x] : smem[threadIdx.x * %(SLOT)d + (s)])
extern "C" __global__ void k(const float4* __restrict__ x, long long n, float* __restrict__ out) {
  extern __shared__ float4 smem[];
  const long long first = blockIdx.x * (long long)blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
  float acc = 0.f;
%(BODY)s
  out[first] = acc;
}
"""

BODIES = {
    "plain": "  for (long long j = first; j < n; j += stride) acc += sum4(x[j]);",
    "registers batch": """  for (long long j = first; j < n; j += D * stride) {
    float4 v[D];
    #pragma unroll
    for (int s = 0; s < D; ++s) { long long js = j + s * stride; v[s] = js < n ? x[js] : make_float4(0, 0, 0, 0); }
    #pragma unroll
    for (int s = 0; s < D; ++s) acc += sum4(v[s]);
  }""",
    "shared batch": """  for (long long j = first; j < n; j += D * stride) {
    #pragma unroll
    for (int s = 0; s < D; ++s) { long long js = j + s * stride; cpa(&SLOT_AT(s), x + (js < n ? js : 0), js < n); }
    commit(); wait<0>();
    #pragma unroll
    for (int s = 0; s < D; ++s) acc += sum4(SLOT_AT(s));
  }""",
    "shared rolling": """  #pragma unroll
  for (int s = 0; s < D; ++s) { long long js = first + s * stride; cpa(&SLOT_AT(s), x + (js < n ? js : 0), js < n); commit(); }
  int r = 0;
  for (long long j = first; j < n; j += stride) {
    wait<D - 1>();
    acc += sum4(SLOT_AT(r));
    long long jn = j + D * stride;
    cpa(&SLOT_AT(r), x + (jn < n ? jn : 0), jn < n); commit();
    r = r + 1 == D ? 0 : r + 1;
  }
  wait<0>();""",
    "shared rolling, unrolled ring": """  #pragma unroll
  for (int s = 0; s < D; ++s) { long long js = first + s * stride; cpa(&SLOT_AT(s), x + (js < n ? js : 0), js < n); commit(); }
  for (long long j = first; j < n; j += D * stride) {
    #pragma unroll
    for (int r = 0; r < D; ++r) {
      long long js = j + r * stride;
      wait<D - 1>();
      if (js < n) acc += sum4(SLOT_AT(r));
      long long jn = js + D * stride;
      cpa(&SLOT_AT(r), x + (jn < n ? jn : 0), jn < n); commit();
    }
  }
  wait<0>();""",
}


def variants():
    yield "plain", dict(BODY=BODIES["plain"], D=1, SLOT=1, SLOTMAJOR=0, CACHE="cg")
    for d in (4, 8):
        yield f"registers batch D={d}", dict(BODY=BODIES["registers batch"], D=d, SLOT=d, SLOTMAJOR=0, CACHE="cg")
    for form in ("shared batch", "shared rolling", "shared rolling, unrolled ring"):
        for d in (2, 4, 8):
            for slot, major, cache, what in ((d, 0, "cg", "thread-major"), (d + 1, 0, "cg", "thread-major padded"),
                                             (d, 1, "cg", "slot-major"), (d, 0, "ca", "thread-major .ca")):
                yield f"{form} D={d} {what}", dict(BODY=BODIES[form], D=d, SLOT=slot, SLOTMAJOR=major, CACHE=cache)


def main() -> None:
    import cupy as cp
    out_dir = Path(os.environ.get("OUT", "."))
    n4 = 1 << 26                                   # float4s: 2^28 floats, 1 GiB
    x = cp.random.rand(n4 * 4, dtype=cp.float32).view(cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    threads = 256
    lines = [f"## Shared-memory prefetch variants, sum of 2^28 floats, {sms} SMs, {threads} threads a block\n",
             "| variant | 1 block/SM GB/s | 4 blocks/SM GB/s |", "|---|---|---|"]
    ref = None
    for name, params in variants():
        mod = cp.RawModule(code=HEAD % params, options=("-std=c++17",))
        k = mod.get_function("k")
        smem = params["SLOT"] * threads * 16 if params["BODY"] not in (BODIES["plain"], BODIES["registers batch"]) else 0
        if smem > 48 * 1024:
            k.max_dynamic_shared_size_bytes = smem
        row = [name]
        for per_sm in (1, 4):
            grid = sms * per_sm
            part = cp.full(grid * threads, cp.nan, dtype=cp.float32)
            args = (x.view(cp.float32), np.int64(n4), part)
            k((grid,), (threads,), args, shared_mem=smem)
            total = float(part.sum(dtype=cp.float64))
            ref = total if ref is None else ref
            if not np.isclose(total, ref, rtol=1e-4):
                row.append(f"WRONG ({total} vs {ref})")
                continue
            times = []
            for _ in range(10):
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record(); k((grid,), (threads,), args, shared_mem=smem); b.record(); b.synchronize()
                times.append(cp.cuda.get_elapsed_time(a, b) * 1e-3)
            row.append(f"{n4 * 16 / np.median(times) / 1e9:.0f}")
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "prefetch_shared_micro.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
