"""The GPU backend: load a cubin through CuPy and run a Plan's launches on device arrays.

>>> import os
>>> from kernelgen import gpu
>>> os.environ["KERNELGEN_NO_GPU"] = "1"     # what a machine without a GPU reports
>>> gpu.available()
False
>>> del os.environ["KERNELGEN_NO_GPU"]

Arrays may be CuPy arrays, PyTorch CUDA tensors or anything with `__cuda_array_interface__` or
DLPack; they are checked for shape, dtype, contiguity and the alignment vectorised loads need.
Works with whichever CuPy is installed (cupy-cuda12x, cupy-cuda13x).
"""
from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import config
from .compile import compile_cuda
from .errors import LaunchError, UsageError
from .ops.base import Plan
from .target import Peaks, Target, for_device

# (FP32 lanes per SM) by compute capability, for the roofline of a GPU missing from target.GPUS.
_FP32_LANES = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128,
               (10, 0): 128, (12, 0): 128}


def _cupy():
    try:
        import cupy
    except ImportError:
        raise UsageError("CuPy is not installed: `pip install -e .` installs cupy-cuda12x") from None
    return cupy


def available() -> bool:
    if config.force_no_gpu():
        return False
    try:
        cupy = _cupy()
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver, no device, no CuPy: all mean "no GPU here"
        return False


def require() -> None:
    if not available():
        raise UsageError("no CUDA GPU is available here: `kernelgen tune` and `bench` need one; `kernelgen run "
                         "--backend emulate` (validate(..., backend='emulate')) runs on the CPU emulator, and "
                         "`kernelgen emit`, `inspect` and `list` need no GPU")


@functools.lru_cache(maxsize=1)
def device() -> Target:
    """The current GPU as a Target: its own limits and SM count, its datasheet peaks when known."""
    require()
    cupy = _cupy()
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    name = name.replace("NVIDIA ", "")
    major, minor = props["major"], props["minor"]
    attr = cupy.cuda.Device().attributes
    sms = attr["MultiProcessorCount"]
    bw = 2.0 * attr["MemoryClockRate"] * 1e3 * attr["GlobalMemoryBusWidth"] / 8
    fp32 = 2.0 * sms * _FP32_LANES.get((major, minor), 64) * attr["ClockRate"] * 1e3
    estimate = Peaks(name, sms, attr["L2CacheSize"], bw, fp32)
    return for_device(name, major, minor, sms, attr["L2CacheSize"], attr["MaxSharedMemoryPerBlockOptin"],
                      attr["MaxSharedMemoryPerMultiprocessor"], attr["MaxThreadsPerMultiProcessor"],
                      attr["MaxRegistersPerMultiprocessor"], estimate)


@functools.lru_cache(maxsize=256)
def _module(cubin: bytes):
    cupy = _cupy()
    mod = cupy.cuda.Module()
    mod.load(cubin)
    return mod


def functions(cubin: bytes, plan: Plan) -> dict[str, Any]:
    """The plan's kernels, loaded once per cubin, with the dynamic shared memory they need allowed."""
    cupy = _cupy()
    mod = _module(cubin)
    funcs = {l.symbol: mod.get_function(l.symbol) for l in plan.launches}
    drv = cupy.cuda.driver
    for l in plan.launches:
        if l.shared_bytes > 48 * 1024:
            drv.funcSetAttribute(funcs[l.symbol].ptr, drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 l.shared_bytes)
    return funcs


@functools.lru_cache(maxsize=8)
def _torch_dtype(name: str):
    import torch
    return getattr(torch, name)


def pointer(x, name: str, shape: tuple[int, ...], dt) -> int:
    """The device address of a CuPy array, torch CUDA tensor or `__cuda_array_interface__` object,
    after checking its shape, element type and contiguity (a few attribute reads: this runs per launch)."""
    cupy = _cupy()
    if type(x) is cupy.ndarray and x.dtype == dt.storage and x.shape == shape and x.flags.c_contiguous:
        return x.data.ptr
    if hasattr(x, "data_ptr"):  # torch
        if x.dtype is not _torch_dtype(dt.name):
            raise UsageError(f"array {name!r} has dtype {x.dtype}; this kernel takes {dt.name}")
        if not x.is_cuda:
            raise UsageError(f"array {name!r} is on {x.device}; kernels take CUDA tensors")
        if tuple(x.shape) != shape:
            raise UsageError(f"array {name!r} has shape {tuple(x.shape)}; the problem needs {shape}")
        if not x.is_contiguous():
            raise UsageError(f"array {name!r} is not contiguous (strides {x.stride()}); pass a contiguous copy")
        return x.data_ptr()
    x = as_device_array(x, name, shape, dt.storage)
    return x.data.ptr


