"""The registry of operators. `get_op(name)` or `OPS` for all of them.

>>> from kernelgen.ops import OPS
>>> "reduce_sum" in OPS
True
"""
from __future__ import annotations

import importlib

from ..errors import UsageError
from .base import Op

# module name -> class name; each op lives in its own module
_REGISTRY = {
    "reduce": "ReduceSum",
    "sgemm": "Sgemm",
    "softmax": "Softmax",
    "layernorm": "LayerNorm",
    "transpose": "Transpose",
    "gemv": "Gemv",
    "conv2d": "Conv2d",
    "elementwise": "Elementwise",
    "staged_load": "StagedLoad",
    "gemm": "Gemm",
    "attention": "Attention",
}


def _load() -> dict[str, Op]:
    ops = {}
    for module, cls in _REGISTRY.items():
        try:
            mod = importlib.import_module(f".{module}", __name__)
        except ModuleNotFoundError as e:
            if e.name == f"{__name__}.{module}":
                continue  # op not written yet
            raise
        op = getattr(mod, cls)()
        ops[op.name] = op
    return ops


OPS: dict[str, Op] = _load()


def get_op(name: str) -> Op:
    if name not in OPS:
        raise UsageError(f"unknown op {name!r}; ops are {', '.join(sorted(OPS))}")
    return OPS[name]
