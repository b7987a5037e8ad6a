"""Compile a kernel's source with the host C++ compiler into a shared library, cached on disk by content.

>>> from kernelgen.emulate.build import build
>>> lib = build('extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }', ["k"])
>>> lib.signature("k")
(('p', 'f'),)

The library holds the kernel (source.prepare's rewrite, with shim.h force-included and
-DKERNELGEN_EMULATE) and runner.cpp's fiber scheduler. Check builds add g++'s -fsanitize=thread
instrumentation without its runtime: runner.cpp's hooks receive every memory access. The cache key
is a hash of the rewritten source, shim, runner, flags and compiler version; libraries are written
under a temporary name and renamed, so a crash never leaves half a library behind. The work folder
(`kg-emulate-*` in the temporary directory) is removed when the build ends, however it ends (an
error, Ctrl-C: g++ is killed by subprocess.run); with the cache off the library is deleted once
loaded. `cleanup()` removes any this process still holds (the CLI calls it on Ctrl-C).
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from .. import config
from ..errors import CompileError, UsageError
from ..interrupt import at_exit
from . import source as src

HERE = Path(__file__).resolve().parent
SHIM = HERE / "shim.h"
SHIM_HEADERS = (SHIM, HERE / "half.h", HERE / "wmma.h")   # shim.h and what it includes: all in the cache key
RUNNER = HERE / "runner.cpp"
# runner.cpp and the parts of its translation unit: all in the cache keys
RUNNER_PARTS = (RUNNER, HERE / "check.hpp", HERE / "banks.hpp", HERE / "vectorize.hpp")
BUILD_VERSION = 2          # bump when the build steps change: it is part of the cache key

COMMON_FLAGS = ("-std=gnu++17", "-O2", "-fPIC", "-fno-strict-aliasing", "-fno-math-errno", "-fvisibility=hidden",
                "-fstack-clash-protection", "-w")
# -fno-strict-aliasing: kernels read float arrays through float4 pointers, which CUDA allows.
CHECK_FLAGS = ("-DKG_CHECK", "-fno-tree-sra", "-fno-tree-vectorize", "-fsanitize=thread",
               "--param=tsan-instrument-func-entry-exit=0")
# -fno-tree-sra: a float4 loaded or stored whole stays one 16-byte access (as on the GPU) instead of
# four 4-byte ones; -fno-tree-vectorize: g++ does not merge scalar accesses into vector ones of its own
# choosing. So the accesses banks.hpp counts are the source's, and it merges them as NVCC does
# (vectorize.hpp). Neither costs measurable time.
LINK_FLAGS = ("-shared", "-Wl,-Bsymbolic", "-Wl,-z,defs")
# -z defs: a construct the runner lacks a hook for fails the link instead of the load.

_lock = threading.Lock()


def shim_text() -> str:
    return "\0".join(h.read_text() for h in SHIM_HEADERS)


_loaded: dict[str, "Library"] = {}
_workdirs: set[str] = set()          # this process's kg-emulate-* folders not yet removed


def _workdir() -> Path:
    work = tempfile.mkdtemp(prefix="kg-emulate-")
    _workdirs.add(work)
    return Path(work)


def _remove(work) -> None:
    shutil.rmtree(work, ignore_errors=True)
    _workdirs.discard(str(work))


@at_exit
def cleanup() -> None:
    """Remove every work folder this process made and still holds."""
    for work in list(_workdirs):
        _remove(work)


@functools.lru_cache(maxsize=4)
def compiler_version(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise UsageError(f"the emulator needs a C++ compiler: {cxx!r} does not run ({e}); set KERNELGEN_CXX") from None
    return out.splitlines()[0] if out else cxx


def _run(cmd: list[str], symbol: str, source: str, cwd: str) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if p.returncode != 0:
        # g++'s "file.cu:12:5: error:" in NVRTC's "file.cu(12): error:" form, which CompileError.details reads
        log = re.sub(r"^([^\s:]+\.cu):(\d+):\d+: ", r"\1(\2): ", p.stderr, flags=re.M)
        missing = re.search(r"undefined reference to `([^']+)'", log)
        if missing:         # say what is missing before the linker's generic "ld returned 1"
            log = f"error: undefined reference to `{missing.group(1)}` (the CPU emulator does not provide it)\n" + log
        raise CompileError(symbol, log or f"{cmd[0]} exited with {p.returncode}", source)
    return p.stdout


def _atomic_copy(tmp: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(dir=dest.parent, prefix=dest.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(tmp.read_bytes())
        os.replace(part, dest)
    except BaseException:
        if os.path.exists(part):
            os.unlink(part)
        raise


def _runner_object(cxx: str, workdir: Path) -> Path:
    """runner.cpp compiled once per compiler and runner version (never instrumented)."""
    flags = COMMON_FLAGS + (f"-I{HERE}",)
    key = hashlib.sha256("\0".join((*(p.read_text() for p in RUNNER_PARTS), shim_text(), *flags,
                                    compiler_version(cxx)))
                         .encode()).hexdigest()[:32]
    cached = config.cache_dir() / "emulate" / f"runner-{key}.o"
    if config.cache_enabled() and cached.exists():
        return cached
    obj = workdir / "runner.o"
    _run([cxx, *flags, "-c", str(RUNNER), "-o", str(obj)], "runner", RUNNER.read_text(), str(workdir))
    if config.cache_enabled():
        _atomic_copy(obj, cached)
        return cached
    return obj


class Library:
    """A loaded kernel library: entry points and signatures by kernel symbol, and kg_launch."""

    def __init__(self, path: Path):
        self.path = path
        self.dll = ctypes.CDLL(str(path))
        self.launch = self.dll.kg_launch
        self.launch.restype = ctypes.c_int
        self.launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    def entry(self, symbol: str) -> int:
        return ctypes.cast(getattr(self.dll, f"kg_entry_{symbol}"), ctypes.c_void_p).value

    def signature(self, symbol: str) -> tuple[tuple[str, str], ...]:
        """(kind, pointee) per parameter: kind is 'p' (pointer) or a scalar code i u l L f d b ?."""
        fn = getattr(self.dll, f"kg_sig_{symbol}")
        fn.restype = ctypes.c_char_p
        s = fn().decode()
        n = len(s) // 2
        return tuple((s[i], s[n + i]) for i in range(n))


def build(source: str, symbols, *, check: bool = False, name: str | None = None) -> Library:
    """Compile `source` (CUDA C++) for the CPU, exporting `symbols`; raise CompileError with g++'s log."""
    symbols = list(dict.fromkeys(symbols))
    name = name or (symbols[0] if symbols else "kernel")
    for s in symbols:
        if not re.search(rf"\b{re.escape(s)}\s*\(", source):
            raise CompileError(name, f"{name}.cu(1): error: kernel symbol {s!r} is not defined in the source", source)
    cpp = src.prepare(source, symbols, name)
    cxx = config.cxx()
    flags = COMMON_FLAGS + ("-DKERNELGEN_EMULATE", "-include", str(SHIM)) + (CHECK_FLAGS if check else ())
    key = hashlib.sha256("\0".join((cpp, shim_text(), *(p.read_text() for p in RUNNER_PARTS), *flags, *LINK_FLAGS,
                                    compiler_version(cxx), str(BUILD_VERSION))).encode()).hexdigest()
    path = config.cache_dir() / "emulate" / key[:2] / f"{key}.so"
    with _lock:
        if str(path) in _loaded:
            return _loaded[str(path)]
        if config.cache_enabled() and path.exists():
            lib = _loaded[str(path)] = Library(path)
            return lib
        work = _workdir()
        try:
            path = _compile(cpp, source, name, cxx, flags, path, work)
            lib = Library(path)     # loaded before the work folder goes: a library stays mapped once loaded
            if config.cache_enabled():
                _loaded[str(path)] = lib
            return lib
        finally:
            _remove(work)


def _compile(cpp: str, source: str, name: str, cxx: str, flags: tuple[str, ...], path: Path, work: Path) -> Path:
    cu = work / f"{name}.cu"
    cu.write_text(cpp)
    pre = _run([cxx, "-E", *flags, "-x", "c++", cu.name], name, source, str(work))
    src.scan_unsupported(pre, cu.name, name, source)
    runner = _runner_object(cxx, work)
    out = work / "kernel.so"
    _run([cxx, *flags, "-c", "-x", "c++", cu.name, "-o", "kernel.o"], name, source, str(work))
    # linked without -fsanitize: the TSan runtime must not load, runner.cpp's hooks replace it
    _run([cxx, "kernel.o", str(runner), *LINK_FLAGS, "-o", str(out)], name, source, str(work))
    if not config.cache_enabled():
        return out          # loaded by build() before the work folder is removed
    _atomic_copy(out, path)
    return path