def as_device_array(x, name: str, shape: tuple[int, ...], dtype: str):
    """A CuPy view of `x` (CuPy, torch, DLPack or numpy, the last copied to the device), checked."""
    cupy = _cupy()
    if isinstance(x, np.ndarray):
        x = cupy.asarray(x)
    elif not isinstance(x, cupy.ndarray):
        if hasattr(x, "__cuda_array_interface__"):
            x = cupy.asarray(x)
        elif hasattr(x, "__dlpack__"):
            x = cupy.from_dlpack(x)
        else:
            raise UsageError(f"array {name!r}: {type(x).__name__} is not a CuPy/torch/DLPack/numpy array")
    if x.dtype != np.dtype(dtype):
        raise UsageError(f"array {name!r} has dtype {x.dtype}; this kernel takes {dtype}")
    if tuple(x.shape) != tuple(shape):
        raise UsageError(f"array {name!r} has shape {tuple(x.shape)}; the problem needs {tuple(shape)}")
    if not x.flags.c_contiguous:
        raise UsageError(f"array {name!r} is not C-contiguous (strides {x.strides}); pass a contiguous copy")
    return x


_SCALAR_CTYPES = {"int": ctypes.c_int32, "long long": ctypes.c_int64, "float": ctypes.c_float}


@functools.lru_cache(maxsize=1)
def _libcuda():
    """The driver API, called directly: a launch through ctypes costs ~2 us of host time, a
    CuPy Function call with its argument conversion about 8."""
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    lib.cuMemsetD32Async.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]
    lib.cuTensorMapEncodeTiled.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p] + \
        [ctypes.c_void_p] * 4 + [ctypes.c_int] * 4
    return lib


def _driver_check(status: int, what: str) -> None:
    if status:
        name = ctypes.c_char_p()
        _libcuda().cuGetErrorName(status, ctypes.byref(name))
        raise LaunchError(f"{what} failed: {(name.value or b'?').decode()} ({status})")


