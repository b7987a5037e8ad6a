"""Host time of a cached launch without a GPU: the Python path of bench/launch_overhead.py on stand-ins.

    python3 bench/launch_overhead_cpu.py                      # the table
    python3 bench/launch_overhead_cpu.py --profile sgemm:launch:torch   # cProfile of one row

Stand-ins replace the three things a machine without a GPU lacks, so that the code under test runs
unchanged: a `libcuda.so.1` compiled here (cuLaunchKernel, cuLaunchKernelEx and cuMemsetD32Async
return 0; it is loaded first, so `ctypes.CDLL("libcuda.so.1")` finds it by soname and the ctypes
calls are real foreign calls), and `cupy` and `torch` modules in `sys.modules` whose arrays and
streams have the attributes kernelgen reads, with Python costs of the same kind (torch's
`current_stream()` builds a Stream object each call, as torch's does). Each row is the process CPU
time per call, best of 7 loops: this machine's cores may be shared. The absolute numbers are not a
GPU host's (no driver work, cheaper attribute reads): compare before/after here, and read the H100
table of bench/launch_overhead.py for what a caller sees.
"""
from __future__ import annotations

import argparse
import cProfile
import ctypes
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # run from a checkout

CALLS = 20000

_STUB = r"""
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned smem, void* stream, void** params, void** extra) { return 0; }
int cuLaunchKernelEx(const void* config, void* f, void** params, void** extra) { return 0; }
int cuMemsetD32Async(unsigned long long ptr, unsigned bits, unsigned long count, void* stream) { return 0; }
int cuGetErrorName(int status, const char** name) { *name = "CUDA_ERROR_STUB"; return 0; }
int cuTensorMapEncodeTiled(void* map, int type, unsigned rank, void* addr, void* dims, void* strides, void* box,
                           void* elem_strides, int interleave, int swizzle, int promotion, int fill) { return 0; }
"""


def load_stub_driver() -> None:
    """Compile and load a do-nothing libcuda.so.1 (soname included) so the driver calls are real ctypes calls."""
    folder = tempfile.mkdtemp(prefix="kg_stub_cuda_")
    src, lib = os.path.join(folder, "stub.c"), os.path.join(folder, "libcuda.so.1")
    with open(src, "w") as f:
        f.write(_STUB)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", src, "-o", lib], check=True)
    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    shutil.rmtree(folder)          # loaded: the mapping outlives the file


# -- cupy stand-in -----------------------------------------------------------------------------------
class _MemoryPointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


class _Flags:
    c_contiguous = True


_next_ptr = [0x7F0000000000]


def _alloc(nbytes: int) -> int:
    ptr = _next_ptr[0]
    _next_ptr[0] += (nbytes + 255) // 256 * 256
    return ptr


class _CupyArray:
    __slots__ = ("shape", "dtype", "data", "flags", "strides")

    def __init__(self, shape, dtype="float32"):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.data, self.flags = _MemoryPointer(_alloc(int(np.prod(shape)) * self.dtype.itemsize)), _Flags()
        self.strides = tuple(int(np.prod(shape[i + 1:])) * self.dtype.itemsize for i in range(len(shape)))


class _CupyStream:
    def __init__(self, ptr):
        self.ptr = ptr


class _Function:
    def __init__(self, ptr):
        self.ptr = ptr


class _Module:
    def load(self, cubin):
        pass

    def get_function(self, symbol):
        return _Function(0x1000 + hash(symbol) % 0x1000)


class _Device:
    id = 0
    attributes = {"MultiProcessorCount": 132, "MemoryClockRate": 2619000, "GlobalMemoryBusWidth": 5120,
                  "ClockRate": 1980000, "L2CacheSize": 50 * 1024 * 1024, "MaxSharedMemoryPerBlockOptin": 232448,
                  "MaxSharedMemoryPerMultiprocessor": 233472, "MaxThreadsPerMultiProcessor": 2048,
                  "MaxRegistersPerMultiprocessor": 65536}

    def synchronize(self):
        pass


def _fake_cupy() -> types.ModuleType:
    cupy = types.ModuleType("cupy")
    cupy.ndarray = _CupyArray
    cupy.empty = lambda count, dtype="float32": _CupyArray((count,), dtype)
    null = _CupyStream(0)
    cuda = types.SimpleNamespace(
        Module=_Module, Device=_Device, get_current_stream=lambda: null,
        driver=types.SimpleNamespace(funcSetAttribute=lambda *a: None, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8,
                                     CUDADriverError=RuntimeError),
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1, CUDARuntimeError=RuntimeError,
                                      getDeviceProperties=lambda i: {"name": b"NVIDIA H100 80GB HBM3", "major": 9,
                                                                     "minor": 0}))
    cupy.cuda = cuda
    return cupy


# -- torch stand-in ----------------------------------------------------------------------------------
class _TorchDType:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


class _TorchDevice:
    type, index = "cuda", 0

    def __str__(self):
        return "cuda:0"


