"""Operands TMA cannot read, copied first into a workspace whose rows are padded to 16 bytes.

TMA reads a tensor whose rows start 16-byte aligned: a row's bytes a multiple of 16, 8 elements of a
16-bit type. A stored operand whose rows are not (A stored M x K with K % 8 != 0, ...) is copied by
NAME_pad into a workspace of the same rows, each padded to a whole number of 16-byte chunks, and the
kernel's tensor map reads that copy: its size stays the operand's own (TMA fills what lies past it with
zeros), only its row pitch is the padded one, so the padding is never read. The copy moves the
operand's bytes twice (read, write), which beside the product of the shapes it serves (rows of
thousands) is a few percent; cp.async feeding wgmma instead would need element-wise copies into the
128-byte swizzle in the main loop of every block, the main loop that sets the GEMM's speed.

>>> from kernelgen.ops.operands import Operands
>>> staged(Operands("NN"), {"M": 7000, "N": 5124, "K": 1760})
('B',)
>>> pitch(5124), staged(Operands("TN"), {"M": 7133, "N": 1760, "K": 1760})
(5128, ('A',))
"""
from __future__ import annotations

from .base import Launch, Workspace, cdiv
from .operands import Operands

PITCH = 8                        # elements of a 16-bit type in 16 bytes
PAD_THREADS, PAD_BLOCKS = 256, 4096   # the copy: one 16-byte chunk of the copy a thread, grid-stride


def pitch(cols: int) -> int:
    """Elements per padded row."""
    return cdiv(cols, PITCH) * PITCH


def name(buffer: str) -> str:
    """The workspace holding `buffer`'s padded copy."""
    return f"{buffer}_pitched"


def staged(o: Operands, sizes) -> tuple[str, ...]:
    """The operands (of A, B) whose stored rows are not 16 bytes a multiple."""
    return tuple(b for b in "AB" if sizes[o.lead(b)] % PITCH)


def shape(o: Operands, buffer: str) -> tuple[str, str]:
    """(rows, cols) of `buffer` as stored, as size names."""
    return {"A": ("K", "M") if o.a_t else ("M", "K"), "B": ("N", "K") if o.b_t else ("K", "N")}[buffer]


def launch(symbol: str, o: Operands, buffer: str, sizes, storage: str) -> tuple[Launch, Workspace]:
    """The copy of `buffer` into its padded workspace (`storage`: the element's numpy type)."""
    rows, cols = (sizes[s] for s in shape(o, buffer))
    grid = (min(cdiv(rows * (pitch(cols) // PITCH), PAD_THREADS), PAD_BLOCKS), 1, 1)
    return (Launch(symbol, grid, (PAD_THREADS, 1, 1), (buffer, name(buffer), *shape(o, buffer)), role="copy"),
            Workspace(name(buffer), storage, rows * pitch(cols)))


def recipe(symbol: str, o: Operands, buffer: str, ctype: str):
    """`launch` as a recipe: (the step, the workspace entry), both only where the rows are unaligned (the
    workspace's count is 0 elsewhere); and the condition."""
    from ..recipe import Step
    rows, cols = shape(o, buffer)
    when = f"{o.lead(buffer)} % {PITCH} != 0"
    chunks = f"kg_ll({rows}) * kg_cdiv({cols}, {PITCH})"
    step = Step(symbol, (f"kg_min(kg_cdiv({chunks}, {PAD_THREADS}), {PAD_BLOCKS})", "1", "1"), (PAD_THREADS, 1, 1),
                (buffer, name(buffer), rows, cols), when=when)
    return step, (name(buffer), ctype, f"({when}) * {chunks} * {PITCH}", None), when
