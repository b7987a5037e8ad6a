"""GPU-only: interop with CuPy and PyTorch arrays, and the checks on caller arrays."""
import numpy as np
import pytest

import kernelgen as kg
from kernelgen.errors import UsageError

pytestmark = pytest.mark.gpu


@pytest.fixture
def op():
    return kg.get_op("reduce_sum")


def test_torch_tensors_in_and_out(op):
    torch = pytest.importorskip("torch")
    x = torch.randint(-16, 17, (100003,), device="cuda").float()
    out = torch.full((1,), float("nan"), device="cuda")
    kg.launch(op, op.default_schedule(), op.problem({"n": 100003}), x=x, out=out)
    assert out.item() == x.double().sum().item()


def test_cupy_arrays_and_wrong_arrays_are_named(op):
    import cupy
    p = op.problem({"n": 1000})
    x = cupy.asarray(np.arange(1000, dtype=np.float32))
    out = cupy.empty(1, dtype=cupy.float32)
    kg.launch(op, op.default_schedule(), p, x=x, out=out)
    assert float(out[0]) == 499500.0
    with pytest.raises(UsageError, match="dtype float64; this kernel takes float32"):
        kg.launch(op, op.default_schedule(), p, x=x.astype(cupy.float64), out=out)
    with pytest.raises(UsageError, match=r"shape \(999,\); the problem needs \(1000,\)"):
        kg.launch(op, op.default_schedule(), p, x=x[:999], out=out)
    with pytest.raises(UsageError, match="not C-contiguous"):
        kg.launch(op, op.default_schedule(), op.problem({"n": 500}), x=x[::2], out=out)
    with pytest.raises(UsageError, match="not aligned to 16 bytes"):
        kg.launch(op, op.default_schedule(), op.problem({"n": 999}), x=x[1:], out=out)
    with pytest.raises(UsageError, match="missing \\['out'\\]"):
        kg.launch(op, op.default_schedule(), p, x=x)
