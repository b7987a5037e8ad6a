"""Operand layouts of the GEMM-like ops (sgemm, gemm): how A and B of C[M,N] = op(A) . op(B) are stored.

Every buffer is row-major. Letter 1 of a layout is A, letter 2 is B. 'N': stored as in the product
(A is M x K, its rows K long; B is K x N, rows N long). 'T': stored transposed (A is K x M, rows M
long; B is N x K, rows K long: torch's nn.Linear weight, so x . W^T is layout NT).

>>> from kernelgen.ops.operands import Operands
>>> o = Operands("NT")
>>> o.a_t, o.b_t, o.lead("A"), o.lead("B"), o.stored({"M": 5, "N": 3, "K": 7})
(False, True, 'K', 'K', {'A': (5, 7), 'B': (3, 7)})
>>> o.aligned((4, 4, 2))           # sizes whose multiples keep every row of A, B and C vector-aligned
(('K', 4), ('N', 2))
>>> [(t.suffix, t.when) for t in o.twins((4, 4, 2))]
[('', 'K % 4 == 0 && N % 2 == 0'), ('_unaligned_k', 'K % 4 != 0 && N % 2 == 0'), ('_unaligned_n', 'K % 4 == 0 && N % 2 != 0'), ('_unaligned', 'K % 4 != 0 && N % 2 != 0')]
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np


def mixed_twins(k: dict) -> bool:
    """Whether a GEMM schedule's kernel holds twins with some operands vectorised and some not (Operands.twins):
    not where registers are capped (min_blocks > 1): under 128 registers ptxas spilled in the main loop of such
    a twin (sgemm's ladder step 8, A alone element-wise), where the two ends fit."""
    return k["min_blocks"] == 1


@dataclass(frozen=True)
class Twin:
    """One entry point of a vectorised GEMM kernel: the sizes in `unaligned` (some of M, N, K) leave
    rows at any offset, so the operands whose rows they measure go element-wise; the rest keep vectors."""
    suffix: str                      # "" (every row aligned), "_unaligned_n", ..., "_unaligned" (none)
    unaligned: tuple[str, ...]
    when: str                        # the C condition on the sizes that picks it

    def aligned(self, dim: str) -> bool:
        return dim not in self.unaligned


@dataclass(frozen=True)
class Operands:
    layout: str = "NN"

    @property
    def a_t(self) -> bool:
        """A is stored transposed (K x M)."""
        return self.layout[0] == "T"

    @property
    def b_t(self) -> bool:
        """B is stored transposed (N x K)."""
        return self.layout[1] == "T"

    def lead(self, buffer: str) -> str:
        """The size a stored row of `buffer` holds: its leading dimension (C's is N)."""
        if buffer == "A":
            return "M" if self.a_t else "K"
        if buffer == "B":
            return "K" if self.b_t else "N"
        return "N"

    def stored(self, sizes) -> dict[str, tuple[int, int]]:
        """The shapes of A and B as stored (rows, columns)."""
        M, N, K = sizes["M"], sizes["N"], sizes["K"]
        return {"A": (K, M) if self.a_t else (M, K), "B": (N, K) if self.b_t else (K, N)}

    def aligned(self, widths: tuple[int, int, int]) -> tuple[tuple[str, int], ...]:
        """(size, width) pairs, in the order A, B, C and each size once with its widest vector: every row
        of A, B and C starts `width`-element aligned when each size is a multiple of its width."""
        out: dict[str, int] = {}
        for buffer, width in zip("ABC", widths):
            dim = self.lead(buffer)
            out[dim] = max(out.get(dim, 1), width)
        return tuple(out.items())

    def condition(self, widths: tuple[int, int, int], sep: str = " && ") -> str:
        """`aligned` as a C condition (K % 4 == 0 && N % 4 == 0)."""
        return sep.join(f"{d} % {w} == 0" for d, w in self.aligned(widths))

    def holds(self, widths: tuple[int, int, int], sizes) -> bool:
        return all(sizes[d] % w == 0 for d, w in self.aligned(widths))

    def dims_words(self, widths: tuple[int, int, int]) -> str:
        """The sizes `aligned` names, in words: "K and N", "M, K and N"."""
        dims = [d for d, _ in self.aligned(widths)]
        return dims[0] if len(dims) == 1 else ", ".join(dims[:-1]) + " and " + dims[-1]

    def twins(self, widths: tuple[int, int, int], mixed: bool = True) -> tuple[Twin, ...]:
        """A kernel twin for each subset of the sizes that vector accesses need aligned (those of `aligned`
        with a width over 1), fewest unaligned first: an operand keeps its vectors wherever its own rows
        allow, so the 35 columns of an x . W^T leave A's and B's loads (rows K long) 128-bit wide.
        mixed=False: only the two ends (every size aligned; else every access element-wise)."""
        dims = [(d, w) for d, w in self.aligned(widths) if w > 1]
        names = [d for d, _ in dims]
        if not mixed and len(dims) > 1:
            ok = " && ".join(f"{d} % {w} == 0" for d, w in dims)
            return Twin("", (), ok), Twin("_unaligned", tuple(names), f"!({ok})")
        out = []
        for n in range(len(dims) + 1):
            for bad in combinations(names, n):
                suffix = "" if not bad else "_unaligned" if n == len(dims) else "_unaligned_" + "".join(bad).lower()
                when = " && ".join(f"{d} % {w} {'!=' if d in bad else '=='} 0" for d, w in dims)
                out.append(Twin(suffix, bad, when))
        return tuple(out)

    def twin(self, widths: tuple[int, int, int], sizes, mixed: bool = True) -> Twin:
        """The twin that `sizes` launch."""
        twins = self.twins(widths, mixed)
        bad = tuple(d for d, w in self.aligned(widths) if w > 1 and sizes[d] % w)
        return next((t for t in twins if t.unaligned == bad), twins[-1])

    def product(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A as M x K and B as K x N (views of the stored arrays, transposed where stored so)."""
        return (a.T if self.a_t else a), (b.T if self.b_t else b)

    def describe(self) -> str:
        """The layout in words, for recipes and file headers."""
        a = "A stored K x M (transposed), lda = M" if self.a_t else "A stored M x K, lda = K"
        b = "B stored N x K (transposed), ldb = K" if self.b_t else "B stored K x N, ldb = N"
        return f"layout {self.layout}: {a}; {b}; C M x N, ldc = N (all row-major)"


def chunk_widths(itemsize: int) -> tuple[int, int, int]:
    """Elements of A, B and C (as their stored rows run) in 16 bytes: rows start 16-byte aligned where the
    stored rows' lengths are multiples of these (8 halves, 4 fp32 values of tf32 data)."""
    return (16 // itemsize,) * 3
