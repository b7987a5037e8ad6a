"""Element types as data: the C type, the host storage, the rounding, and how a problem's buffers are typed.

>>> from kernelgen.dtypes import dtype, Types
>>> dtype("bf16").ctype, dtype("half").itemsize
('__nv_bfloat16', 2)
>>> import numpy as np
>>> dtype("bf16").decode(dtype("bf16").encode(np.array([1.0, 3.14159]))).tolist()
[1.0, 3.140625]
>>> t = Types.of(("A", "B"), ("C",), "float16", out="float32")
>>> t.short, t["A"].name, t.acc.name
('f16of32', 'float16', 'float32')

bfloat16 has no numpy type: its host storage is the 16-bit pattern (uint16), rounded to nearest
even from float32 as the GPU's `__float2bfloat16_rn` does. Half-precision buffers are made from
values already rounded to the type, so a float64 reference of those values is exact input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import UsageError


@dataclass(frozen=True)
class DType:
    name: str           # float32 | float16 | bfloat16 | tf32 | tf32x3 | dmma
    short: str          # in kernel names: f32, f16, bf16
    ctype: str          # the CUDA C type
    itemsize: int
    storage: str        # numpy dtype of the host and device arrays
    unit_roundoff: float  # half an ulp at 1.0: 2^-24, 2^-11, 2^-8
    header: str = ""    # the CUDA header that declares ctype
    math: str = "fp32"  # the roofline's compute path when this type feeds a matrix product
    to_float: str = "%s"      # C conversion of one value to fp32 (a %-format around the expression)
    from_float: str = "%s"    # C conversion of one fp32 value to this type, rounding to nearest even
    pair: str = "float2"      # the two-element vector type
    pack: str = "make_float2"  # C function of two fp32 values to `pair`

    @property
    def data(self) -> str:
        """The element type of the arrays as a framework names it: float32 for tf32, tf32x3 and dmma (float32 data
        that only a matrix product multiplies otherwise), else the type's own name."""
        return "float32" if self.math in ("tf32", "fp64") else self.name

    @property
    def smallest_normal(self) -> float:
        """The smallest positive normal value (below it the spacing stops shrinking): 2^-126, 2^-14, 2^-126."""
        return 2.0 ** -14 if self.name == "float16" else 2.0 ** -126

    def encode(self, x) -> np.ndarray:
        """Values (any float array) rounded to this type, as its storage."""
        x = np.asarray(x)
        if self.name != "bfloat16":
            return x.astype(self.storage)
        bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16      # round to nearest, ties to even
        nan = np.isnan(x.astype(np.float32))
        return np.where(nan, 0x7FC0, rounded).astype(np.uint16)

    def decode(self, stored, xp=np) -> np.ndarray:
        """Storage back to float64 values (`xp`: numpy, or cupy for arrays on the GPU)."""
        stored = xp.asarray(stored)
        if self.name != "bfloat16":
            return stored.astype(xp.float64)
        return (stored.astype(xp.uint32) << 16).view(xp.float32).astype(xp.float64)


FLOAT32 = DType("float32", "f32", "float", 4, "float32", 2.0 ** -24)
FLOAT16 = DType("float16", "f16", "__half", 2, "float16", 2.0 ** -11, "cuda_fp16.h", "fp16",
                "__half2float(%s)", "__float2half_rn(%s)", "__half2", "__floats2half2_rn")
BFLOAT16 = DType("bfloat16", "bf16", "__nv_bfloat16", 2, "uint16", 2.0 ** -8, "cuda_bf16.h", "fp16",
                 "__bfloat162float(%s)", "__float2bfloat16_rn(%s)", "__nv_bfloat162", "__floats2bfloat162_rn")
# fp32 data multiplied on tensor cores (opt-in, the GEMM only): tf32 rounds each input to TF32 (10 fraction bits,
# cvt.rna) for one mma a product; tf32x3 splits each into a TF32 high part and a TF32 low part (the
# rounding's remainder) and adds the three products that matter (lo*hi, hi*lo, hi*hi), about fp32's accuracy
# (CUTLASS's "3xTF32"). Both are stored and returned as float32.
TF32 = DType("tf32", "tf32", "float", 4, "float32", 2.0 ** -11, math="tf32")
TF32X3 = DType("tf32x3", "tf32x3", "float", 4, "float32", 2.0 ** -22, math="tf32")
# fp32 data on the fp64 tensor cores (DMMA): each value widened to fp64 (exact), the products exact (24 + 24 bits) and
# summed in fp64, the result rounded once to fp32: at least as accurate as any fp32 FFMA kernel. Where a GPU's
# DMMA rate matches its FFMA rate (H100, H200, A100) the tensor cores spend one issue slot on 512 products where
# FFMA spends one on 32, and so run nearer their peak (kernelgen/ops/gemm_cost.py).
DMMA = DType("dmma", "dmma", "float", 4, "float32", 2.0 ** -24, math="fp64")
DTYPES = {d.name: d for d in (FLOAT32, FLOAT16, BFLOAT16, TF32, TF32X3, DMMA)}
ALIASES = {"float": "float32", "fp32": "float32", "f32": "float32", "half": "float16", "fp16": "float16",
           "f16": "float16", "bf16": "bfloat16", "bfloat": "bfloat16"}


def dtype(name) -> DType:
    """A DType by name or alias (float32/fp32/f32, float16/fp16/half, bfloat16/bf16, tf32, tf32x3, dmma)."""
    if isinstance(name, DType):
        return name
    key = ALIASES.get(str(name).lower(), str(name).lower())
    if key not in DTYPES:
        raise UsageError(f"dtype {name!r} is unknown; choose one of {', '.join(DTYPES)} "
                         f"(or {', '.join(ALIASES)})")
    return DTYPES[key]


@dataclass(frozen=True)
class Types:
    """The element type of every buffer of a problem, and of the accumulator."""

    buffers: tuple[tuple[str, DType], ...]
    acc: DType = FLOAT32

    @staticmethod
    def of(inputs, outputs, dtype_name="float32", out=None, acc="float32") -> "Types":
        d, o = dtype(dtype_name), dtype(out or dtype_name)
        return Types(tuple((b, d) for b in inputs) + tuple((b, o) for b in outputs), dtype(acc))

    def __getitem__(self, buffer: str) -> DType:
        return dict(self.buffers)[buffer]

    @property
    def input(self) -> DType:
        return self.buffers[0][1]

    @property
    def output(self) -> DType:
        return self.buffers[-1][1]

    @property
    def short(self) -> str:
        """f32, f16, bf16, tf32; `of32` appended when outputs are stored in another type than inputs."""
        s = self.input.short
        return s + (f"o{self.output.short}" if self.output.storage != self.input.storage else "")

    def describe(self) -> str:
        """For file headers and tables: inputs, outputs and accumulator."""
        return f"inputs {self.input.name}, outputs {self.output.name}, accumulate in {self.acc.name}"

    def itemsize(self, buffer: str) -> int:
        return self[buffer].itemsize
