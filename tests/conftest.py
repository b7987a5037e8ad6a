"""Test tiers: plain Python; `nvrtc` (compile and read SASS, no GPU); `nvcc` (the toolkit compiler); `emulate` (CPU emulator,
needs g++); `gpu` (skipped with a reason where there is no GPU)."""
import os
import shutil

import pytest

from kernelgen import config

# Every emulator validation runs with the checker on (races, out-of-bounds, partial barriers): bugs
# that leave the answer right are still bugs on the GPU. A test asks for check=False to go without.
os.environ.setdefault("KERNELGEN_EMULATE_CHECK", "1")


def _gpu_reason():
    from kernelgen import gpu
    return None if gpu.available() else "no CUDA GPU on this machine"


def _nvrtc_reason():
    try:
        from kernelgen.compile import nvrtc_version
        nvrtc_version()
        return None
    except Exception as e:  # the library or its wheel is missing
        return f"NVRTC unavailable: {e}"


def _emulate_reason():
    if not shutil.which(config.cxx()):
        return f"no C++ compiler {config.cxx()!r} for the emulator"
    try:
        from kernelgen import emulate
        emulate.execute  # noqa: B018
        return None
    except (ImportError, AttributeError) as e:
        return f"emulator unavailable: {e}"


def _nvcc_reason():
    return None if shutil.which("nvcc") else "nvcc not on PATH"


def pytest_collection_modifyitems(config, items):
    reasons = {}
    for item in items:
        for marker, probe in (("gpu", _gpu_reason), ("nvrtc", _nvrtc_reason), ("emulate", _emulate_reason),
                              ("nvcc", _nvcc_reason)):
            if marker in item.keywords:
                if marker not in reasons:
                    reasons[marker] = probe()
                if reasons[marker]:
                    item.add_marker(pytest.mark.skip(reason=reasons[marker]))
