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
import operator
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import config
from .compile import compile_cuda
from .dtypes import dtype as _dtype
from .errors import LaunchError, UsageError
from .ops.base import TMA_DATA_TYPES, TMA_L2_PROMOTION, TMA_SWIZZLE, Plan
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
        # Opted in whenever a launch takes dynamic shared memory: the 48 KB default bounds static plus
        # dynamic, so 48 KB of prefetch slots beside a reduction's static words failed to launch.
        if l.shared_bytes > 0:
            drv.funcSetAttribute(funcs[l.symbol].ptr, drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 l.shared_bytes)
    return funcs


@functools.lru_cache(maxsize=8)
def _torch_dtype(name: str):
    import torch
    return getattr(torch, name)


def _cupy_reader(name: str, shape: tuple[int, ...], dt) -> Callable[[Any], int]:
    want = np.dtype(dt.storage)

    def read(x) -> int:
        if x.shape == shape and x.dtype == want and x.flags.c_contiguous:
            return x.data.ptr
        return as_device_array(x, name, shape, dt.storage).data.ptr     # raises, naming what differs

    return read


def _torch_reader(name: str, shape: tuple[int, ...], dt) -> Callable[[Any], int]:
    want = _torch_dtype(dt.data)

    def read(x) -> int:
        if x.dtype is want and x.is_cuda and x.shape == shape and x.is_contiguous():
            return x.data_ptr()
        if x.dtype is not want:
            raise UsageError(f"array {name!r} has dtype {x.dtype}; this kernel takes {dt.name}")
        if not x.is_cuda:
            raise UsageError(f"array {name!r} is on {x.device}; kernels take CUDA tensors")
        if tuple(x.shape) != shape:
            raise UsageError(f"array {name!r} has shape {tuple(x.shape)}; the problem needs {shape}")
        raise UsageError(f"array {name!r} is not contiguous (strides {x.stride()}); pass a contiguous copy")

    return read


def _reader(cls: type, name: str, shape: tuple[int, ...], dt) -> tuple[Callable[[Any], int], bool]:
    """How to read arrays of type `cls` passed as parameter `name`: a function of the array to its
    device address that checks shape, element type and contiguity (the common case in one `if`, the
    named error otherwise), and whether `cls` is a torch tensor (which decides the stream)."""
    cupy = sys.modules.get("cupy")      # an array of CuPy's type means CuPy is imported: no import here
    if cupy is not None and cls is getattr(cupy, "ndarray", None):
        return _cupy_reader(name, shape, dt), False
    if hasattr(cls, "data_ptr"):
        return _torch_reader(name, shape, dt), True
    return (lambda x: as_device_array(x, name, shape, dt.storage).data.ptr), False


def pointer(x, name: str, shape: tuple[int, ...], dt) -> int:
    """The device address of a CuPy array, torch CUDA tensor or `__cuda_array_interface__` object,
    after checking its shape, element type and contiguity."""
    return _reader(type(x), name, tuple(shape), dt)[0](x)


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


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig of cuda.h: what cuLaunchKernelEx (CUDA 11.8+) takes in place of cuLaunchKernel's
    eight scalar arguments, so a launch is a foreign call with four pointers instead of eleven values."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


@functools.lru_cache(maxsize=1)
def _libcuda():
    """The driver API, called directly: a CuPy Function call with its argument conversion costs ~8 us
    of host time. cuLaunchKernelEx gets no argtypes: a Bound passes it ctypes pointers made once,
    which spares ctypes a conversion per argument (~0.5 us a launch measured with a stub driver)."""
    lib = ctypes.CDLL("libcuda.so.1")
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
    """A stream given as a raw handle, or as a CuPy or torch stream object."""
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise UsageError(f"stream {stream!r} is not a CuPy stream, a torch stream or a handle")


