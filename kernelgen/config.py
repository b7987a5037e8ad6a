"""Every environment switch kernelgen reads, in one place (Triton's habit).

>>> import os
>>> from kernelgen import config
>>> saved = os.environ.pop("KERNELGEN_CACHE_DIR", None)   # the default, whatever this shell sets
>>> config.cache_dir().name
'kernelgen'
>>> if saved is not None: os.environ["KERNELGEN_CACHE_DIR"] = saved

Archs, their limits and features live in `kernelgen.target`, element types in `kernelgen.dtypes`.
"""
from __future__ import annotations

import os
from pathlib import Path

VERSION = "0.1.0"
ISSUES = "the kernelgen issue tracker, issue template 'bug'"   # where the CLI asks for bug reports


def cache_dir() -> Path:
    """Compiled cubins, keyed by source, options and compiler version (KERNELGEN_CACHE_DIR)."""
    root = os.environ.get("KERNELGEN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kernelgen")
    return Path(root)


def cache_enabled() -> bool:
    return os.environ.get("KERNELGEN_NO_CACHE", "") in ("", "0")


def tuning_db() -> Path:
    """The append-only JSON-lines tuning database (KERNELGEN_TUNING_DB)."""
    return Path(os.environ.get("KERNELGEN_TUNING_DB", "kernelgen_tuning.jsonl"))


def cxx() -> str:
    """The host C++ compiler the emulator builds kernels with (KERNELGEN_CXX)."""
    return os.environ.get("KERNELGEN_CXX", "g++")


def ncu() -> str:
    """The Nsight Compute command `kernelgen profile` runs (KERNELGEN_NCU; default `ncu` on PATH)."""
    return os.environ.get("KERNELGEN_NCU") or "ncu"


def emulate_check() -> bool:
    """Whether validations on the emulator run with the checker (races, out-of-bounds, partial barriers)
    when the caller does not say: KERNELGEN_EMULATE_CHECK set and not 0 (the test suite sets it to 1)."""
    return os.environ.get("KERNELGEN_EMULATE_CHECK", "") not in ("", "0")


def force_no_gpu() -> bool:
    """Pretend there is no GPU (KERNELGEN_NO_GPU=1), for testing the no-GPU paths on a GPU machine."""
    return os.environ.get("KERNELGEN_NO_GPU", "") not in ("", "0")


def max_host_bytes() -> int:
    """Host memory a validation or emulator run may allocate (KERNELGEN_MAX_HOST_BYTES; default half of
    this machine's memory): larger problems are refused before anything is allocated."""
    env = os.environ.get("KERNELGEN_MAX_HOST_BYTES", "")
    if env.strip().isdigit():
        return int(env)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 16 << 30
