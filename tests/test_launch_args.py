"""The driver-API launch path without a GPU: what reaches cuLaunchKernel and cuMemsetD32Async.

A fake driver (ctypes callbacks with the real signatures) reads the launch configuration and the
argument array the way the driver does, so the packing of pointers and scalars, the order of
launches and the workspace clears are checked here; with fake `cupy` and `torch` modules, so is what
a Prepared does per call (arrays read and checked every time, the stream given or the caller's
current one). The GPU tier runs the same path on a device.
"""
import ctypes
import pickle
import sys
import types

import numpy as np
import pytest

from kernelgen import gpu
from kernelgen.ops import get_op
from kernelgen.errors import LaunchError, UsageError
from kernelgen.dtypes import dtype
from kernelgen.ops.base import Kernel, Launch, Plan, Problem, Scalar, TensorMap, Workspace
from kernelgen.prepared import Prepared, prepare
from kernelgen.schedule import Schedule

LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(gpu._LaunchConfig), ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_void_p)
MEMSET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p)


class FakeDriver:
    """cuLaunchKernelEx and cuMemsetD32Async as ctypes callbacks; a launch is recorded as
    (function, grid, block, shared bytes, stream, *arguments), the arguments read with `signature`
    (by default one pointer and one int)."""

    def __init__(self, fail: int = 0, signature=(ctypes.c_uint64, ctypes.c_int32)):
        self.launches, self.memsets = [], []

        def launch(config, f, params, extra):
            c = config.contents
            slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
            args = tuple(ctypes.cast(slots[i], ctypes.POINTER(t))[0] for i, t in enumerate(signature))
            self.launches.append((f, (c.gridDimX, c.gridDimY, c.gridDimZ), (c.blockDimX, c.blockDimY, c.blockDimZ),
                                  c.sharedMemBytes, c.hStream, *args))
            return fail

        def memset(ptr, bits, count, stream):
            self.memsets.append((ptr, bits, count, stream))
            return 0

        self.cuLaunchKernelEx, self.cuMemsetD32Async = LAUNCH(launch), MEMSET(memset)

    def cuGetErrorName(self, status, out):
        ctypes.cast(out, ctypes.POINTER(ctypes.c_char_p))[0] = b"CUDA_ERROR_INVALID_VALUE"
        return 0


def bound(launches, scalars=(), workspaces=(), addresses=None, align=()):
    kern = Kernel("demo", "k", Schedule("demo"), (), "", ())
    plan = Plan(kern, Problem((("n", 5),)), launches, workspaces, scalars, align)
    return gpu.Bound(plan, {l.symbol: 100 + i for i, l in enumerate(launches)}, addresses)


def test_pointers_and_scalars_reach_the_driver_in_parameter_order(monkeypatch):
    drv = FakeDriver()
    monkeypatch.setattr(gpu, "_libcuda", lambda: drv)
    b = bound((Launch("first", (3, 2, 1), (128, 1, 1), ("x", "n"), 4096),
               Launch("second", (1, 1, 1), (32, 1, 1), ("y", "n"))), scalars=(Scalar("n", "int", 77),),
              workspaces=(Workspace("counts", "int32", 9, fill=0),), addresses={"counts": 0xABC0})
    b.launch({"x": 0x7F0000001000, "y": 0x7F0000002000}, stream=0x55)
    assert drv.memsets == [(0xABC0, 0, 9, 0x55)]                 # the workspace is cleared first
    assert drv.launches == [(100, (3, 2, 1), (128, 1, 1), 4096, 0x55, 0x7F0000001000, 77),
                            (101, (1, 1, 1), (32, 1, 1), 0, 0x55, 0x7F0000002000, 77)]
    b.launch({"x": 0x1100, "y": 0x2200}, stream=0)                # slots are rewritten, not appended
    assert [l[5] for l in drv.launches[2:]] == [0x1100, 0x2200] and drv.launches[2][4] is None


def test_a_driver_error_names_the_kernel_and_the_code(monkeypatch):
    monkeypatch.setattr(gpu, "_libcuda", lambda: FakeDriver(fail=1))
    b = bound((Launch("kern_partial", (1, 1, 1), (32, 1, 1), ("x", "n")),), scalars=(Scalar("n", "int", 1),))
    with pytest.raises(LaunchError, match=r"launching kern_partial failed: CUDA_ERROR_INVALID_VALUE \(1\)"):
        b.launch({"x": 0x1000}, stream=0)


