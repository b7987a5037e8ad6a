"""How a memory-bound template loads and stores one buffer's elements: C type, header, conversions to
and from the fp32 it computes in, and the vector type of one access. Decided here, handed to Jinja.

>>> from kernelgen.dtypes import dtype
>>> io = element_io(dtype("float32"), 4)
>>> io["vtype"], io["lanes"], io["to_float"] % "q.x"
('float4', ('x', 'y', 'z', 'w'), 'q.x')
>>> io = element_io(dtype("bf16"), 8)
>>> io["vtype"], io["vdecl"]
('kg_bf16x8', 'struct alignas(16) kg_bf16x8 { __nv_bfloat16 e[8]; };')
>>> io["to_float"] % "q.e[0]", io["from_float"] % "s", io["bits"]
('__bfloat162float(q.e[0])', '__float2bfloat16_rn(s)', 'uint4')

float32 keeps the float4 (float2) vector types and no conversions, so its kernels render as they did
before half types existed. A 16-bit type's vector of `vec` elements is an aligned struct of an array
(`vec * 2` bytes: 8 elements make one 128-bit access), as PyTorch's `aligned_vector` is; the compiler
loads it with one instruction and keeps its elements in registers.
"""
from __future__ import annotations

from ..dtypes import DType

MAX_ACCESS_BYTES = 16
# The unsigned CUDA type of an access's bytes: loads with a cache hint (__ldcs, __ldg) have overloads for
# CUDA's own types only, so a struct vector is loaded as these bits and copied into the struct.
BITS = {2: "unsigned short", 4: "unsigned int", 8: "uint2", 16: "uint4"}


def vector_widths(d: DType, float32_widths=(1, 4)) -> tuple[int, ...]:
    """Elements per access a row or elementwise template supports for `d`: the float32 widths it
    always had, and for 16-bit types every power of two up to a 16-byte access (1, 2, 4, 8)."""
    if d.name == "float32":
        return tuple(float32_widths)
    return tuple(w for w in (1, 2, 4, 8) if w * d.itemsize <= MAX_ACCESS_BYTES)


def element_io(d: DType, vec: int) -> dict:
    """Template parameters for elements of `d` accessed `vec` at a time: ctype, header, to_float and
    from_float (%-formats around an expression), ldg (a read-only scalar load, %-format around a
    pointer), vtype (the vector type), vdecl (its declaration, "" for CUDA's own), lanes (its members),
    bits (the unsigned type of one access's bytes)."""
    if d.name == "float32":
        vtype = {1: "float", 2: "float2", 4: "float4"}[vec]
        return dict(ctype="float", header="", to_float="%s", from_float="%s", ldg="__ldg(%s)",
                    ldg_vec="__ldg(%s)", vtype=vtype, vdecl="", lanes=("x", "y", "z", "w")[:vec] if vec > 1 else (),
                    bits=BITS[4 * vec])
    vtype = f"kg_{d.short}x{vec}" if vec > 1 else d.ctype
    vdecl = f"struct alignas({vec * d.itemsize}) {vtype} {{ {d.ctype} e[{vec}]; }};" if vec > 1 else ""
    # __ldg has overloads for __half and __nv_bfloat16 but not for a struct: vectors load through the
    # const __restrict__ pointer, which lets the compiler use the read-only path itself.
    return dict(ctype=d.ctype, header=d.header, to_float=d.to_float, from_float=d.from_float, ldg="__ldg(%s)",
                ldg_vec="*(%s)", vtype=vtype, vdecl=vdecl, lanes=tuple(f"e[{l}]" for l in range(vec)) if vec > 1 else (),
                bits=BITS[vec * d.itemsize])


def zero_vector(io: dict, vec: int) -> str:
    """A vector of zeros of element_io `io`: 0.0f, float2{ 0.0f, 0.0f }, or a struct of an array for 16-bit types."""
    zeros = ", ".join([io["from_float"] % "0.0f"] * vec)
    if vec == 1:
        return zeros
    return f"{io['vtype']}{{ {zeros} }}" if io["ctype"] == "float" else f"{io['vtype']}{{ {{ {zeros} }} }}"


def torch_tensor(array, d: DType):
    """A torch view of a device array of type `d` (bfloat16 arrays are uint16 bit patterns: viewed as
    int16, which torch takes, then as bfloat16)."""
    import torch
    if d.name == "bfloat16":
        import cupy
        return torch.as_tensor(array.view(cupy.int16), device="cuda").view(torch.bfloat16)
    return torch.as_tensor(array, device="cuda")
