"""Memory traffic per warp request on the emulator: shared-memory bank conflicts and global sectors.

>>> import kernelgen as kg
>>> from kernelgen.emulate.traffic import profile
>>> op = kg.get_op("transpose")
>>> s = kg.schedule("transpose").split("i", 32, 8).split("j", 32).fuse("i.0", "j.0").bind("i.0.j.0", "blockIdx.x")
>>> s = s.bind("j.1", "threadIdx.x").bind("i.2", "threadIdx.y").unroll("i.1").cache_read("x", "shared")
>>> t = profile(op, s, op.problem({"M": 32, "N": 32}))
>>> t.shared("load").ways, t.shared("store").ways    # the unpadded tile: its column reads hit one bank
(32, 1)

A warp request is the lanes of one warp executing the same load or store instruction of the
compiled kernel for the same time since the last barrier (runner.cpp's hooks tag each access with
its instruction; banks.hpp groups them). For shared memory each request costs wavefronts, as the
hardware counts them: bank = (byte address / 4) % 32, lanes reading one 4-byte word are a broadcast,
8-byte accesses run as 2 phases of 16 lanes and 16-byte ones as 4 phases of 8, half as many for a load
whose lanes pair up on one address (lane^1 or lane^2: a uniform LDS.128 costs 2); `ways` is the worst
phase (1: conflict-free) and `avg` the wavefronts per phase. For global memory a request costs the
distinct 32-byte sectors it touches. Nsight Compute counts the shared-memory excess as
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum / _op_st.sum (our `conflicts`), and the
sectors as l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / _op_st.sum per
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum / _op_st.sum.

The requests are NVCC's: check builds keep the source's accesses (a float4 whole, no scalars merged by
g++), and the scalar shared accesses NVCC's load-store vectoriser merges into LDS.64/128 and
STS.64/128 (contiguous in a thread, aligned in every execution) are merged the same way
(vectorize.hpp); `widths` says how many requests of each size a lane there are.

Limits, from what the CPU sees (g++'s code for one thread): accesses NVCC keeps apart for reasons of
its own are not seen (ptxas re-loading a value it dropped from a register: SGEMM ladder step 3 has 7
more scalar loads a tile on the GPU), nor global loads NVCC merges; alignment that holds for the sizes
run is taken as proven. Lanes are grouped by how often each ran the instruction since the last
barrier, so where lanes of a warp loop a different number of times (a tail tile) a request can mix
iterations: count on sizes that are whole tiles for exact figures. A cp.async counts as the copy it makes, at its issue (a global
load and a shared store); atomics are not counted.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError

ACCESS_NAMES = ("load", "store")


class _BankStat(ctypes.Structure):     # banks.hpp's KgBankStat
    _fields_ = [("space", ctypes.c_int32), ("access", ctypes.c_int32), ("region", ctypes.c_int32),
                ("worst", ctypes.c_int32), ("requests", ctypes.c_uint64), ("units", ctypes.c_uint64),
                ("phases", ctypes.c_uint64), ("lo", ctypes.c_uint64), ("hi", ctypes.c_uint64),
                ("widths", ctypes.c_uint64 * 5), ("name", ctypes.c_char * 64)]


@dataclass(frozen=True)
class AccessStat:
    """The warp requests of one array (shared) or buffer (global) in one direction."""
    space: str          # "shared" or "global"
    name: str           # the __shared__ array's name, "extern __shared__", or the buffer's name
    access: str         # "load" or "store"
    requests: int
    units: int          # wavefronts (shared) or 32-byte sectors (global)
    phases: int         # shared: request phases with an active lane (the conflict-free wavefronts); global: requests
    worst: int          # shared: the most wavefronts of one phase; global: the most sectors of one request
    widths: tuple[tuple[int, int], ...] = ()   # (bytes a lane, requests), widest first: 16-byte ones are LDS.128

    @property
    def ways(self) -> int:
        """Shared: the worst request's wavefronts per phase (1 = conflict-free); global: its sectors."""
        return self.worst

    @property
    def avg(self) -> float:
        """Wavefronts per phase (shared) or sectors per request (global), over all requests."""
        return self.units / max(1, self.phases)

    @property
    def conflicts(self) -> int:
        """Shared: wavefronts beyond one per phase (Nsight Compute's bank-conflict count)."""
        return self.units - self.phases

    def describe(self) -> str:
        if self.space == "shared":
            return f"{self.ways}-way (avg {self.avg:.1f}, {self.requests} requests{self._widths()})"
        return f"{self.avg:.1f} sectors/request (worst {self.worst}, {self.requests} requests{self._widths()})"

    def _widths(self) -> str:
        """", of 16 bytes" or ": 2048 of 16 bytes, 8192 of 4 bytes"; nothing where every request is of 4 bytes."""
        if [b for b, _ in self.widths] in ([], [4]):
            return ""
        if len(self.widths) == 1:
            return f" of {self.widths[0][0]} bytes"
        return ": " + ", ".join(f"{n} of {b} bytes" for b, n in self.widths)