def test_a_misaligned_pointer_is_refused_before_launching(monkeypatch):
    drv = FakeDriver()
    monkeypatch.setattr(gpu, "_libcuda", lambda: drv)
    b = bound((Launch("k", (1, 1, 1), (32, 1, 1), ("x", "n")),), scalars=(Scalar("n", "int", 1),), align=(("x", 16),))
    with pytest.raises(UsageError, match="not aligned to 16 bytes"):
        b.launch({"x": 0x1004}, stream=0)
    assert drv.launches == []


def test_streams_are_taken_from_cupy_torch_or_a_handle():
    class CupyLike:
        ptr = 7

    class TorchLike:
        cuda_stream = 9

    assert (gpu.stream_handle(CupyLike()), gpu.stream_handle(TorchLike()), gpu.stream_handle(11)) == (7, 9, 11)
    with pytest.raises(UsageError, match="is not a CuPy stream"):
        gpu.stream_handle("fast")


# -- Prepared: arrays read and checked on every call, on the caller's stream ---------------------------
class CupyArray:
    """What kernelgen reads of a CuPy array; the fake `cupy` module below names this class its ndarray."""

    def __init__(self, shape, ptr, dtype="float32"):
        self.shape, self.dtype, self.data = tuple(shape), np.dtype(dtype), types.SimpleNamespace(ptr=ptr)
        self.flags, self.strides = types.SimpleNamespace(c_contiguous=True), ()


class Tensor:
    """What kernelgen reads of a torch CUDA tensor."""

    def __init__(self, shape, ptr, dtype="float32"):
        self.shape, self.dtype, self.ptr, self.is_cuda, self.device = tuple(shape), TORCH_DTYPES[dtype], ptr, True, "cuda:0"

    def data_ptr(self):
        return self.ptr

    def is_contiguous(self):
        return True

    def stride(self):
        return ()


class TorchDType:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


TORCH_DTYPES = {n: TorchDType(n) for n in ("float32", "float64", "float16", "bfloat16")}


@pytest.fixture
def libraries(monkeypatch):
    """Fake `cupy` and `torch` modules whose current streams the test sets, and a fake driver;
    kernelgen's cached torch dtypes and stream functions are cleared before and after."""
    cupy = types.ModuleType("cupy")
    cupy.ndarray, cupy.stream = CupyArray, 0
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: types.SimpleNamespace(ptr=cupy.stream))
    torch = types.ModuleType("torch")
    torch.stream = 0
    torch._C = types.SimpleNamespace(_cuda_getDevice=lambda: 0, _cuda_getCurrentRawStream=lambda device: torch.stream)
    for name, dt in TORCH_DTYPES.items():
        setattr(torch, name, dt)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "torch", torch)
    drv = FakeDriver(signature=(ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32, ctypes.c_int32))
    monkeypatch.setattr(gpu, "_libcuda", lambda: drv)
    for cache in (gpu._torch_dtype, gpu._stream_reader, gpu.torch_stream_of):
        cache.cache_clear()
    yield types.SimpleNamespace(cupy=cupy, torch=torch, driver=drv)
    for cache in (gpu._torch_dtype, gpu._stream_reader, gpu.torch_stream_of):
        cache.cache_clear()


@pytest.fixture
def softmax(libraries):
    """A fresh Prepared of softmax on 4 x 64 (one launch: x, y, rows, cols) bound to the fake driver."""
    op = get_op("softmax")
    cached = prepare(op, op.default_schedule(), op.problem({"rows": 4, "cols": 64}))
    prep = Prepared(cached.op, cached.kernel, cached.plan, cached.target)     # not the process-wide one
    prep.__dict__["bound"] = gpu.Bound(prep.plan, {l.symbol: 7 for l in prep.plan.launches}, {}, prep._arguments.names)
    return prep


def launched(drv):
    """(x, y, stream) of the last launch."""
    return drv.launches[-1][5], drv.launches[-1][6], drv.launches[-1][4]


@pytest.mark.parametrize("kind", [CupyArray, Tensor])
def test_a_new_address_in_the_same_array_is_launched(softmax, libraries, kind):
    x, y = kind((4, 64), 0x10000), kind((4, 64), 0x20000)
    softmax(x=x, y=y)
    assert launched(libraries.driver)[:2] == (0x10000, 0x20000)
    if kind is CupyArray:
        x.data.ptr = 0x30000
    else:
        x.ptr = 0x30000
    softmax(x=x, y=y)
    softmax(x=y, y=kind((4, 64), 0x40000))
    assert [l[5:7] for l in libraries.driver.launches] == [(0x10000, 0x20000), (0x30000, 0x20000), (0x20000, 0x40000)]
    assert libraries.driver.launches[0][5:] == (0x10000, 0x20000, 4, 64)     # the sizes stay where they were


