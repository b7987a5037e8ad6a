"""What the compiler made of a kernel, read from the cubin without a GPU.

>>> from kernelgen.ops import get_op
>>> from kernelgen.inspect import inspect_kernel
>>> op = get_op("reduce_sum")
>>> facts = inspect_kernel(op.kernel(op.default_schedule()), "sm_90")
>>> all(f.spill_bytes == 0 for f in facts)
True

Registers, shared and local memory come from `cuobjdump -res-usage`, spills from ptxas' -v report,
and instruction counts (128-bit global loads/stores, shared-memory vector loads, local-memory
traffic, FFMA, tensor-core HMMA / DMMA / HGMMA, ldmatrix LDSM and TMA copies) from `nvdisasm` on the cubin. The nvdisasm of CUDA 13
no longer reads sm_70 (Volta) cubins: for such an arch the instruction counts are None (`n/a` in
tables) and `sass_note(arch)` says why; everything else is still reported.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .compile import Compiled, compile_cuda
from .errors import UsageError
from .ops.base import Kernel
from .render import render


@dataclass(frozen=True)
class KernelFacts:
    symbol: str
    registers: int
    shared_bytes: int      # static shared memory
    local_bytes: int       # stack frame / local memory per thread
    spill_bytes: int       # spill stores + loads reported by ptxas
    # instruction counts from nvdisasm; None where the installed nvdisasm cannot read the arch
    ldg128: int | None     # LDG.E.128 (16-byte global loads)
    stg128: int | None
    lds128: int | None     # 16-byte shared loads
    ldg: int | None        # all global loads
    stg: int | None
    local_ops: int | None  # LDL + STL
    ffma: int | None
    instructions: int | None
    hmma: int | None = 0   # tensor-core mma (HMMA.*)
    dmma: int | None = 0   # fp64 tensor-core mma (DMMA.*)
    ldsm: int | None = 0   # ldmatrix (LDSM.*)
    hgmma: int | None = 0  # warpgroup mma (HGMMA.*, sm_90a)
    tma: int | None = 0    # TMA tile copies (UTMALDG / UTMASTG)

    def row(self) -> dict:
        return dict(self.__dict__)


def _tool(name: str) -> str:
    """Find nvdisasm/cuobjdump: PATH, the CUDA toolkit, or the nvidia-cuda-* wheels."""
    found = shutil.which(name)
    if found:
        return found
    candidates = [Path("/usr/local/cuda/bin") / name]
    try:
        import nvidia
        for root in nvidia.__path__:
            candidates += sorted(Path(root).glob(f"*/bin/{name}"))
    except ImportError:
        pass
    for c in candidates:
        if c.exists() and os.access(c, os.X_OK):
            return str(c)
    raise UsageError(f"{name} not found: install nvidia-cuda-nvdisasm and nvidia-cuda-cuobjdump "
                     "(`pip install -e .` does), or put the CUDA toolkit on PATH")


def _run(tool: str, args: list[str], cubin: bytes) -> str:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        Path(path).write_bytes(cubin)
        out = subprocess.run([_tool(tool), *args, path], capture_output=True, text=True)
    if out.returncode:
        raise UsageError(f"{tool} failed on the cubin: {out.stderr.strip()[:300]}")
    return out.stdout


def _resources(cubin: bytes) -> dict[str, dict[str, int]]:
    res, current = {}, None
    for line in _run("cuobjdump", ["-res-usage"], cubin).splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            current = m.group(1)
            continue
        if current and "REG:" in line:
            res[current] = {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", line)}
    return res


_OPCODE = re.compile(r"/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")  # an instruction, past its predicate


def _functions(cubin: bytes) -> dict[str, list[str]]:
    """nvdisasm's lines of each kernel in the cubin."""
    bodies: dict[str, list[str]] = {}
    current = None
    for line in _run("nvdisasm", ["-c"], cubin).splitlines():
        m = re.match(r"\s*\.text\.(\S+):", line)
        if m:
            current = m.group(1)
            bodies[current] = []
        elif current:
            bodies[current].append(line)
    return bodies


class SassUnavailable(UsageError):
    """The installed nvdisasm cannot disassemble this arch (CUDA 13 dropped sm_70)."""


_NO_SASS: dict[str, str] = {}     # arch -> why its SASS cannot be read, learnt on first try


def sass_note(arch: str) -> str | None:
    """Why SASS instruction counts are unavailable for `arch` (None when they are available)."""
    return _NO_SASS.get(arch)


def _sass(cubin: bytes) -> dict[str, Counter]:
    return {sym: Counter(m.group(1) for line in lines if (m := _OPCODE.search(line)))
            for sym, lines in _functions(cubin).items()}