class _Tensor:
    """What torch.Tensor offers kernelgen: each property read builds its answer, as torch's C++ does."""
    is_cuda = True

    def __init__(self, shape, dtype):
        self._shape, self.dtype, self.device = tuple(shape), dtype, _TorchDevice()
        self._ptr = _alloc(int(np.prod(shape)) * 4)

    @property
    def shape(self):
        return tuple(self._shape)

    def is_contiguous(self):
        return True

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return tuple(int(np.prod(self._shape[i + 1:])) for i in range(len(self._shape)))

    def get_device(self):
        return 0


class _TorchStream:
    """torch.cuda.Stream: a new object per current_stream() call."""

    def __new__(cls, stream_id=0, device_index=0, device_type=1):
        self = super().__new__(cls)
        self.stream_id, self.device_index, self.device_type = stream_id, device_index, device_type
        return self

    @property
    def cuda_stream(self):
        return self.stream_id


def _fake_torch() -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.Tensor = _Tensor
    for name in ("float32", "float16", "bfloat16"):
        setattr(torch, name, _TorchDType(name))
    initialized = [True]

    def _lazy_init():
        if initialized[0]:
            return

    def current_device():
        _lazy_init()
        return torch._C._cuda_getDevice()

    def current_stream(device=None):
        _lazy_init()
        data = torch._C._cuda_getCurrentStream(current_device() if device is None else device)
        return _TorchStream(stream_id=data[0], device_index=data[1], device_type=data[2])

    torch._C = types.SimpleNamespace(_cuda_getDevice=lambda: 0, _cuda_getCurrentStream=lambda i: (0, i, 1),
                                     _cuda_getCurrentRawStream=lambda i: 0)
    torch.cuda = types.SimpleNamespace(current_stream=current_stream, current_device=current_device,
                                       _lazy_init=_lazy_init)
    return torch


def install_stand_ins() -> None:
    load_stub_driver()
    sys.modules["cupy"], sys.modules["torch"] = _fake_cupy(), _fake_torch()


# -- the rows ----------------------------------------------------------------------------------------
CASES = (("reduce_sum", {"n": 4096}, lambda p: {"x": (p["n"],), "out": (1,)}),
         ("sgemm", {"M": 256, "N": 256, "K": 256},
          lambda p: {"A": (p["M"], p["K"]), "B": (p["K"], p["N"]), "C": (p["M"], p["N"])}),
         ("softmax", {"rows": 64, "cols": 1000}, lambda p: {"x": (p["rows"], p["cols"]), "y": (p["rows"], p["cols"])}))


def per_call_us(fn, calls: int) -> float:
    fn()
    loops = []
    for _ in range(7):
        t0 = time.process_time()       # CPU time of this process: time spent descheduled is not counted
        for _ in range(calls):
            fn()
        loops.append((time.process_time() - t0) / calls * 1e6)
    return min(loops)      # the least disturbed loop: this machine's cores are shared


def rows():
    """(op, how, arrays, a no-argument call) for every row of the table."""
    import cupy
    import torch

    import kernelgen as kg
    from kernelgen import gpu
    from kernelgen.compile import Compiled
    from kernelgen.prepared import prepare

    dev = gpu.device()
    for op_name, sizes, make in CASES:
        op = kg.get_op(op_name)
        problem = op.problem(sizes)
        sched = op.schedule_for(problem)
        shapes = make(problem)
        prep = prepare(op, sched, problem, dev)
        prep.__dict__["binary"] = Compiled(b"stub cubin", "", dev.arch)     # no NVRTC: the launch is what is timed
        cp = {k: cupy.ndarray(s) for k, s in shapes.items()}
        th = {k: torch.Tensor(s, torch.float32) for k, s in shapes.items()}
        yield op_name, "Prepared(**cupy arrays)", lambda prep=prep, a=cp: prep(**a)
        yield op_name, "kg.launch(**cupy arrays)", lambda op=op, s=sched, p=problem, a=cp: kg.launch(op, s, p, **a)
        yield op_name, "Prepared(**torch tensors)", lambda prep=prep, a=th: prep(**a)
        yield op_name, "kg.launch(**torch tensors)", lambda op=op, s=sched, p=problem, a=th: kg.launch(op, s, p, **a)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=CALLS)
    ap.add_argument("--profile", metavar="OP:launch|prepared:cupy|torch", help="cProfile one row instead")
    args = ap.parse_args()
    install_stand_ins()
    table = list(rows())
    if args.profile:
        op_name, how, lib = args.profile.split(":")
        want = f"{'kg.launch' if how == 'launch' else 'Prepared'}(**{lib} {'arrays' if lib == 'cupy' else 'tensors'})"
        fn = next(f for o, h, f in table if o == op_name and h == want)
        fn()
        prof = cProfile.Profile()
        prof.runcall(lambda: [fn() for _ in range(args.calls)])
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
        return
    print(f"cached launch host time on stand-ins (no GPU), {args.calls} calls a loop, best of 7 loops, process CPU time")
    print(f"{'op':12s} {'call':30s} {'us/call':>8s}")
    for op_name, how, fn in table:
        print(f"{op_name:12s} {how:30s} {per_call_us(fn, args.calls):8.2f}")


if __name__ == "__main__":
    main()
