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


_TORCH_DTYPES = {"float32": "torch.float32", "float16": "torch.float16", "bfloat16": "torch.bfloat16"}


def pointer(x, name: str, shape: tuple[int, ...], dt) -> int:
    """The device address of a CuPy array, torch CUDA tensor or `__cuda_array_interface__` object,
    after checking its shape, element type and contiguity (a few attribute reads: this runs per launch)."""
    if hasattr(x, "data_ptr"):  # torch
        if str(x.dtype) != _TORCH_DTYPES[dt.name]:
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


_SCALAR_TYPES = {"int": np.int32, "long long": np.int64, "float": np.float32}


@functools.lru_cache(maxsize=64)
def _external_stream(handle: int):
    return _cupy().cuda.ExternalStream(handle)


def current_stream(arrays: dict[str, Any]):
    """The stream the caller launches on: torch's current stream for torch tensors, else CuPy's."""
    cupy = _cupy()
    if any(hasattr(a, "data_ptr") for a in arrays.values()):
        import torch
        return _external_stream(torch.cuda.current_stream().cuda_stream)
    return cupy.cuda.get_current_stream()


class Bound:
    """A prepared kernel's launches with their functions, workspaces and scalar arguments decided:
    `launch(pointers, stream)` only fills workspaces and enqueues kernels."""

    def __init__(self, plan: Plan, cubin: bytes):
        cupy = _cupy()
        self.plan = plan
        self.funcs = functions(cubin, plan)
        self.work = {w.name: cupy.empty(max(1, w.count), dtype=w.dtype) for w in plan.workspaces}
        self.fills = [(self.work[w.name], w.fill) for w in plan.workspaces if w.fill is not None]
        self.fixed = dict(self.work, **{s.name: _SCALAR_TYPES[s.ctype](s.value) for s in plan.scalars})
        self.align = dict(plan.alignment)

    def launch(self, pointers: dict[str, int], stream) -> None:
        for name, align in self.align.items():
            if pointers[name] % align:
                raise UsageError(f"array {name!r} at address {pointers[name]:#x} is not aligned to {align} bytes, "
                                 "which this schedule's vector width needs; use vectorize(..., 1) or an aligned array")
        values = dict(self.fixed, **{k: np.uint64(v) for k, v in pointers.items()})
        if self.fills:
            with stream:
                for buf, value in self.fills:
                    buf.fill(value)
        for l in self.plan.launches:
            self.funcs[l.symbol](l.grid, l.block, tuple(values[a] for a in l.args), shared_mem=l.shared_bytes,
                                 stream=stream)


def launcher(bound: Bound, arrays: dict[str, Any], shapes: dict, types) -> Callable[[], None]:
    """A no-argument launcher on CuPy's current stream for fixed device arrays (timing loops)."""
    pointers = {n: pointer(arrays[n], n, shapes[n], types(n)) for n in shapes}
    return lambda: bound.launch(pointers, _cupy().cuda.get_current_stream())


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
