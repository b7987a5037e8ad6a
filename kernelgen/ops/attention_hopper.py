"""The Hopper step of attention's ladder (algo flash_wgmma, templates/attention_wgmma.cu.j2): what its knobs
must satisfy, what the template renders from, and the TMA descriptors its plan and host launcher encode.

A block holds BQ/64 consumer warpgroups of 64 query rows (wgmma's m64) and one producer warpgroup whose
thread loads Q once and K and V tile by tile through 4-D tensor maps, (head_dim, seq, heads, batch) with
the problem's strides, boxes of 64 columns (one 128-byte swizzle panel) by the tile's rows."""
from __future__ import annotations

import itertools

from ..dtypes import Types
from ..errors import check
from ..target import Target
from .base import TensorMap

WGMMA = "wgmma.m64nNk16"         # m64 a warpgroup; N the tile's keys (S = Q Kᵀ) or head_dim's tile (O += P V)
WG_ROWS = 64                     # query rows of a consumer warpgroup
MAX_CONSUMERS = 3                # 3 x 160 registers a consumer thread + 32 a producer's fill the register file
# three consumer warpgroups' speed over two's a query row computed (pick): b8 h16 s2048 d64, persistent, 317.7 against
# 336.0 us (bench_results/2026-11-25-s18/attention_wgmma_probe_persistent.md)
THREE_GAIN = 336.0 / 317.7
PANEL = 64                       # columns of a 128-byte swizzle panel (TMA's widest box with that swizzle)
MAPS = (("tmQ", "Q", "seq_q", "bq"), ("tmK", "K", "seq_k", "bk"), ("tmV", "V", "seq_k", "bk"))
HALF = ("float16", "bfloat16")            # the types wgmma multiplies here (attention.py's HALF is this)


def consumers(k: dict) -> int:
    return k["bq"] // WG_ROWS