@pytest.mark.parametrize("kind, dtype_shown", [(CupyArray, "float64"), (Tensor, "torch.float64")])
def test_a_wrong_shape_or_dtype_is_refused_after_a_good_call(softmax, libraries, kind, dtype_shown):
    x, y = kind((4, 64), 0x10000), kind((4, 64), 0x20000)
    softmax(x=x, y=y)
    with pytest.raises(UsageError, match=r"array 'y' has shape \(4, 63\); the problem needs \(4, 64\)"):
        softmax(x=x, y=kind((4, 63), 0x20000))
    x.shape = (64, 4)
    with pytest.raises(UsageError, match=r"array 'x' has shape \(64, 4\); the problem needs \(4, 64\)"):
        softmax(x=x, y=y)
    with pytest.raises(UsageError, match=f"array 'x' has dtype {dtype_shown}; this kernel takes float32"):
        softmax(x=kind((4, 64), 0x10000, "float64"), y=y)
    with pytest.raises(UsageError, match="not aligned to 16 bytes"):
        softmax(x=kind((4, 64), 0x10004), y=y)
    with pytest.raises(UsageError, match=r"softmax takes arrays x, y; missing \['y'\], unknown \['z'\]"):
        softmax(x=kind((4, 64), 0x10000), z=y)
    assert len(libraries.driver.launches) == 1                     # nothing refused reached the driver


def test_tf32x3_data_are_float32_tensors(libraries):
    op = get_op("gemm")
    p = op.problem({"M": 64, "N": 64, "K": 64}, dtype="tf32x3")
    cached = prepare(op, op.schedule_for(p), p)
    prep = Prepared(cached.op, cached.kernel, cached.plan, cached.target)
    prep.__dict__["bound"] = gpu.Bound(prep.plan, {l.symbol: 7 for l in prep.plan.launches}, {}, prep._arguments.names)
    prep(A=Tensor((64, 64), 0x10000), B=Tensor((64, 64), 0x20000), C=Tensor((64, 64), 0x30000))
    assert len(libraries.driver.launches) == len(prep.plan.launches)
    with pytest.raises(UsageError, match="array 'A' has dtype torch.float16; this kernel takes tf32x3"):
        prep(A=Tensor((64, 64), 0x10000, "float16"), B=Tensor((64, 64), 0x20000), C=Tensor((64, 64), 0x30000))


def test_a_torch_tensor_that_is_not_on_the_gpu_or_not_contiguous_is_refused(softmax, libraries):
    x, y = Tensor((4, 64), 0x10000), Tensor((4, 64), 0x20000)
    softmax(x=x, y=y)
    x.is_cuda = False
    with pytest.raises(UsageError, match="array 'x' is on cuda:0; kernels take CUDA tensors"):
        softmax(x=x, y=y)
    x.is_cuda, x.is_contiguous = True, lambda: False
    with pytest.raises(UsageError, match="array 'x' is not contiguous"):
        softmax(x=x, y=y)


def test_the_stream_is_the_given_one_else_the_callers_current_one(softmax, libraries):
    cp = CupyArray((4, 64), 0x10000), CupyArray((4, 64), 0x20000)
    th = Tensor((4, 64), 0x10000), Tensor((4, 64), 0x20000)
    libraries.cupy.stream, libraries.torch.stream = 0xC1, 0x71
    softmax(x=cp[0], y=cp[1])
    softmax(x=th[0], y=th[1])
    softmax(x=cp[0], y=th[1])                                        # any torch tensor: torch's stream
    libraries.cupy.stream, libraries.torch.stream = 0xC2, 0x72       # the caller switched streams
    softmax(x=cp[0], y=cp[1])
    softmax(x=th[0], y=th[1])
    softmax(x=cp[0], y=cp[1], stream=0x55)
    softmax(x=th[0], y=th[1], stream=types.SimpleNamespace(cuda_stream=0x56))
    softmax(x=cp[0], y=cp[1], stream=types.SimpleNamespace(ptr=0x57))
    softmax(x=cp[0], y=cp[1], stream=0)                              # the legacy default stream, not the current one
    assert [l[4] for l in libraries.driver.launches] == [0xC1, 0x71, 0x71, 0xC2, 0x72, 0x55, 0x56, 0x57, None]


def test_cache_keys_hash_once_and_pickle_without_the_hash():
    sched = get_op("sgemm").default_schedule()
    again = pickle.loads(pickle.dumps(sched))
    assert "_hash" not in vars(again) and again == sched and hash(again) == hash(sched)
    assert "_hash" in vars(sched) and hash(sched) == hash((sched.op, sched.steps))


