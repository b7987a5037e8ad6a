"""Run a Plan's launches on a built kernel library: buffers in a guarded arena, errors as one line.

>>> import numpy as np
>>> from kernelgen.emulate.build import build
>>> from kernelgen.emulate.launch import run_launches
>>> from kernelgen.ops.base import Launch
>>> lib = build('extern "C" __global__ void k(float* x) { x[threadIdx.x] = 2.0f * threadIdx.x; }', ["k"])
>>> x = np.zeros(4, np.float32)
>>> run_launches(lib, [Launch("k", (1, 1, 1), (4, 1, 1), ("x",))], {"x": x}, (), ())
>>> x.tolist()
[0.0, 2.0, 4.0, 6.0]

Every buffer and workspace is copied into one arena with a red zone on either side filled with a NaN
canary. A buffer sits at the weakest alignment the launch accepts: `alignment` (a plan's declared
alignment, an element for the buffers it does not name: a PyTorch view can start at any element) gives
its bytes a, and the buffer starts a bytes past a multiple of 2a, so a kernel that assumes more than its
plan declares reads or writes misaligned vectors (the checker reports 4-, 8- and 16-byte ones) or the
wrong elements. Without `alignment`, and for workspaces, each buffer is 256-byte aligned (as
cudaMalloc). Check builds bounds-check every access against that layout before it happens: an address
in no buffer (a red zone, or anywhere outside the arena, however far: the heap, another library) is
reported against the nearest buffer, unless it is the thread's own stack or the kernel library's
static data. Every build compares the red zones after
each launch, so a write just past the end never goes unnoticed. Buffers are copied back only after
every launch succeeded.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import numpy as np

from ..errors import LaunchError, UsageError
from ..interrupt import interruptible
from ..ops.base import Launch, Scalar, Workspace

ORDERS = {"forward": 0, "reverse": 1, "random": 2}
STACK_BYTES = 256 * 1024          # per fiber: room for register tiles such as float acc[8][8] plus float4 arrays
ALIGN = 256                       # cudaMalloc's alignment
RED = 256                         # red-zone bytes on each side of a buffer
CANARY = 0x7FC0DEAD               # a float NaN, so a read of a red zone shows
SMEM_LIMIT = 227 * 1024

MAX_THREADS = 1024
_run_lock = threading.Lock()      # one launch at a time per process: the runner owns signal handlers
_stacks: list[int] = []           # the process's fiber stacks (runner.cpp's kg_stack_pool), shared by all libraries

E_NAMES = {1: "out-of-bounds", 2: "out-of-bounds", 3: "race", 4: "fault", 5: "deadlock", 6: "warp", 7: "trap",
           8: "shuffle", 9: "misaligned", 10: "resources", 11: "race"}
ACCESS = {0: ("read", "reads", "read"), 1: ("write", "writes", "wrote"), 2: ("atomic", "atomically updates",
                                                                            "atomically updated")}
CTYPE_CODE = {"int": "i", "long long": "l", "float": "f", "unsigned int": "u", "unsigned": "u", "double": "d",
              "unsigned long long": "L"}
CODE_NAME = {"i": "int", "u": "unsigned int", "l": "long long", "L": "unsigned long long", "f": "float",
             "d": "double", "b": "bool", "h": "__half", "?": "a struct"}
CODE_CTYPE = {"i": ctypes.c_int, "u": ctypes.c_uint, "l": ctypes.c_longlong, "L": ctypes.c_ulonglong,
              "f": ctypes.c_float, "d": ctypes.c_double, "b": ctypes.c_bool}
POINTEE_DTYPE = {"h": "float16", "f": "float32", "d": "float64", "i": "int32", "u": "uint32", "l": "int64", "L": "uint64"}


class EmulationError(LaunchError):
    """A kernel misbehaved on the CPU emulator: out-of-bounds access, shared-memory race, fault, deadlock.

    The message is one line naming the kernel symbol, the thread and block, and the buffer offset or
    address; the same facts are attributes (`symbol`, `kind`, `thread`, `block`, `buffer`, `index`).
    """

    def __init__(self, message: str, *, symbol: str = "", kind: str = "", thread=None, block=None,
                 buffer: str | None = None, index: int | None = None):
        super().__init__(message)
        self.symbol, self.kind, self.thread, self.block = symbol, kind, thread, block
        self.buffer, self.index = buffer, index


class _Region(ctypes.Structure):
    _fields_ = [("lo", ctypes.c_uint64), ("hi", ctypes.c_uint64)]


class _Launch(ctypes.Structure):
    _fields_ = [("entry", ctypes.c_void_p), ("args", ctypes.c_void_p), ("grid", ctypes.c_uint32 * 3),
                ("block", ctypes.c_uint32 * 3), ("shared_bytes", ctypes.c_uint64), ("seed", ctypes.c_uint64),
                ("order", ctypes.c_int32), ("check", ctypes.c_int32), ("arena", ctypes.c_uint64),
                ("arena_size", ctypes.c_uint64), ("regions", ctypes.c_void_p), ("nregions", ctypes.c_int64),
                ("stacks", ctypes.c_void_p), ("stack_bytes", ctypes.c_uint64), ("stack_count", ctypes.c_uint64)]


class _Error(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("access", ctypes.c_int32), ("size", ctypes.c_int32),
                ("other_access", ctypes.c_int32), ("thread", ctypes.c_int32 * 3), ("block", ctypes.c_int32 * 3),
                ("other_thread", ctypes.c_int32 * 3), ("region", ctypes.c_int32), ("elem", ctypes.c_int32),
                ("offset", ctypes.c_int64), ("addr", ctypes.c_uint64), ("name", ctypes.c_char * 64),
                ("text", ctypes.c_char * 256)]


@dataclass
class _Slot:
    name: str
    array: np.ndarray | None      # the caller's array (None for a workspace)
    dtype: np.dtype
    count: int
    lo: int                       # byte offset in the arena
    nbytes: int


class Arena:
    """The buffers and workspaces of one execution, laid out with red zones in one byte array."""

    def __init__(self, arrays: dict[str, np.ndarray], workspaces: tuple[Workspace, ...],
                 alignment: dict[str, int] | None = None):
        self.slots: list[_Slot] = []
        off = RED
        items = [(n, a, a.dtype, a.size) for n, a in arrays.items()]
        items += [(w.name, None, np.dtype(w.dtype), int(w.count)) for w in workspaces]
        for i, (name, arr, dtype, count) in enumerate(items):
            if alignment is None or i >= len(arrays):
                lo = -(-off // ALIGN) * ALIGN
            else:                        # the weakest the plan accepts: a past a multiple of 2a
                a = max(int(alignment.get(name, 1)), dtype.itemsize)
                lo = -(-(off - a) // (2 * a)) * (2 * a) + a
            nbytes = count * dtype.itemsize
            self.slots.append(_Slot(name, arr, dtype, count, lo, nbytes))
            off = lo + nbytes + RED
        total = -(-off // ALIGN) * ALIGN
        big = max([ALIGN] + [2 * a for a in (alignment or {}).values()])
        self.raw = np.empty(total + big, np.uint8)
        start = (-self.raw.ctypes.data) % big
        self.bytes = self.raw[start:start + total]
        self.bytes.view(np.uint32)[:] = CANARY
        self.base = self.bytes.ctypes.data
        for s, w in zip(self.slots[len(arrays):], workspaces):
            view = self.view(s)
            if w.fill is not None:
                view[:] = w.fill
            elif view.dtype.kind in "fc":
                view[:] = np.nan         # unwritten reads show as NaN
        for s in self.slots[:len(arrays)]:
            self.bytes[s.lo:s.lo + s.nbytes] = s.array.reshape(-1).view(np.uint8)
        self.by_name = {s.name: s for s in self.slots}
        self.regions = (_Region * max(1, len(self.slots)))(
            *[_Region(self.base + s.lo, self.base + s.lo + s.nbytes) for s in self.slots])

    def view(self, s: _Slot) -> np.ndarray:
        return self.bytes[s.lo:s.lo + s.nbytes].view(s.dtype)

    def address(self, name: str) -> int:
        return self.base + self.by_name[name].lo

    def find(self, addr: int) -> tuple[_Slot, int] | None:
        """The buffer nearest to `addr` and the byte offset of `addr` from its start."""
        off = addr - self.base
        if not 0 <= off < len(self.bytes) or not self.slots:
            return None
        s = min(self.slots, key=lambda s: 0 if s.lo <= off < s.lo + s.nbytes else min(abs(off - s.lo),
                                                                                   abs(off - s.lo - s.nbytes)))
        return s, off - s.lo

    def red_zone_damage(self) -> tuple[_Slot, int] | None:
        """(buffer, byte offset from its start) of the first red-zone byte that is no longer the canary."""
        words = self.bytes.view(np.uint32)
        edges = [0] + [x for s in self.slots for x in (s.lo, s.lo + s.nbytes)] + [len(self.bytes)]
        for i in range(0, len(edges), 2):
            lo, hi = -(-edges[i] // 4), edges[i + 1] // 4     # whole words of the gap
            bad = np.flatnonzero(words[lo:hi] != CANARY)
            if bad.size:
                return self.find(self.base + 4 * (lo + int(bad[0])))
        return None

    def copy_back(self) -> None:
        for s in self.slots:
            if s.array is None:
                continue
            new = self.bytes[s.lo:s.lo + s.nbytes]
            old = s.array.reshape(-1).view(np.uint8)
            if np.array_equal(new, old):
                continue
            if not s.array.flags.writeable:
                raise UsageError(f"buffer {s.name!r} is read-only, but the kernels wrote to it")
            old[:] = new


def _where(t, b) -> str:
    bs = f"block ({b[0]},{b[1]},{b[2]})"
    return f"thread ({t[0]},{t[1]},{t[2]}) of {bs}" if t[0] >= 0 else bs


def _describe(arena: Arena, slot: _Slot, off: int) -> tuple[str, int]:
    idx = off // slot.dtype.itemsize
    if off < 0:
        rel = f"{-off} bytes before its start"
    elif off >= slot.nbytes:
        rel = f"{off - slot.nbytes} bytes past its end"
    else:
        rel = f"byte {off}"
    return f"{slot.name}[{idx}] ({rel}; {slot.name} has {slot.count} {slot.dtype.name} elements)", idx


def _shared_where(name: str, offset: int, elem: int, shared_bytes: int) -> tuple[str, int]:
    if name == "extern __shared__":
        return (f"byte {offset} of the dynamic shared memory (extern __shared__, {shared_bytes} bytes at launch)",
                offset)
    index = offset // max(1, elem)
    return f"{name}[{index}] (byte {offset} of {name})", index


def launch_error(symbol: str, err: _Error, arena: Arena, shared_bytes: int = 0) -> EmulationError:
    t, b, o = tuple(err.thread), tuple(err.block), tuple(err.other_thread)
    kind = E_NAMES.get(err.kind, "error")
    text, name = err.text.decode(errors="replace"), err.name.decode(errors="replace")
    acc, verb, _ = ACCESS.get(err.access, ACCESS[0])
    buffer, index = None, None
    if err.kind == 1 and err.region < 0:                      # global out of bounds, the launch has no buffer
        msg = f"out-of-bounds {acc} of {err.size} bytes at address 0x{err.addr:x} (the launch passes no buffer) " \
              f"by {_where(t, b)}"
    elif err.kind == 1:                                       # global out of bounds: named after the nearest buffer
        slot = arena.slots[err.region]
        what, index = _describe(arena, slot, err.offset)
        buffer = slot.name
        msg = f"out-of-bounds {acc} of {err.size} bytes at {what} by {_where(t, b)}"
    elif err.kind == 2:                                       # shared out of bounds
        where, index = _shared_where(name, err.offset, err.elem, shared_bytes)
        buffer = name
        msg = f"out-of-bounds shared-memory {acc} of {err.size} bytes at {where} by {_where(t, b)}"
    elif err.kind == 3:                                       # race
        where, index = _shared_where(name, err.offset, err.elem, shared_bytes)
        buffer = name
        _, _, other_verb = ACCESS.get(err.other_access, ACCESS[1])
        msg = (f"shared-memory race on {where}: thread ({t[0]},{t[1]},{t[2]}) "
               f"{verb} it after thread ({o[0]},{o[1]},{o[2]}) {other_verb} it in the same barrier phase, in "
               f"block ({b[0]},{b[1]},{b[2]}) (missing __syncthreads or __syncwarp?)")
    elif err.kind == 11:                                      # a cp.async destination not landed yet
        where, index = _shared_where(name, err.offset, err.elem, shared_bytes)
        buffer = name
        msg = (f"shared {acc} of a cp.async destination before its group was waited for: {where}, by "
               f"{_where(t, b)}; thread ({o[0]},{o[1]},{o[2]}) issued the copy (cp.async.wait_group waits "
               f"for too few groups, or a __syncthreads after the wait is missing?)")
    elif err.kind == 9:                                       # misaligned
        found = arena.find(err.addr)
        where = _describe(arena, *found)[0] if found else f"shared address 0x{err.addr:x}"
        msg = (f"misaligned {err.size}-byte {acc} at {where} (address 0x{err.addr:x} is not {err.size}-byte "
               f"aligned) by {_where(t, b)}")
    else:
        msg = f"{text} in {_where(t, b)}"
        if err.kind == 4:
            found = arena.find(err.addr)
            if found:
                msg += f", near {_describe(arena, *found)[0]}"
            msg += "; check=True locates out-of-bounds accesses"
    thread = t if t[0] >= 0 else None
    return EmulationError(f"{symbol}: {msg}", symbol=symbol, kind=kind, thread=thread, block=b, buffer=buffer,
                          index=index)


def _check_config(launch: Launch) -> None:
    g, blk = launch.grid, launch.block
    problems = []
    if len(g) != 3 or len(blk) != 3 or min(*g, *blk) < 1:
        problems.append("every grid and block dimension must be >= 1")
    elif launch.threads > 1024:
        problems.append(f"{launch.threads} threads per block (limit 1024)")
    elif blk[0] > 1024 or blk[1] > 1024 or blk[2] > 64:
        problems.append(f"block {blk} (limits 1024, 1024, 64)")
    elif g[0] > 2**31 - 1 or g[1] > 65535 or g[2] > 65535:
        problems.append(f"grid {g} (limits 2^31-1, 65535, 65535)")
    if launch.shared_bytes > SMEM_LIMIT or launch.shared_bytes < 0:
        problems.append(f"{launch.shared_bytes} bytes of dynamic shared memory (limit {SMEM_LIMIT})")
    if problems:
        raise EmulationError(f"{launch.symbol}: invalid launch configuration: {problems[0]}", symbol=launch.symbol,
                             kind="configuration")


def _arguments(lib, launch: Launch, arena: Arena, scalars: dict[str, Scalar]) -> list:
    """ctypes objects holding each argument, in the kernel's parameter order (checked against its signature)."""
    sym = launch.symbol
    sig = lib.signature(sym)
    if len(sig) != len(launch.args):
        raise EmulationError(f"{sym}: the kernel takes {len(sig)} parameters but the launch passes "
                             f"{len(launch.args)} ({', '.join(launch.args)})", symbol=sym, kind="arguments")
    values = []
    for i, (name, (kind, pointee)) in enumerate(zip(launch.args, sig)):
        if name in arena.by_name:
            slot = arena.by_name[name]
            if kind != "p":
                raise EmulationError(f"{sym}: parameter {i} is {CODE_NAME.get(kind, kind)}, but the launch passes "
                                     f"buffer {name!r}", symbol=sym, kind="arguments")
            want = POINTEE_DTYPE.get(pointee)
            if want and np.dtype(want) != slot.dtype:
                raise EmulationError(f"{sym}: parameter {i} points to {CODE_NAME[pointee]}, but buffer {name!r} is "
                                     f"{slot.dtype.name}", symbol=sym, kind="arguments")
            values.append(ctypes.c_void_p(arena.address(name)))
        elif name in scalars:
            s = scalars[name]
            code = CTYPE_CODE.get(s.ctype)
            if kind == "p" or code != kind or kind not in CODE_CTYPE:
                have = "a pointer" if kind == "p" else CODE_NAME.get(kind, kind)
                raise EmulationError(f"{sym}: parameter {i} is {have}, but the launch passes scalar {name!r} as "
                                     f"{s.ctype}", symbol=sym, kind="arguments")
            values.append(CODE_CTYPE[kind](s.value))
        else:
            raise UsageError(f"{sym}: launch argument {name!r} is not a buffer, workspace or scalar of the plan")
    return values


