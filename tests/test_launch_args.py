"""The driver-API launch path without a GPU: what reaches cuLaunchKernel and cuMemsetD32Async.

A fake driver (ctypes callbacks with the real signatures) reads the argument array the way the
driver does, so the packing of pointers and scalars, the order of launches and the workspace clears
are checked here; the GPU tier runs the same path on a device.
"""
import ctypes

import pytest

from kernelgen import gpu
from kernelgen.errors import LaunchError, UsageError
from kernelgen.dtypes import dtype
from kernelgen.ops.base import Launch, Plan, Problem, Scalar, Kernel, TensorMap
from kernelgen.schedule import Schedule

LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *([ctypes.c_uint] * 7), ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_void_p)
MEMSET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p)


class FakeDriver:
    def __init__(self, fail: int = 0):
        self.launches, self.memsets = [], []

        def launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
            ptr = ctypes.cast(slots[0], ctypes.POINTER(ctypes.c_uint64))[0]
            n = ctypes.cast(slots[1], ctypes.POINTER(ctypes.c_int32))[0]
            self.launches.append((f, (gx, gy, gz), (bx, by, bz), smem, stream, ptr, n))
            return fail

        def memset(ptr, bits, count, stream):
            self.memsets.append((ptr, bits, count, stream))
            return 0

        self.cuLaunchKernel, self.cuMemsetD32Async = LAUNCH(launch), MEMSET(memset)

    def cuGetErrorName(self, status, out):
        ctypes.cast(out, ctypes.POINTER(ctypes.c_char_p))[0] = b"CUDA_ERROR_INVALID_VALUE"
        return 0


class Func:
    def __init__(self, ptr):
        self.ptr = ptr


def bound(launches, scalars=(), fills=(), align=()):
    kern = Kernel("demo", "k", Schedule("demo"), (), "", ())
    plan = Plan(kern, Problem((("n", 5),)), launches, (), scalars, align)
    b = object.__new__(gpu.Bound)
    fixed = {s.name: gpu._SCALAR_CTYPES[s.ctype](s.value) for s in plan.scalars}
    b.plan, b.fills, b.align, b.maps = plan, list(fills), tuple(align), []
    b.calls = [gpu._Call(Func(100 + i), l, fixed) for i, l in enumerate(launches)]
    return b


def test_pointers_and_scalars_reach_the_driver_in_parameter_order(monkeypatch):
    drv = FakeDriver()
    monkeypatch.setattr(gpu, "_libcuda", lambda: drv)
    b = bound((Launch("first", (3, 2, 1), (128, 1, 1), ("x", "n"), 4096),
               Launch("second", (1, 1, 1), (32, 1, 1), ("y", "n"))), scalars=(Scalar("n", "int", 77),),
              fills=((0xABC0, 0, 9),))
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