def stream_handle(stream) -> int:
    """A stream given as a CuPy or torch stream object, or as a raw handle."""
    for attr in ("ptr", "cuda_stream"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    if isinstance(stream, int):
        return stream
    raise UsageError(f"stream {stream!r} is not a CuPy stream, a torch stream or a handle")


def current_stream(arrays: dict[str, Any]) -> int:
    """The handle of the stream the caller launches on: torch's current stream for torch tensors,
    else CuPy's current stream."""
    if any(hasattr(a, "data_ptr") for a in arrays.values()):
        import torch
        return torch.cuda.current_stream().cuda_stream
    return _cupy().cuda.get_current_stream().ptr


# CUtensorMapDataType by element type; CU_TENSOR_MAP_SWIZZLE_128B; CU_TENSOR_MAP_L2_PROMOTION_L2_256B.
_TMA_DTYPES = {"float16": 6, "bfloat16": 9, "float32": 7}
_TMA_SWIZZLE_128B, _TMA_L2_256B = 3, 3


class _TensorMapSlot:
    """The 128 bytes of a CUtensorMap kernel argument (64-byte aligned, as the driver wants them),
    encoded again only when the buffer's address changes."""

    def __init__(self, tm, dt):
        self.tm, self.dt, self.address = tm, dt, None
        self._raw = (ctypes.c_ubyte * 192)()
        self.slot = (ctypes.c_ubyte * 128).from_buffer(self._raw, (-ctypes.addressof(self._raw)) % 64)

    def update(self, address: int) -> None:
        if address == self.address:
            return
        tm, item = self.tm, self.dt.itemsize
        dims = (ctypes.c_uint64 * 2)(tm.cols, tm.rows)              # innermost first
        strides = (ctypes.c_uint64 * 1)(tm.cols * item)             # bytes from one row to the next
        box = (ctypes.c_uint32 * 2)(tm.box_cols, tm.box_rows)
        ones = (ctypes.c_uint32 * 2)(1, 1)
        _driver_check(_libcuda().cuTensorMapEncodeTiled(
            ctypes.addressof(self.slot), _TMA_DTYPES[self.dt.name], 2, address, dims, strides, box, ones,
            0, _TMA_SWIZZLE_128B, _TMA_L2_256B, 0), f"encoding the TMA descriptor {tm.name} of {tm.buffer}")
        self.address = address


class _Call:
    """One kernel launch with its argument slots: pointers are rewritten in place before each launch."""

    def __init__(self, func, launch, fixed: dict[str, Any]):
        self.func, self.launch = ctypes.c_void_p(func.ptr), launch
        self.slots = [fixed[a] if a in fixed else ctypes.c_uint64(0) for a in launch.args]
        self.params = (ctypes.c_void_p * len(self.slots))(*(ctypes.addressof(s) for s in self.slots))
        self.pointer_slots = [(a, s) for a, s in zip(launch.args, self.slots) if a not in fixed]


class Bound:
    """A prepared kernel's launches with their functions, workspaces and scalar arguments decided:
    `launch(pointers, stream)` writes the array addresses into the argument slots, clears the
    workspaces that need it and enqueues the kernels, all through the driver API."""

    def __init__(self, plan: Plan, cubin: bytes):
        cupy = _cupy()
        self.plan = plan
        funcs = functions(cubin, plan)
        self.work = {w.name: cupy.empty(max(1, w.count), dtype=w.dtype) for w in plan.workspaces}
        self.fills = [(self.work[w.name].data.ptr, int(np.array(w.fill, w.dtype).view(np.uint32)), max(1, w.count))
                      for w in plan.workspaces if w.fill is not None]
        fixed = {s.name: _SCALAR_CTYPES[s.ctype](s.value) for s in plan.scalars}
        fixed.update({k: ctypes.c_uint64(v.data.ptr) for k, v in self.work.items()})
        self.maps = [_TensorMapSlot(tm, plan.problem.dtype(tm.buffer)) for tm in plan.tensor_maps]
        fixed.update({m.tm.name: m.slot for m in self.maps})
        self.calls = [_Call(funcs[l.symbol], l, fixed) for l in plan.launches]
        self.align = tuple(plan.alignment)

    def launch(self, pointers: dict[str, int], stream: int) -> None:
        for name, align in self.align:
            if pointers[name] % align:
                raise UsageError(f"array {name!r} at address {pointers[name]:#x} is not aligned to {align} bytes, "
                                 "which this schedule's vector width needs; use vectorize(..., 1) or an aligned array")
        lib = _libcuda()
        for m in self.maps:
            m.update(pointers[m.tm.buffer])
        for ptr, bits, count in self.fills:
            _driver_check(lib.cuMemsetD32Async(ptr, bits, count, stream), "clearing a workspace")
        for c in self.calls:
            for name, slot in c.pointer_slots:
                slot.value = pointers[name]
            l = c.launch
            _driver_check(lib.cuLaunchKernel(c.func, *l.grid, *l.block, l.shared_bytes, stream, c.params, None),
                          f"launching {l.symbol}")


def launcher(bound: Bound, arrays: dict[str, Any], shapes: dict, types) -> Callable[[], None]:
    """A no-argument launcher on CuPy's current stream for fixed device arrays (timing loops)."""
    pointers = {n: pointer(arrays[n], n, shapes[n], types(n)) for n in shapes}
    return lambda: bound.launch(pointers, _cupy().cuda.get_current_stream().ptr)


def synchronize_checked(name: str) -> None:
    """Wait for the device; a fault becomes a LaunchError naming the kernel."""
    cupy = _cupy()
    try:
        cupy.cuda.Device().synchronize()
    except (cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError) as e:
        raise LaunchError(f"{name} failed on the GPU: {e}") from None


def launch(op, sched, problem, *, stream=None, **arrays) -> None:
    """Run schedule `sched` of `op` on the caller's device arrays (inputs and outputs by name), on the
    caller's stream (torch's current stream for torch tensors, CuPy's otherwise), without waiting.
    The kernel is built, compiled and loaded on the first call for a (schedule, problem) and cached.

        import torch, kernelgen as kg
        op = kg.get_op("reduce_sum")
        x, out = torch.rand(1000, device="cuda"), torch.empty(1, device="cuda")
        kg.launch(op, op.default_schedule(), op.problem({"n": 1000}), x=x, out=out)
    """
    from .prepared import prepare
    prepare(op, sched, problem, device())(stream=stream, **arrays)
