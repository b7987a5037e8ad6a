"""The timing floor under each method: an empty kernel and plain device copies, timed with events
around one launch (L2 flushed) and with CUDA-graph replays over rotating buffers (kernelgen.timing).

    PYTHONPATH=. python3 bench/timing_floor.py        # on a GPU; bench_results/timing_graph_h100.txt
"""
import datetime

import cupy

from kernelgen import gpu
from kernelgen.timing import MIN_LAUNCHES, rotation, time_callable, time_graph

dev = gpu.device()
print(f"{dev.gpu} ({dev.arch}), L2 {dev.l2_bytes >> 20} MiB, {datetime.date.today()}, cupy {cupy.__version__}")
src = r'''
extern "C" __global__ void empty() {}
// Each thread copies N float4 (all N loads issued before the stores, as a register-row softmax does).
template <int N> __device__ void copy(const float4* __restrict__ s, float4* __restrict__ d) {
  const long long i0 = (long long)blockIdx.x * blockDim.x * N + threadIdx.x;
  float4 v[N];
  #pragma unroll
  for (int k = 0; k < N; ++k) v[k] = s[i0 + k * blockDim.x];
  #pragma unroll
  for (int k = 0; k < N; ++k) d[i0 + k * blockDim.x] = v[k];
}
extern "C" __global__ void copy1(const float4* s, float4* d) { copy<1>(s, d); }
extern "C" __global__ void copy4(const float4* s, float4* d) { copy<4>(s, d); }
'''
mod = cupy.RawModule(code=src, options=("-std=c++17",))
empty = mod.get_function("empty")
rows = [("empty kernel, 256 blocks x 256 threads", 0, [lambda: empty((256,), (256,), ())], MIN_LAUNCHES)]
for mib in (4, 32, 64):  # 4 MiB each way = the softmax 8192x128 traffic; 32 = fp16 softmax 4096^2; 64 for the bandwidth
    nbytes = mib << 20
    sets, launches = rotation(2 * nbytes, dev.l2_bytes)
    pairs = [(cupy.random.random(nbytes // 4, dtype=cupy.float32), cupy.empty(nbytes // 4, cupy.float32))
             for _ in range(sets)]
    rows.append((f"cudaMemcpyAsync {mib} MiB ({2 * mib} MiB read+write)", 2 * nbytes,
                 [lambda s=s, d=d, n=nbytes: d.data.copy_from_device_async(s.data, n) for s, d in pairs], launches))
    for per_thread in (1, 4):
        fn, blocks = mod.get_function(f"copy{per_thread}"), nbytes // 16 // 256 // per_thread
        rows.append((f"copy kernel {mib} MiB, {per_thread} float4/thread, {blocks} blocks", 2 * nbytes,
                     [lambda s=s, d=d, fn=fn, b=blocks: fn((b,), (256,), (s, d)) for s, d in pairs], launches))
print(f"{'what':50s} {'events us':>10s} {'graph us':>9s}  graph: launches/sets   GB/s events / graph")
for name, moved, calls, launches in rows:
    ev, gr = time_callable(calls[0], reps=50).median_us, time_graph(calls, launches, reps=50).median_us
    rate = f"{moved / ev / 1e3:.0f} / {moved / gr / 1e3:.0f}" if moved else "-"
    print(f"{name:50s} {ev:10.2f} {gr:9.2f}  {launches:4d}/{len(calls):<4d}             {rate}")