@dataclass(frozen=True)
class Traffic:
    stats: tuple[AccessStat, ...]

    def find(self, space: str, access: str, name: str | None = None) -> AccessStat | None:
        """The one statistic of `space` and `access` (of array `name`, needed when there are several), or None."""
        found = [s for s in self.stats if s.space == space and s.access == access and name in (None, s.name)]
        if len(found) > 1:
            raise UsageError(f"{len(found)} {space} arrays have {access}s ({', '.join(s.name for s in found)}); "
                             "name one")
        return found[0] if found else None

    def shared(self, access: str, name: str | None = None) -> AccessStat | None:
        return self.find("shared", access, name)

    def global_(self, access: str, name: str | None = None) -> AccessStat | None:
        return self.find("global", access, name)

    def lines(self) -> list[str]:
        """One line per array: "tile (shared): loads 32-way (avg 32.0, 8 requests), stores 1-way (...)"."""
        out = []
        keys = list(dict.fromkeys((s.space, s.name) for s in self.stats))
        for space, name in keys:
            parts = [f"{s.access}s {s.describe()}" for a in ACCESS_NAMES for s in self.stats
                     if (s.space, s.name, s.access) == (space, name, a)]
            out.append(f"{name} ({space}): {', '.join(parts)}")
        return out


def _extern_parts(raw: list[tuple[_BankStat, str]]) -> list[tuple[_BankStat, str]]:
    """Name each extern __shared__ statistic (one per instruction) by the byte range of its part of the
    dynamic shared memory: the instructions whose ranges overlap, loads and stores together, are one part."""
    spans = sorted((s.lo, s.hi) for s, _ in raw if s.space == 0 and s.region >= 0)
    parts: list[list[int]] = []
    for lo, hi in spans:
        if parts and lo < parts[-1][1]:
            parts[-1][1] = max(parts[-1][1], hi)
        else:
            parts.append([lo, hi])
    out = []
    for s, name in raw:
        if s.space == 0 and s.region >= 0:
            lo, hi = next((p for p in parts if p[0] <= s.lo < p[1]), (s.lo, s.hi))
            name = f"{name} bytes {lo}-{hi}"
        out.append((s, name))
    return out


def collect(lib, names: list[str]) -> Traffic:
    """The statistics gathered since kg_banks_enable(1); `names` are the arena's regions in order."""
    count = lib.dll.kg_banks_count
    count.restype = ctypes.c_int
    get = lib.dll.kg_banks_get
    get.argtypes = [ctypes.c_int, ctypes.c_void_p]
    raw = []
    for i in range(count()):
        s = _BankStat()
        get(i, ctypes.byref(s))
        if s.space == 0:
            name = s.name.decode(errors="replace")
        else:
            name = names[s.region] if 0 <= s.region < len(names) else "?"
        raw.append((s, name))
    merged: dict[tuple[str, str, str], list[int]] = {}
    for s, name in _extern_parts(raw):
        key = ("shared" if s.space == 0 else "global", name, ACCESS_NAMES[s.access != 0])
        acc = merged.setdefault(key, [0] * 9)
        acc[0] += s.requests
        acc[1] += s.units
        acc[2] += s.phases
        acc[3] = max(acc[3], s.worst)
        for i in range(5):
            acc[4 + i] += s.widths[i]
    stats = [AccessStat(*key, *map(int, v[:4]), tuple((1 << i, int(v[4 + i])) for i in reversed(range(5)) if v[4 + i]))
             for key, v in merged.items() if v[0]]
    stats.sort(key=lambda s: (s.space != "shared", s.name, s.access))
    return Traffic(tuple(stats))


def run(plan, source: str, buffers: dict[str, np.ndarray]) -> Traffic:
    """Run `plan` on the emulator (a check build: races and bounds are checked too) and count its requests."""
    from . import build
    from .launch import run_launches
    symbols = [launch.symbol for launch in plan.launches]
    lib = build.build(source, symbols, check=True, name=plan.kernel.name or (symbols[0] if symbols else None))
    enable = lib.dll.kg_banks_enable
    enable.argtypes = [ctypes.c_int]
    enable(1)
    try:
        run_launches(lib, plan.launches, buffers, plan.workspaces, plan.scalars, check=True)
        used = {a for launch in plan.launches for a in launch.args}
        names = [n for n in buffers if n in used] + [w.name for w in plan.workspaces]   # the Arena's order
        return collect(lib, names)
    finally:
        enable(0)


def profile(op, sched, problem, *, seed: int = 0, arch: str | None = None) -> Traffic:
    """Prepare `sched` for `problem`, run it on the emulator with fresh inputs, and count its requests."""
    from ..prepared import prepare
    from ..validate import poisoned, target_for
    prep = prepare(op, sched, problem, target_for("emulate", arch))
    inputs = prep.op.make_inputs(problem, np.random.default_rng(seed))
    buffers = dict({k: np.ascontiguousarray(v) for k, v in inputs.items()},
                   **poisoned(problem, prep.op.output_shapes(problem)))
    return run(prep.plan, prep.source, buffers)
