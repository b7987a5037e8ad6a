"""The compile boundary: NVRTC without a GPU, the content-keyed cache, errors carrying the log."""
import pytest

from kernelgen.compile import compile_cuda
from kernelgen.errors import CompileError, UsageError

pytestmark = pytest.mark.nvrtc
SRC = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 2.f; }\n'


def test_cache_hit_returns_the_same_cubin(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    a = compile_cuda(SRC, "sm_90", "k")
    b = compile_cuda(SRC, "sm_90", "k")
    assert not a.cached and b.cached and a.cubin == b.cubin
    assert compile_cuda(SRC, "sm_80", "k").cubin != a.cubin
    assert not list(tmp_path.rglob("*.tmp"))


def test_compile_error_carries_log_and_source_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    bad = 'extern "C" __global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n'
    with pytest.raises(CompileError) as e:
        compile_cuda(bad, "sm_90", "k")
    assert "undefined_name" in str(e.value) and "compiling k failed" in str(e.value)
    assert ">    2|   x[0] = undefined_name;" in e.value.details()


def test_unknown_arch_lists_the_choices():
    with pytest.raises(UsageError, match="sm_80, sm_86"):
        compile_cuda(SRC, "sm_99", "k")
