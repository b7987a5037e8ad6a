"""The narrow compile boundary: compile(source, arch) -> cubin bytes, cached on disk by content.

>>> from kernelgen.compile import compile_cuda
>>> res = compile_cuda('extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.f; }', "sm_90", "k")
>>> res.cubin[:4] == b"\\x7fELF"
True

NVRTC (through cuda-bindings, which returns the whole cubin) needs no GPU when the arch is given.
The cache key is a hash of the source, the options and the NVRTC version; entries are written to a
temporary name and renamed, so a crash never leaves a half-written cubin behind, and processes that
compile the same source at once (the tuner's builders) each rename a whole file over the same name:
a reader sees the old file or the new one, never part of one. An entry missing its log or cubin
(an age-based cleaner took one) is compiled again.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import config
from .errors import CompileError, UsageError
from .interrupt import interruptible
from .target import parse_arch

BASE_OPTIONS = ("-std=c++17", "--ptxas-options=-v")


@dataclass(frozen=True)
class Compiled:
    cubin: bytes
    log: str             # NVRTC's log with ptxas' -v report (registers, spills)
    arch: str
    cached: bool = False

    def spill_bytes(self) -> int:
        return sum(int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", self.log))


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        try:
            from cuda import nvrtc  # cuda-python < 12.6
        except ImportError:
            raise UsageError("NVRTC is not available: install cuda-bindings and nvidia-cuda-nvrtc-cu12 "
                             "(`pip install -e .` does)") from None
    return nvrtc


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> str:
    nvrtc = _nvrtc()
    err, major, minor = nvrtc.nvrtcVersion()
    _ok(nvrtc, err, "nvrtcVersion")
    return f"{major}.{minor}"


def _ok(nvrtc, err, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise UsageError(f"NVRTC call {what} failed: {err}")


def _cache_path(source: str, arch: str, options: tuple[str, ...]) -> Path:
    key = hashlib.sha256("\0".join((source, arch, *options, nvrtc_version())).encode()).hexdigest()
    return config.cache_dir() / key[:2] / key


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def compile_cuda(source: str, arch: str, symbol: str = "kernel", options: tuple[str, ...] = ()) -> Compiled:
    """Compile CUDA C++ `source` for `arch` (e.g. "sm_90") to a cubin, or raise CompileError with the log."""
    parse_arch(arch)
    opts = BASE_OPTIONS + tuple(options)
    path = _cache_path(source, arch, opts)
    if config.cache_enabled():
        try:   # the log is written before the cubin, so a cubin found has its log (unless a cleaner took it)
            return Compiled(path.with_suffix(".cubin").read_bytes(), path.with_suffix(".log").read_text(), arch, True)
        except FileNotFoundError:
            pass
    cubin, log = interruptible(_nvrtc_compile, source, arch, symbol, opts)   # Ctrl-C need not wait for NVRTC
    if config.cache_enabled():
        _atomic_write(path.with_suffix(".log"), log.encode())
        _atomic_write(path.with_suffix(".cubin"), cubin)
    return Compiled(cubin, log, arch)


@functools.lru_cache(maxsize=1)
def _header_roots() -> list[Path]:
    """Folders that may hold the CUDA headers NVRTC does not ship, best first: the pip wheels
    (nvidia-cuda-runtime-cu12 / nvidia-cuda-nvcc-cu12, or CUDA 13's nvidia/cu13), then the toolkit
    that CUDA_HOME, CUDA_PATH or the nvcc on PATH names, then /usr/local/cuda."""
    import importlib.util
    import shutil
    roots = []
    for package in ("nvidia.cuda_runtime", "nvidia.cuda_nvcc", "nvidia.cu13"):
        try:
            spec = importlib.util.find_spec(package)
        except ImportError:
            continue
        roots += [Path(r) / "include" for r in ((spec.submodule_search_locations or []) if spec else [])]
    toolkits = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    toolkits += [str(Path(nvcc).resolve().parent.parent) if nvcc else None, "/usr/local/cuda"]
    return roots + [Path(t) / "include" for t in toolkits if t]


@functools.lru_cache(maxsize=1)
def _runtime_includes() -> tuple[str, ...]:
    """--include-path options for cuda_fp16.h, cuda_bf16.h and mma.h (and the crt/mma.h that mma.h
    includes): the first folder of _header_roots that holds each; () where none does."""
    found: list[str] = []
    roots = _header_roots()
    for header in ("cuda_fp16.h", "crt/mma.h"):
        root = next((r for r in roots if (r / header).exists()), None)
        if root is not None and f"--include-path={root}" not in found:
            found.append(f"--include-path={root}")
    return tuple(found)


def _nvrtc_compile(source: str, arch: str, symbol: str, opts: tuple[str, ...]) -> tuple[bytes, str]:
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{symbol}.cu".encode(), 0, [], [])
    _ok(nvrtc, err, "nvrtcCreateProgram")
    try:
        args = [f"--gpu-architecture={arch}".encode()] + [o.encode() for o in opts + _runtime_includes()]
        (cerr,) = nvrtc.nvrtcCompileProgram(prog, len(args), args)
        # NVRTC's getters write into the buffer they are given: a bytearray, never a bytes object (b" " * 1 is the
        # interpreter's shared one-byte b" ", which an empty log's NUL would overwrite for the whole process)
        err, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = bytes(buf).rstrip(b"\0 ").decode(errors="replace")
        if cerr != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            if "could not open source file" in log and not _runtime_includes():
                log += ("\nNVRTC found no CUDA headers (cuda_fp16.h, mma.h): pip install nvidia-cuda-runtime-cu12 "
                        "nvidia-cuda-nvcc-cu12, or set CUDA_HOME to a CUDA toolkit")
            raise CompileError(symbol, log, source)
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        _ok(nvrtc, err, "nvrtcGetCUBINSize")
        cubin = bytearray(size)
        (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
        _ok(nvrtc, err, "nvrtcGetCUBIN")
        return bytes(cubin), log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
