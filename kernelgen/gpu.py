"""The GPU backend: load a cubin through CuPy and run a Plan's launches on device arrays.

>>> from kernelgen import gpu
>>> gpu.available() in (True, False)
True

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
from .ops.base import Limits, Plan

# (FP32 lanes per SM) by compute capability major.minor, for the roofline when the GPU is not in PEAKS.
_FP32_LANES = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128,
               (10, 0): 128, (12, 0): 128}
# Datasheet peaks (bytes/s, fp32 flop/s) of GPUs whose clocks the driver does not report usefully.
PEAKS = {"H100 80GB HBM3": (3.35e12, 66.9e12), "H100 PCIe": (2.0e12, 51.2e12), "H200": (4.8e12, 66.9e12),
         "A100-SXM4-80GB": (2.04e12, 19.5e12), "A100-SXM4-40GB": (1.56e12, 19.5e12)}


@dataclass(frozen=True)
class Device:
    name: str
    arch: str
    sms: int
    l2_bytes: int
    max_smem_optin: int
    peak_bytes_per_s: float
    peak_fp32_per_s: float

    def limits(self) -> Limits:
        return Limits(arch=self.arch, sms=self.sms, max_smem=self.max_smem_optin)


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
        raise UsageError("no CUDA GPU is available here: use --backend emulate to run on the CPU emulator, "
                         "or `kernelgen emit/inspect --arch sm_90` to compile without one")


@functools.lru_cache(maxsize=1)
def device() -> Device:
    require()
    cupy = _cupy()
    rt = cupy.cuda.runtime
    props = rt.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    major, minor = props["major"], props["minor"]
    attr = cupy.cuda.Device().attributes
    sms = attr["MultiProcessorCount"]
    peak = next((v for k, v in PEAKS.items() if k in name), None)
    if peak is None:
        bw = 2.0 * attr["MemoryClockRate"] * 1e3 * attr["GlobalMemoryBusWidth"] / 8
        fp32 = 2.0 * sms * _FP32_LANES.get((major, minor), 64) * attr["ClockRate"] * 1e3
        peak = (bw, fp32)
    return Device(name.replace("NVIDIA ", ""), f"sm_{major}{minor}", sms, attr["L2CacheSize"],
                  attr["MaxSharedMemoryPerBlockOptin"], *peak)


@functools.lru_cache(maxsize=256)
def _module(cubin: bytes):
    cupy = _cupy()
    mod = cupy.cuda.Module()
    mod.load(cubin)
    return mod


def load(source: str, arch: str, symbols: tuple[str, ...]) -> dict[str, Any]:
    """Compile (cached) and load `source`; return its functions by symbol."""
    compiled = compile_cuda(source, arch, symbols[0])
    mod = _module(compiled.cubin)
    return {s: mod.get_function(s) for s in symbols}


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


def prepare(plan: Plan, source: str, arrays: dict[str, Any]) -> Callable[[], None]:
    """Check arrays against `plan`, allocate workspaces, and return a no-argument launcher."""
    cupy = _cupy()
    dev = device()
    symbols = tuple(dict.fromkeys(l.symbol for l in plan.launches))
    funcs = load(source, dev.arch, symbols)
    for name, align in plan.alignment:
        if arrays[name].data.ptr % align:
            raise UsageError(f"array {name!r} at address {arrays[name].data.ptr:#x} is not aligned to {align} bytes, "
                             "which this schedule's vector width needs; use vectorize(..., 1) or an aligned array")
    work = {w.name: cupy.empty(max(1, w.count), dtype=w.dtype) for w in plan.workspaces}
    fills = [(work[w.name], w.fill) for w in plan.workspaces if w.fill is not None]
    values = dict(arrays, **work, **{s.name: _SCALAR_TYPES[s.ctype](s.value) for s in plan.scalars})
    drv = cupy.cuda.driver
    for l in plan.launches:
        if l.shared_bytes > 48 * 1024:
            drv.funcSetAttribute(funcs[l.symbol].ptr, drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 l.shared_bytes)
    calls = [(funcs[l.symbol], l.grid, l.block, tuple(values[a] for a in l.args), l.shared_bytes)
             for l in plan.launches]

    def launch() -> None:
        for buf, value in fills:
            buf.fill(value)
        for fn, grid, block, args, smem in calls:
            fn(grid, block, args, shared_mem=smem)

    return launch


def run(plan: Plan, source: str, arrays: dict[str, Any]) -> None:
    """Run `plan` once on device arrays and wait for it; a fault becomes a LaunchError."""
    cupy = _cupy()
    try:
        prepare(plan, source, arrays)()
        cupy.cuda.Device().synchronize()
    except (cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError) as e:
        raise LaunchError(f"{plan.kernel.name} failed on the GPU: {e}") from None


def launch(op, sched, problem, **arrays) -> None:
    """Run schedule `sched` of `op` on the caller's device arrays (inputs and outputs by name).

        import torch, kernelgen as kg
        op = kg.get_op("reduce_sum")
        x, out = torch.rand(1000, device="cuda"), torch.empty(1, device="cuda")
        kg.launch(op, op.default_schedule(), op.problem({"n": 1000}), x=x, out=out)
    """
    dev = device()
    op = op.for_schedule(sched)
    kernel = op.kernel(sched, dev.limits())
    plan = op.plan(kernel, problem, dev.limits())
    shapes = dict(op.input_shapes(problem), **op.output_shapes(problem))
    missing = [n for n in shapes if n not in arrays]
    extra = [n for n in arrays if n not in shapes]
    if missing or extra:
        raise UsageError(f"{op.name} takes arrays {', '.join(shapes)}; missing {missing or 'none'}, unknown {extra or 'none'}")
    checked = {n: as_device_array(arrays[n], n, shapes[n], op.dtype) for n in shapes}
    from .render import render
    run(plan, render(kernel), checked)
