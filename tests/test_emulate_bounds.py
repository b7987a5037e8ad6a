"""The CPU emulator's bounds check on accesses far from any buffer: a global load or store kilobytes or
a gigabyte past (or before) its buffer is reported by name before it happens, and the host process lives
on; a shared index below 0 or far past its array is reported as a shared one. In-bounds kernels that
touch their own stack, __device__ and __constant__ data are not reported."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kernelgen.emulate import EmulationError, execute
from kernelgen.ops.base import Kernel, Launch, Plan, Problem, Scalar
from kernelgen.schedule import Schedule

pytestmark = pytest.mark.emulate

FAR = r"""
extern "C" __global__ void far_store(float* y, long long at) {
  y[threadIdx.x] = 1.0f;
  if (threadIdx.x == 7) y[at] = 2.0f;
}

extern "C" __global__ void far_load(float* y, long long at) {
  const float v = y[threadIdx.x == 7 ? at : (int)threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = v + 1.0f;
}

extern "C" __global__ void far_vector_store(float4* y, long long at) {
  if (threadIdx.x == 2) y[at] = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
}

extern "C" __global__ void wild_no_buffers(long long at) {
  if (threadIdx.x == 1) reinterpret_cast<float*>(at)[0] = 1.0f;
}

extern "C" __global__ void shared_far(float* y, int at) {
  __shared__ float s[64];
  s[threadIdx.x] = 1.0f;
  __syncthreads();
  y[threadIdx.x] = s[threadIdx.x == 7 ? at : (int)threadIdx.x];
}

extern "C" __global__ void dynamic_below(float* y, int at) {
  extern __shared__ float buf[];
  buf[threadIdx.x] = 1.0f;
  __syncthreads();
  y[threadIdx.x] = buf[threadIdx.x == 7 ? at : (int)threadIdx.x];
}

// in bounds, but outside the arena and shared memory: __constant__ and __device__ data, the stack
__constant__ float weights[8] = {1, 2, 3, 4, 5, 6, 7, 8};
__device__ int visits;
__device__ float scratch[64];

__device__ __noinline__ float through_stack(const float* p, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += p[i];
  return s;
}

extern "C" __global__ void statics(const float* x, float* y, int n) {
  volatile float local[16];
  const int t = threadIdx.x;
  for (int i = 0; i < 16; ++i) local[i] = x[(t + i) % n];
  float copy[16];
  for (int i = 0; i < 16; ++i) copy[i] = local[i];
  atomicAdd(&visits, 1);
  scratch[t] = weights[t % 8];
  y[t] = through_stack(copy, 16) + scratch[t];
}
"""

N = 64                     # floats in y: 256 bytes
KB12 = 12 * 1024 // 4      # 12 KB in floats
GB1 = (1 << 30) // 4       # 1 GiB in floats


def run(sym, args, buffers, *, scalars=(), smem=0, check=True, grid=1, block=N):
    kern = Kernel("test", "emu_bounds", Schedule("test"), (), "", ())
    plan = Plan(kern, Problem((("n", 1),)), (Launch(sym, (grid, 1, 1), (block, 1, 1), tuple(args), smem),), (),
                tuple(scalars))
    execute(plan, FAR, buffers, check=check)


def at(v, ctype="long long"):
    return (Scalar("at", ctype, v),)


@pytest.mark.parametrize("sym", ["far_store", "far_load"])
@pytest.mark.parametrize("index, where", [
    (N + KB12, f"y[{N + KB12}] (12288 bytes past its end; y has 64 float32 elements)"),
    (-KB12, f"y[{-KB12}] (12288 bytes before its start; y has 64 float32 elements)"),
    (N + GB1, f"y[{N + GB1}] (1073741824 bytes past its end; y has 64 float32 elements)"),
    (-GB1, f"y[{-GB1}] (1073741824 bytes before its start; y has 64 float32 elements)"),
], ids=["12KB-past", "12KB-before", "1GB-past", "1GB-before"])
def test_far_global_access_is_reported_by_name(sym, index, where):
    y = np.zeros(N, np.float32)
    with pytest.raises(EmulationError) as e:
        run(sym, ["y", "at"], {"y": y}, scalars=at(index))
    acc = "write" if sym == "far_store" else "read"
    assert str(e.value) == f"{sym}: out-of-bounds {acc} of 4 bytes at {where} by thread (7,0,0) of block (0,0,0)"
    assert (e.value.kind, e.value.buffer, e.value.index, e.value.thread) == ("out-of-bounds", "y", index, (7, 0, 0))
    assert (y == 0).all()


def test_far_vector_store_and_no_buffer():
    y = np.zeros(N, np.float32)
    with pytest.raises(EmulationError, match=r"^far_vector_store: out-of-bounds write of 16 bytes at y\[3136\] "
                                             r"\(12288 bytes past its end; .*thread \(2,0,0\)"):
        run("far_vector_store", ["y", "at"], {"y": y}, scalars=at(N // 4 + KB12 // 4))
    with pytest.raises(EmulationError, match=r"^wild_no_buffers: out-of-bounds write of 4 bytes at address 0x10 "
                                             r"\(the launch passes no buffer\) by thread \(1,0,0\) of block"):
        run("wild_no_buffers", ["at"], {}, scalars=at(0x10))


def test_shared_index_below_zero_or_far_past_is_a_shared_access():
    y = np.zeros(N, np.float32)
    with pytest.raises(EmulationError, match=r"^dynamic_below: out-of-bounds shared-memory read of 4 bytes at byte -4 "
                                             r"of the dynamic shared memory .* by thread \(7,0,0\)"):
        run("dynamic_below", ["y", "at"], {"y": y}, scalars=at(-1, "int"), smem=N * 4)
    for index in (64 + KB12, 200_000, -KB12, -200_000):   # in the arena past the slot; above it; below it
        with pytest.raises(EmulationError, match=r"^shared_far: out-of-bounds shared-memory read of 4 bytes at "
                                                 r".* by thread \(7,0,0\) of block \(0,0,0\)$"):
            run("shared_far", ["y", "at"], {"y": y}, scalars=at(index, "int"))


def test_in_bounds_statics_and_stack_are_not_reported():
    x = np.arange(N, dtype=np.float32)
    want = np.array([sum(x[(t + i) % N] for i in range(16)) + (t % 8 + 1) for t in range(N)], np.float32)
    for check in (False, True):
        y = np.zeros(N, np.float32)
        run("statics", ["x", "y", "n"], {"x": x, "y": y}, scalars=(Scalar("n", "int", N),), check=check, grid=2)
        np.testing.assert_allclose(y, want)
    for sym in ("far_store", "far_load"):                     # the far kernels at an in-bounds index
        y = np.zeros(N, np.float32)
        run(sym, ["y", "at"], {"y": y}, scalars=at(N - 1))
        assert (y > 0).all()


def test_host_process_survives_far_stores():
    """In a child process (a store performed 12 KB past a small arena corrupts the heap, which glibc
    notices at a later free): report each far store, then allocate and free plenty, and exit cleanly."""
    script = textwrap.dedent(f"""
        import gc, sys
        import numpy as np
        sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r})
        from test_emulate_bounds import run, at, N, KB12, GB1
        from kernelgen.emulate import EmulationError
        caught = 0
        for index in (N + KB12, -KB12, N + 2 * KB12, N + GB1):
            for sym in ("far_store", "far_vector_store"):
                y = np.zeros(N, np.float32)
                try:
                    run(sym, ["y", "at"], {{"y": y}}, scalars=at(index if sym == "far_store" else index // 4))
                except EmulationError as e:
                    caught += "out-of-bounds write" in str(e)
                del y
                junk = [bytearray(64) for _ in range(20000)]
                del junk
                gc.collect()
        print("caught", caught)
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["caught", "8"]