def test_the_launch_config_has_cuda_h_layout(tmp_path):
    """_LaunchConfig against CUlaunchConfig of the cuda.h the wheels or the toolkit ship."""
    import shutil
    import subprocess

    from kernelgen import config
    from kernelgen.compile import _header_roots
    include = next((r for r in _header_roots() if (r / "cuda.h").is_file()), None)
    if include is None or not shutil.which(config.cxx()):
        pytest.skip("needs cuda.h and a C++ compiler")
    fields = [name for name, _ in gpu._LaunchConfig._fields_]
    (tmp_path / "layout.cpp").write_text(
        "#include <cuda.h>\n#include <cstddef>\n#include <cstdio>\nint main() {\n"
        '  std::printf("%zu", sizeof(CUlaunchConfig));\n'
        + "".join(f'  std::printf(" %zu", offsetof(CUlaunchConfig, {f}));\n' for f in fields) + "}\n")
    subprocess.run([config.cxx(), f"-I{include}", str(tmp_path / "layout.cpp"), "-o", str(tmp_path / "layout")],
                   check=True)
    printed = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, check=True).stdout
    assert printed.split() == [str(ctypes.sizeof(gpu._LaunchConfig))] + [
        str(getattr(gpu._LaunchConfig, f).offset) for f in fields]


ENCODE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                          *([ctypes.c_void_p] * 4), *([ctypes.c_int] * 4))


def test_a_tensor_map_is_encoded_from_the_address_and_again_only_when_it_changes(monkeypatch):
    calls = []

    def encode(out, dt, rank, addr, dims, strides, box, elem, interleave, swizzle, l2, oob):
        u64, u32 = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
        d, s, b = ctypes.cast(dims, u64), ctypes.cast(strides, u64), ctypes.cast(box, u32)
        calls.append((dt, rank, addr, (d[0], d[1]), s[0], (b[0], b[1]), swizzle, out % 64))
        ctypes.memmove(out, addr.to_bytes(8, "little") * 16, 128)   # what the driver writes: 128 bytes
        return 0

    class Driver:
        cuTensorMapEncodeTiled = ENCODE(encode)

    monkeypatch.setattr(gpu, "_libcuda", lambda: Driver())
    slot = gpu._TensorMapSlot(TensorMap("tmA", "A", rows=300, cols=1000, box_rows=128, box_cols=64), dtype("bfloat16"))
    slot.update(0x10000)
    slot.update(0x10000)
    slot.update(0x20000)
    # bf16 (9), 2-D, inner dimension first, row pitch in bytes, the box, the 128-byte swizzle (3), aligned.
    assert calls == [(9, 2, 0x10000, (1000, 300), 2000, (64, 128), 3, 0), (9, 2, 0x20000, (1000, 300), 2000, (64, 128), 3, 0)]
    assert bytes(slot.slot)[:8] == (0x20000).to_bytes(8, "little") and ctypes.sizeof(slot.slot) == 128


def test_a_launch_passes_the_tensor_map_by_value_encoded_from_the_buffers_address(monkeypatch):
    drv = FakeDriver(signature=(ctypes.c_uint64, ctypes.c_uint64))   # the map's first 8 bytes, then C
    encoded = []

    def encode(out, dt, rank, addr, dims, strides, box, elem, interleave, swizzle, l2, oob):
        encoded.append(addr)
        ctypes.memmove(out, (addr + 1).to_bytes(8, "little") * 16, 128)
        return 0

    drv.cuTensorMapEncodeTiled = ENCODE(encode)
    monkeypatch.setattr(gpu, "_libcuda", lambda: drv)
    kern = Kernel("gemm", "k", Schedule("gemm"), (), "", ())
    plan = Plan(kern, Problem((("M", 8), ("N", 8), ("K", 8)), gemm_types()), (Launch("k", (1, 1, 1), (128, 1, 1), ("tmA", "C")),),
                tensor_maps=(TensorMap("tmA", "A", rows=8, cols=8, box_rows=64, box_cols=64),))
    b = gpu.Bound(plan, {"k": 100})
    b.launch({"A": 0x5000, "C": 0x9000}, stream=0)
    b.launch({"A": 0x5000, "C": 0x9100}, stream=0)
    b.launch({"A": 0x6000, "C": 0x9100}, stream=0)
    assert encoded == [0x5000, 0x6000]                       # once per address of A
    assert [l[5:] for l in drv.launches] == [(0x5001, 0x9000), (0x5001, 0x9100), (0x6001, 0x9100)]


def gemm_types():
    from kernelgen.ops import get_op
    return get_op("gemm").types("float16")