@functools.lru_cache(maxsize=1)
def torch_stream_of() -> Callable[[int], int]:
    """A function of a CUDA device's index to torch's current stream there, as a raw handle: torch's raw-stream
    call (what Inductor's generated code uses) where torch has it, which skips building a Stream object (~6 us a
    call against 0.2 on the H100's host, bench_results/2026-11-25-s19/host_parts_before.txt)."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw if raw is not None else (lambda index: torch.cuda.current_stream(index).cuda_stream)


@functools.lru_cache(maxsize=2)
def _stream_reader(library: str) -> Callable[[], int]:
    """A function giving the handle of the caller's current stream in `library` ("torch" or "cupy", torch's on
    its current device), looked up once; the stream itself is read on every call, since the caller may switch
    streams."""
    if library == "torch":
        import torch
        of, device = torch_stream_of(), getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
        return lambda: of(device())
    get = _cupy().cuda.get_current_stream
    return lambda: get().ptr


# CUtensorMapDataType by element type, the swizzle and the L2 promotion: the values of ops/base.py's
# table, which the host launchers name.
_TMA_DTYPES = {name: value for name, (_, value) in TMA_DATA_TYPES.items()}
_TMA_SWIZZLE_128B, _TMA_L2_256B = TMA_SWIZZLE[1], TMA_L2_PROMOTION[1]


class _TensorMapSlot:
    """The 128 bytes of a CUtensorMap kernel argument (64-byte aligned, as the driver wants them), set for the
    buffer's address at each launch: encoded once an address, the last KEPT addresses' descriptors kept and
    copied back on a hit (a model's layers pass one prepared kernel their own buffers in turn)."""
    KEPT = 16

    def __init__(self, tm, dt):
        self.tm, self.dt, self.address = tm, dt, None
        self._raw = (ctypes.c_ubyte * 192)()
        self.slot = (ctypes.c_ubyte * 128).from_buffer(self._raw, (-ctypes.addressof(self._raw)) % 64)
        self._encoded: dict[int, bytes] = {}      # address -> descriptor, oldest first

    def update(self, address: int) -> None:
        if address == self.address:
            return
        kept = self._encoded.get(address)
        if kept is None:
            self._encode(address)
            if len(self._encoded) >= self.KEPT:
                del self._encoded[next(iter(self._encoded))]
            self._encoded[address] = bytes(self.slot)
        else:
            ctypes.memmove(self.slot, kept, len(kept))
        self.address = address

    def _encode(self, address: int) -> None:
        tm, item = self.tm, self.dt.itemsize
        rank = 2 + len(tm.outer)
        dims = (ctypes.c_uint64 * rank)(tm.cols, tm.rows, *(n for n, _ in tm.outer))    # innermost first
        # bytes from one row (one outer index) to the next
        strides = (ctypes.c_uint64 * (rank - 1))((tm.pitch or tm.cols) * item, *(s * item for _, s in tm.outer))
        box = (ctypes.c_uint32 * rank)(tm.box_cols, tm.box_rows, *(1,) * len(tm.outer))
        ones = (ctypes.c_uint32 * rank)(*(1,) * rank)
        _driver_check(_libcuda().cuTensorMapEncodeTiled(
            ctypes.addressof(self.slot), _TMA_DTYPES[self.dt.name], rank, address, dims, strides, box, ones,
            0, _TMA_SWIZZLE_128B, _TMA_L2_256B, 0), f"encoding the TMA descriptor {tm.name} of {tm.buffer}")


# f(x) for a map over (reader, array) pairs without a Python frame per pair (operator.call: Python 3.11+)
_apply = getattr(operator, "call", lambda f, x: f(x))


class Arguments:
    """The arrays of one kernel signature, read from a caller's keyword arguments: each checked for
    shape, element type and contiguity and turned into its device address, in `names` order.

    Per combination of array types seen, the readers (closures holding each array's expected shape and
    type) and the current-stream function are chosen once. Every call still reads and checks every
    array: the same object can hold another address, shape or dtype by the next call."""

    def __init__(self, op: str, shapes: dict[str, tuple[int, ...]], dtype_of: Callable):
        self.op, self.names = op, tuple(shapes)
        self.params = tuple((n, tuple(s), dtype_of(n)) for n, s in shapes.items())
        self.by_types: dict[tuple[type, ...], tuple] = {}
        only = self.names[0] if len(self.names) == 1 else None        # itemgetter of one name gives no tuple
        self._pick = operator.itemgetter(*self.names) if only is None else lambda a: (a[only],)

    def read(self, arrays: dict[str, Any]) -> tuple[list[int], Callable[[], int]]:
        """The addresses of `arrays`, and the function giving the caller's current stream (torch's
        when any array is a torch tensor, else CuPy's)."""
        try:
            xs = self._pick(arrays)
        except KeyError:
            raise self._names_error(arrays) from None
        if len(arrays) != len(xs):
            raise self._names_error(arrays)
        readers, current = self.by_types.get(tuple(map(type, xs))) or self._choose(xs)
        return list(map(_apply, readers, xs)), current

    def _choose(self, xs: tuple) -> tuple:
        types = tuple(map(type, xs))
        chosen = [_reader(t, *param) for t, param in zip(types, self.params)]
        current = _stream_reader("torch" if any(is_torch for _, is_torch in chosen) else "cupy")
        self.by_types[types] = tuple(read for read, _ in chosen), current
        return self.by_types[types]

    def _names_error(self, arrays: dict[str, Any]) -> UsageError:
        return UsageError(f"{self.op} takes arrays {', '.join(self.names)}; missing "
                          f"{[n for n in self.names if n not in arrays] or 'none'}, unknown "
                          f"{[n for n in arrays if n not in self.names] or 'none'}")


class Bound:
    """A kernel's launches with their functions, workspaces and scalar arguments decided: `launch`
    writes the array addresses into the argument slots, clears the workspaces that need it and
    enqueues the kernels on a stream, all through the driver API, without waiting.

    Everything but the addresses and the stream is made into ctypes values here, once: each array has
    one 8-byte slot that every launch's parameter list points at, and each launch its CUlaunchConfig,
    so a launch is one slice assignment, a stream written per kernel and one foreign call per kernel.
    `functions` maps symbols to CUfunction handles and `workspaces` names to device addresses (`bind`
    makes both); `arrays` fixes the order `enqueue` takes addresses in; `keep` holds what the handles
    point into (the loaded module, the workspace arrays) for as long as the Bound lives."""

    def __init__(self, plan: Plan, functions: dict[str, int], workspaces: dict[str, int] | None = None,
                 arrays: tuple[str, ...] = (), keep: Any = None):
        workspaces = workspaces or {}
        self.plan, self.keep = plan, keep
        self.fixed = {s.name: _SCALAR_CTYPES[s.ctype](s.value) for s in plan.scalars}
        self.fixed.update({n: ctypes.c_uint64(p) for n, p in workspaces.items()})
        self.maps = [_TensorMapSlot(tm, _dtype(tm.dtype) if tm.dtype else plan.problem.dtype(tm.buffer))
                     for tm in plan.tensor_maps]
        self.fixed.update({m.tm.name: m.slot for m in self.maps})       # passed by value: 128 bytes
        for m in self.maps:          # a map of a workspace (a padded copy): its address is known now
            if m.tm.buffer in workspaces:
                m.update(workspaces[m.tm.buffer])
        callers = [m for m in self.maps if m.tm.buffer not in workspaces]
        used = (a for l in plan.launches for a in l.args if a not in self.fixed)
        self.arrays = tuple(dict.fromkeys((*arrays, *used, *(m.tm.buffer for m in callers))))
        self.map_index = [(self.arrays.index(m.tm.buffer), m) for m in callers]
        self.addresses = (ctypes.c_uint64 * len(self.arrays))()
        self.calls = [self._call(l, functions[l.symbol]) for l in plan.launches]
        self.fills = [(workspaces[w.name], int(np.array(w.fill, w.dtype).view(np.uint32)), max(1, w.count))
                      for w in plan.workspaces if w.fill is not None]
        self.align = [(self.arrays.index(n), n, a) for n, a in plan.alignment]
        # The slots and configs are shared state and ctypes lets go of the GIL during a driver call:
        # threads launching one Bound (each on its own stream) take turns, or one could launch the
        # other's arrays.
        self.lock = threading.Lock()
        lib = _libcuda()
        self._memset = lib.cuMemsetD32Async
        try:
            self._launch = lib.cuLaunchKernelEx
        except AttributeError:
            raise UsageError("the CUDA driver has no cuLaunchKernelEx (drivers for CUDA 11.8 and later have it); "
                             "update the NVIDIA driver") from None

    def _call(self, l, function: int) -> tuple:
        """(config, the pointer to it, function, parameter array, symbol) of one launch."""
        slot = {n: ctypes.addressof(self.addresses) + 8 * i for i, n in enumerate(self.arrays)}
        config = _LaunchConfig(*l.grid, *l.block, l.shared_bytes, None, None, 0)
        params = (ctypes.c_void_p * len(l.args))(*(ctypes.addressof(self.fixed[a]) if a in self.fixed else slot[a]
                                                   for a in l.args))
        return config, ctypes.pointer(config), ctypes.c_void_p(function), params, l.symbol

    def launch(self, pointers: dict[str, int], stream: int) -> None:
        """Enqueue the kernels on `stream` with the arrays at `pointers` (name -> device address)."""
        self.enqueue([pointers[n] for n in self.arrays], stream)

    def enqueue(self, addresses: list[int], stream: int) -> None:
        """`launch` with the addresses listed in `self.arrays` order (a Prepared's per-call path)."""
        for i, name, align in self.align:
            if addresses[i] % align:
                raise UsageError(f"array {name!r} at address {addresses[i]:#x} is not aligned to {align} bytes, "
                                 "which this schedule's vector width needs (the row ops' too when cols % vec != 0: "
                                 "their rows then start at the same offset in every row buffer's vectors); use "
                                 "vectorize(..., 1) or an aligned array")
        with self.lock:
            self.addresses[:] = addresses
            for i, m in self.map_index:     # TMA descriptors: encoded again only for a new address
                m.update(addresses[i])
            for ptr, bits, count in self.fills:
                _driver_check(self._memset(ptr, bits, count, stream), "clearing a workspace")
            for config, ref, function, params, symbol in self.calls:
                config.hStream = stream
                status = self._launch(ref, function, params, None)
                if status:
                    _driver_check(status, f"launching {symbol}")


def bind(plan: Plan, cubin: bytes, arrays: tuple[str, ...] = ()) -> Bound:
    """The Bound of a plan on the current device: the cubin's functions loaded and its workspaces
    allocated, both kept by the Bound (its ctypes values hold only raw handles)."""
    cupy = _cupy()
    funcs = functions(cubin, plan)
    work = {w.name: cupy.empty(max(1, w.count), dtype=w.dtype) for w in plan.workspaces}
    return Bound(plan, {s: f.ptr for s, f in funcs.items()}, {n: a.data.ptr for n, a in work.items()}, arrays,
                 keep=(funcs, work))


def launcher(bound: Bound, arrays: dict[str, Any], shapes: dict, types) -> Callable[[], None]:
    """A no-argument launcher on CuPy's current stream for fixed device arrays (timing loops)."""
    pointers = {n: pointer(arrays[n], n, shapes[n], types(n)) for n in shapes}
    addresses, current = [pointers[n] for n in bound.arrays], _stream_reader("cupy")
    return lambda: bound.enqueue(addresses, current())


def synchronize_checked(name: str) -> None:
    """Wait for the device; a fault becomes a LaunchError naming the kernel."""
    cupy = _cupy()
    try:
        cupy.cuda.Device().synchronize()
    except (cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError) as e:
        raise LaunchError(f"{name} failed on the GPU: {e}") from None
