"""Stream-K's host side (the kernels' side is templates/lib/streamk.j2), for sgemm's tiles: where the tiles
outnumber the `slots` blocks the SMs hold at once and fill their last wave only in part, the last partial wave's
tiles and one whole wave before them (the region) are cut along K into `slots` equal runs, one a block; the
other tiles take a block each. The plans' numbers and the launch recipes' C expressions are both here, so the two
cannot drift (tests evaluate the recipe against the plan).

>>> from kernelgen.ops.streamk import stream_k_region, stream_k_blocks
>>> stream_k_region(768, 132), stream_k_blocks(768, 132)     # 2048 x 12288 in 256x128 tiles on 132 SMs
(240, 660)
>>> stream_k_region(264, 132), stream_k_blocks(264, 132)     # whole waves: nothing to even out
(0, 264)
"""
from __future__ import annotations

from .base import Workspace

STREAM_K_ARGS = ("sk_part", "sk_flags", "slots")     # the stream-K kernel's trailing arguments


def stream_k_region(tiles: int, slots: int) -> int:
    """The tiles the stream-K blocks share (0: none). A run of at least a tile's K leaves a tile two blocks at most."""
    return tiles % slots + slots if tiles > slots and tiles % slots else 0


def stream_k_blocks(tiles: int, slots: int) -> int:
    """The launch's blocks: `slots` for the region and one for each other tile (tiles - tiles % slots in all);
    a block a tile where there is no region."""
    return tiles - tiles % slots if tiles > slots else tiles


def stream_k_workspaces(slots: int, bm: int, bn: int) -> tuple[Workspace, Workspace]:
    """Two partial tiles for each boundary between consecutive blocks of the region, and a flag each, zeroed before
    every launch: the second block to count itself in at a flag sums the tile."""
    return (Workspace("sk_part", "float32", 2 * slots * bm * bn), Workspace("sk_flags", "int32", slots, fill=0))


def stream_k_recipe(per_sm: int, bm: int, bn: int):
    """The recipe's side of the three above, as C expressions of M, N and `sms`: (lets, the launch's grid, the
    workspaces as recipe entries)."""
    lets = (("slots", "int", f"{per_sm} * sms"), ("tiles", "int", f"kg_cdiv(M, {bm}) * kg_cdiv(N, {bn})"))
    grid = ("tiles - (tiles > slots) * (tiles % slots)", "1", "1")      # stream_k_blocks
    part, flags = stream_k_workspaces(1, bm, bn)
    workspaces = ((part.name, "float", f"{part.count} * slots", part.fill), (flags.name, "int", "slots", flags.fill))
    return lets, grid, workspaces