def _sass_or_none(cubin: bytes, arch: str) -> dict[str, Counter] | None:
    if arch in _NO_SASS:
        return None
    try:
        return _sass(cubin)
    except UsageError as e:
        if "deprecated" not in str(e) and "not supported" not in str(e).lower():
            raise
        _NO_SASS[arch] = (f"the installed nvdisasm cannot read {arch} cubins (its CUDA dropped that arch), so SASS "
                          "counts (ldg128, stg128, lds128, ffma) are n/a; registers, shared and local memory "
                          "(cuobjdump) and spills (ptxas) are reported")
        return None


def hot_loops(cubin: bytes, min_ffma: int = 256, unit: str = "FFMA") -> dict[str, list[tuple[str, ...]]]:
    """Each kernel's loops (a backward branch to a label) holding at least `min_ffma` FFMAs (or
    instructions of another `unit`: "HMMA"), as their opcodes in order: where a loop issues its global
    loads tells whether a prefetch overlaps the math or was sunk by ptxas next to its use."""
    loops: dict[str, list[tuple[str, ...]]] = {}
    for sym, lines in _functions(cubin).items():
        labels = {m.group(1): i for i, l in enumerate(lines) if (m := re.match(r"(\.L_x_\d+):", l))}
        found = []
        for i, line in enumerate(lines):
            m = re.search(r"BRA\s+`\((\.L_x_\d+)\)", line)
            if m and labels.get(m.group(1), i) < i:
                ops = tuple(op.group(1) for l in lines[labels[m.group(1)]:i + 1] if (op := _OPCODE.search(l)))
                if sum(o.startswith(unit) for o in ops) >= min_ffma:
                    found.append(ops)
        loops[sym] = found
    return loops


def _spills(log: str) -> dict[str, int]:
    spills = {}
    for name, stores, loads in re.findall(
            r"Function properties for (\S+)\s*\n[^\n]*?(\d+) bytes spill stores, (\d+) bytes spill loads", log):
        spills[name] = int(stores) + int(loads)
    return spills


def facts_of(compiled: Compiled) -> list[KernelFacts]:
    res, spills = _resources(compiled.cubin), _spills(compiled.log)
    sass = _sass_or_none(compiled.cubin, compiled.arch)
    out = []
    for sym in sorted(res):
        ops = sass.get(sym, Counter()) if sass is not None else None

        def count(pred) -> int | None:
            return None if ops is None else sum(n for op, n in ops.items() if pred(op))

        out.append(KernelFacts(
            symbol=sym, registers=res[sym].get("REG", 0), shared_bytes=res[sym].get("SHARED", 0),
            local_bytes=res[sym].get("LOCAL", 0) + res[sym].get("STACK", 0), spill_bytes=spills.get(sym, 0),
            ldg128=count(lambda o: o.startswith("LDG") and ".128" in o),
            stg128=count(lambda o: o.startswith("STG") and ".128" in o),
            lds128=count(lambda o: o.startswith("LDS") and ".128" in o),
            ldg=count(lambda o: o.startswith("LDG")), stg=count(lambda o: o.startswith("STG")),
            local_ops=count(lambda o: o.startswith(("LDL", "STL"))),
            ffma=count(lambda o: o.startswith("FFMA")), instructions=None if ops is None else sum(ops.values()),
            hmma=count(lambda o: o.startswith("HMMA")), dmma=count(lambda o: o.startswith("DMMA")),
            ldsm=count(lambda o: o.startswith("LDSM")), hgmma=count(lambda o: o.startswith("HGMMA")),
            tma=count(lambda o: o.startswith(("UTMALDG", "UTMASTG")))))
    return out


def inspect_kernel(kernel: Kernel, arch: str) -> list[KernelFacts]:
    """Compile (cached) and read the facts of every kernel in `kernel`'s source."""
    return facts_of(compile_cuda(render(kernel), arch, kernel.name))


def traffic(op, kernel: Kernel, problem) -> tuple[list[str], list[dict] | str]:
    """(lines, data) of the emulator's memory traffic per warp request (kernelgen.emulate.traffic) when
    `kernel`'s schedule runs `problem` on the CPU: per array, shared-memory wavefronts (bank conflicts)
    and global sectors. A kernel the emulator cannot run gives one line saying why, and that reason."""
    from dataclasses import asdict
    from .emulate.traffic import profile
    from .errors import KernelgenError
    from .validate import check_memory
    try:
        check_memory(op, problem, "emulate")
        t = profile(op, kernel.schedule, problem, arch=kernel.arch)
    except KernelgenError as e:
        why = " ".join(str(e).split())
        return [f"not counted: {why}"], why
    data = [dict(asdict(s), ways=s.ways, avg=round(s.avg, 3), conflicts=s.conflicts) for s in t.stats]
    return t.lines() or ["no shared or global requests"], data