def _stack_pool(lib) -> int:
    if not _stacks:
        fn = lib.dll.kg_stack_pool
        fn.restype, fn.argtypes = ctypes.c_void_p, [ctypes.c_uint64, ctypes.c_uint64]
        addr = fn(MAX_THREADS, STACK_BYTES)
        if not addr:
            raise EmulationError(f"could not map {MAX_THREADS} fiber stacks of {STACK_BYTES} bytes", kind="resources")
        _stacks.append(addr)
    return _stacks[0]


def run_launches(lib, launches, buffers: dict[str, np.ndarray], workspaces: tuple[Workspace, ...],
                 scalars: tuple[Scalar, ...], *, check: bool = False, order: str = "forward", seed: int = 0,
                 alignment: dict[str, int] | None = None) -> None:
    """Run `launches` in order on `lib`; `buffers` are updated in place once all of them succeeded.

    `alignment` (buffer -> bytes, as Plan.alignment) places each buffer at the weakest alignment the
    launches accept (an element for a buffer it does not name); None: every buffer 256-byte aligned."""
    if order not in ORDERS:
        raise UsageError(f"emulator order {order!r} is unknown; choose one of {', '.join(ORDERS)}")
    used = {a for l in launches for a in l.args}
    arrays = {}
    for name, arr in buffers.items():
        if name not in used:
            continue
        if not isinstance(arr, np.ndarray) or not arr.flags.c_contiguous:
            raise UsageError(f"buffer {name!r} must be a C-contiguous numpy array")
        arrays[name] = arr
    arena = Arena(arrays, tuple(workspaces), alignment)
    scal = {s.name: s for s in scalars}

    def work() -> None:
        # runs on interruptible's worker thread: it holds everything the launches touch (arena,
        # arguments) until the native code returns, even after the caller was interrupted and went on
        with _run_lock:
            for launch in launches:
                _check_config(launch)
                values = _arguments(lib, launch, arena, scal)
                argv = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])
                desc = _Launch(entry=lib.entry(launch.symbol), args=ctypes.addressof(argv),
                               grid=(ctypes.c_uint32 * 3)(*launch.grid), block=(ctypes.c_uint32 * 3)(*launch.block),
                               shared_bytes=launch.shared_bytes, seed=seed & (2**64 - 1), order=ORDERS[order],
                               check=int(check), arena=arena.base, arena_size=len(arena.bytes),
                               regions=ctypes.addressof(arena.regions), nregions=len(arena.slots),
                               stacks=_stack_pool(lib), stack_bytes=STACK_BYTES, stack_count=MAX_THREADS)
                err = _Error()
                if lib.launch(ctypes.byref(desc), ctypes.byref(err)):
                    raise launch_error(launch.symbol, err, arena, launch.shared_bytes)
                damage = arena.red_zone_damage()
                if damage:
                    what = _describe(arena, *damage)[0]
                    raise EmulationError(f"{launch.symbol}: out-of-bounds write at {what}, found in the red zone "
                                         "after the launch; check=True names the thread", symbol=launch.symbol,
                                         kind="out-of-bounds", buffer=damage[0].name,
                                         index=damage[1] // damage[0].dtype.itemsize)

    # Ctrl-C reaches the caller within a poll interval even while a long kernel runs (ctypes drops
    # the GIL): the caller's buffers are left untouched, since nothing is copied back.
    interruptible(work)
    arena.copy_back()