def setmaxnreg(k: dict) -> dict:
    """Registers a producer and a consumer thread keep (setmaxnreg), where the block has more than one consumer
    warpgroup: the producer's 128 threads give theirs up so that the consumers' fill the 65536 (one consumer:
    256 threads already get 255 each, nothing to move)."""
    c = consumers(k)
    if c == 1:
        return dict(setmaxnreg=False, producer_regs=0, consumer_regs=255)
    producer = 24 if c == 2 else 32
    return dict(setmaxnreg=True, producer_regs=producer, consumer_regs=min(240, (65536 // 128 - producer) // c // 8 * 8))


def registers(k: dict) -> int:
    """Per consumer thread: S's accumulators (bk/2), O's (dmax/2), and ~40 for the row statistics, addresses
    and barrier phases; with overlap P's A fragments (bk/4) too, tile j-1's P living beside tile j's S (else
    P takes S's registers as S dies). ptxas (sm_90a): bk 128 d64 with overlap, 160 here, spilled 204 bytes
    under 3 consumer warpgroups' 160; bk 64 d128 with overlap (152) and bk 128 d64 without (136) did not."""
    return k["bk"] // 2 + k["dmax"] // 2 + (k["bk"] // 4 if k["overlap"] else 0) + 40


def smem(k: dict) -> dict:
    """Bytes of the tiles (1024-byte aligned: the swizzle's period), each as 64-column panels: Q's BQ rows,
    then `stages` K tiles and `stages` V tiles of BK rows; then the barriers (a full and an empty one for Q, and
    for K and for V a stage); 1024 to spare for aligning the start."""
    panels = k["dmax"] // PANEL
    q, kv = k["bq"] * 128 * panels, k["bk"] * 128 * panels
    return dict(panels=panels, q_bytes=q, kv_bytes=kv, total=1024 + q + 2 * k["stages"] * kv + 8 * (2 + 4 * k["stages"]))


def check_knobs(k: dict, target: Target) -> None:
    target.require("wgmma", "tensorize", "j.1", WGMMA)
    target.require("tma", "annotate", "algo", "flash_wgmma")
    check(k["bq"] % WG_ROWS == 0 and 1 <= consumers(k) <= MAX_CONSUMERS, "split", "i", (k["bq"], WG_ROWS),
          limit=f"BQ is {WG_ROWS} query rows for each of 1 to {MAX_CONSUMERS} consumer warpgroups", allowed="64, 128, 192")
    check(k["dmax"] % PANEL == 0, "split", "d", k["dmax"], allowed="64, 128",
          limit=f"Q, K and V arrive by TMA in 128-byte swizzled panels of {PANEL} columns")
    check(k["bk"] % 16 == 0, "split", "j", k["bk"], allowed="16, 32, 64, 128",
          limit="P V takes the tile's keys in k16 steps")
    check(not k["pingpong"] or consumers(k) > 1, "annotate", "pingpong", k["pingpong"], allowed="False",
          limit=f"turns are taken between consumer warpgroups: BQ {k['bq']} has one")
    regs, cap = registers(k), setmaxnreg(k)["consumer_regs"]
    check(regs <= cap, "split", "j", k["bk"], limit=f"a consumer thread holds S, O and P: ~{regs} registers with BK "
          f"{k['bk']} and DMAX {k['dmax']}, over the {cap} each of {consumers(k)} consumer warpgroup(s) gets "
          "(fewer keys a tile, or fewer warpgroups)")


def params(k: dict, types: Types, target: Target, log2e: float) -> tuple[dict, int, int]:
    d = types.input
    check(d.name in HALF, "tensorize", "j.1", WGMMA, limit=f"{WGMMA} takes float16 or bfloat16 inputs, not "
          f"{d.name}; float32 runs algo flash", allowed="float16, bfloat16")
    lay = smem(k)
    p = dict(k, **lay, **setmaxnreg(k), consumers=consumers(k), threads=128 * (consumers(k) + 1), nk=k["bk"] // 8,
             nd=k["dmax"] // 8, ab=d.short, out=types.output, in_header=d.header, log2e=log2e)
    return p, lay["total"], registers(k)


def pick(problem, aligned: bool, target: Target) -> dict | None:
    """The flash_wgmma knobs for `problem`, or None where the mma.sync kernel should run: the target has no
    wgmma, TMA cannot read the rows (not `aligned`: head_dim or a stride not a multiple of 8), or the blocks would leave SMs
    idle (the mma.sync kernel's 64-query blocks fill them). Measured on the H100 against SDPA flash
    (bench_results/2026-11-25-s18/attention_wgmma_probe_{order,two,small}.md):
    - the order blocks start in: each pair's query blocks in a row, so the blocks in flight share few pairs' K and
      V (pair-fastest, b8 h16 s2048 d128 read them from DRAM once a block, 83% of its bandwidth under ncu: 1.36x
      where this order runs 1.62x). One tile a block, pair-fastest had been faster where every pair's K and V fit
      in L2 (b1 h32 s2048 d128 causal 2.03x against 1.83x); the persistent walk below runs each pair's blocks in a
      row as fast or faster there too: that shape 2.23x against 2.16x, and not causal 1.64x against 1.57x; b8 h12
      s1024 d64 causal 1.69x against 1.65x, not causal 1.38x against 1.40x (bench_results/2026-11-25-s19/
      attention_wgmma_probe_zigzag.md, attention_wgmma_probe_order.md);
    - K/V tiles of 128 keys (64 and 96 measured slower where they fit, 160-176 too), the consumers taking
      turns (pingpong), 2 stages;
    - three consumer warpgroups of 160 registers, each tile's S, softmax and P V in turn, where S and O fit, the
      mask is off and seq_q in 192-query blocks is padded at most THREE_GAIN times as much as in 128-query ones
      (b8 h16 s2048 d64, persistent: 317.7 us against two warpgroups' 336.0, three hiding each one's softmax under
      the others' MMAs; at s1024 the last of six 192-query blocks is two thirds padding: 80.6 us against 71.4,
      attention_wgmma_probe_order.md); else two of 240 with the overlap (tile j's softmax under tile j-1's P V):
      d128, and causal grids, whose blocks differ in length and balance better in 128-query ones (b8 h12 s1024
      d64 causal 1.44x against 1.28x);
    - persistent blocks (one an SM walking the tiles, the next tile's loads under this one's last P V and store):
      d64 1.48x, d128 1.66x against 1.40x and 1.61x one tile a block. A causal grid's tiles differ in length: walked
      in rounds, block i taking every round's i-th tile, the longest-first tiles left SMs idle (d128 causal 1.50x
      against 1.58x one tile a block, attention_wgmma_probe_persistent.md); walked forwards and backwards in turn
      (each_tile in templates/attention_wgmma.cu.j2) they balance: b8 h16 s2048 causal d64 1.41x and d128 1.71x
      against 1.27x and 1.59x, b1 h32 s2048 d128 causal 2.23x against 2.02x, b8 h12 s1024 d64 causal 1.69x against
      1.41x (attention_wgmma_probe_zigzag.md)."""
    if not target.has("wgmma") or not aligned:
        return None
    dmax = PANEL * -(-problem["head_dim"] // PANEL)
    bh, seq_q = problem["batch"] * problem["heads"], problem["seq_q"]
    base = dict(algo="flash_wgmma", bk=128, dmax=dmax, stages=2, pingpong=True, persistent=True, order="queries")
    three, two = dict(base, bq=3 * WG_ROWS, overlap=False), dict(base, bq=2 * WG_ROWS, overlap=True)
    fits = registers(three) <= setmaxnreg(three)["consumer_regs"]
    padded = lambda bq: -(-seq_q // bq) * bq
    k = three if fits and not problem["causal"] and padded(three["bq"]) <= THREE_GAIN * padded(two["bq"]) else two
    if bh * -(-seq_q // k["bq"]) < target.sms:
        return None
    return k


def space(problem):
    """The tuning space's flash_wgmma points: 2 or 3 consumer warpgroups, K/V tiles of 64 to 176 keys, 2 or 3
    stages, with and without the overlap, each pair's query blocks in a row (those over the registers or shared
    memory are refused by kernel())."""
    dmax = PANEL * -(-problem["head_dim"] // PANEL)
    for bq, bk, stages, overlap in itertools.product((128, 192), (64, 96, 128, 176), (2, 3), (False, True)):
        yield dict(algo="flash_wgmma", bq=bq, bk=bk, dmax=dmax, stages=stages, overlap=overlap, pingpong=True,
                   order="queries")


def tensor_maps(k: dict, problem, strides) -> tuple[TensorMap, ...]:
    """Q, K and V as (head_dim, seq, heads, batch) tensors with their strides; boxes of 64 columns by the
    block's queries (Q) or a tile's keys (K, V)."""
    return tuple(TensorMap(name, buf, problem[seq], problem["head_dim"], k[box], PANEL, pitch=strides[buf].seq,
                           outer=((problem["heads"], strides[buf].head), (problem["batch"], strides[buf].batch)))
                 for name, buf, seq, box in MAPS)


def recipe_maps(k: dict, dtype: str, stride_args: dict) -> tuple:
    """tensor_maps for the host launcher: sizes and strides by the names of the launcher's sizes and lets
    (`stride_args`: each buffer's (batch, head, seq) stride arguments)."""
    from ..recipe import Map
    return tuple(Map(name, buf, dtype, seq, "head_dim", k[box], PANEL, pitch=stride_args[buf][2],
                     outer=(("heads", stride_args[buf][1]), ("batch", stride_args[buf][0])))
                 for name, buf, seq, box in MAPS)
