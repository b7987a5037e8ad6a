"""Split-K through a workspace, shared by the GEMMs (sgemm, gemm on mma.sync and on wgmma): K cut into
`split_k` slices of whole K tiles, one per blockIdx.z; each slice stores its fp32 partial tile in its own
slab of a workspace, and a second kernel sums the slabs in slice order (the same bits every run) and
converts to C's type, with a fused epilogue applied once, after the sum.

>>> from kernelgen.ops.splitk import kchunk, slices, slab
>>> kchunk(1000, 3, 32), slices(1000, 3, 32)          # K = 1000 in slices of 11 tiles of 32
(352, 3)
>>> slices(40, 8, 16)                                 # K too short for 8 slices: 3 hold some of K
3
>>> slab(3, 5)                                        # 15 floats, rounded to whole 16-byte vectors
16

The kernels' side is templates/lib/splitk.j2 (the slice a block computes, its slab, the reduction
kernel); this module gives the plans' and recipes' side: the workspace, the reduction launch, and the
same numbers for the cost models.
"""
from __future__ import annotations

from .base import Launch, Scalar, Workspace, cdiv

MAX_SPLIT_K = 256        # slices of K (gridDim.z)
REDUCE_THREADS, REDUCE_BLOCKS = 256, 4096   # the reduction: 256 threads a block, grid-stride over C
REDUCE_VEC = 4           # elements of C a reduction thread sums per step (slabs are 16-byte aligned)
WORKSPACE = "partials"   # the workspace's name in plans and recipes


def kchunk(K: int, split_k: int, bk: int) -> int:
    """K per slice: whole tiles of bk, as the kernels compute it."""
    return cdiv(K, split_k * bk) * bk


def slices(K: int, split_k: int, bk: int) -> int:
    """The slices that hold some of K (the rest return at once, and the reduction skips them)."""
    return cdiv(K, kchunk(K, split_k, bk))


def slab(M: int, N: int) -> int:
    """Floats between two K slices' partial tiles in the split-K workspace: M x N rounded up to whole
    16-byte vectors, so every slab starts as aligned as the workspace."""
    return cdiv(M * N, 4) * 4


def workspace(split_k: int, M: int, N: int) -> Workspace:
    return Workspace(WORKSPACE, "float32", split_k * slab(M, N))


def _reduce_args(ep_inputs: tuple[str, ...] | None) -> tuple[str, ...]:
    """The reduction kernel's arguments: with a fused epilogue, N and its buffers too."""
    return (WORKSPACE, "C", "MN", "K") + (("N",) + ep_inputs if ep_inputs is not None else ())


def reduce_launch(symbol: str, M: int, N: int, ep_inputs: tuple[str, ...] | None) -> tuple[Launch, Scalar]:
    """The reduction kernel's launch (partials -> C; `ep_inputs`: the fused epilogue's buffers, None
    without one) and the scalar MN it takes."""
    launch = Launch(symbol, (min(cdiv(M * N, REDUCE_THREADS * REDUCE_VEC), REDUCE_BLOCKS), 1, 1),
                    (REDUCE_THREADS, 1, 1), _reduce_args(ep_inputs), role="reduce")
    return launch, Scalar("MN", "long long", M * N)


def reduce_recipe(symbol: str, split_k: int, ep_inputs: tuple[str, ...] | None):
    """reduce_launch as a recipe: (the step, the let MN, the workspace entry)."""
    from ..recipe import Step
    step = Step(symbol, (f"kg_min(kg_cdiv(MN, {REDUCE_THREADS * REDUCE_VEC}), {REDUCE_BLOCKS})", "1", "1"),
                (REDUCE_THREADS, 1, 1), _reduce_args(ep_inputs))
    return step, ("MN", "long long", "kg_ll(M) * N"), (WORKSPACE, "float", f"{split_k} * kg_cdiv(MN, 4) * 4", None)
