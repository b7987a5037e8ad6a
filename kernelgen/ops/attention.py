"""Scaled dot-product attention: O = softmax(Q Kᵀ · scale [+ causal mask]) V per (batch, head), in float32
(CUDA cores) or float16 / bfloat16 (tensor cores, fp32 accumulation).

>>> from kernelgen.ops import get_op
>>> op = get_op("attention")
>>> p = op.problem({"batch": 2, "heads": 3, "seq": 37, "head_dim": 64, "causal": 1})
>>> str(p)
'batch=2,heads=3,seq=37,head_dim=64,causal=1'
>>> plan = op.plan(op.kernel(op.default_schedule()), p)
>>> plan.launches[0].grid, plan.launches[0].block
((6, 1, 1), (16, 8, 1))

Q is (batch, heads, seq_q, head_dim), K and V (batch, heads, seq_k, head_dim), O like Q; `seq` sets
seq_q and seq_k at once. Each is read or written through its (batch, head, seq) strides, run-time
arguments of every kernel (head_dim contiguous), so one kernel serves any layout; the problem's
`layout` word names them (ops/attention_layout.py): bhsd (the default: each contiguous), bshd (each
(batch, seq, heads, head_dim)) or packed (Q, K, V the thirds of one (batch, seq, 3 * d_model) QKV
projection, O (batch, seq, heads, head_dim)). scale = 1/sqrt(head_dim) (a float argument of the
kernels: the plan and the launcher pass it). `causal=1` masks key j from query i where j > i (the
top-left diagonal, as torch's `is_causal`), so every query sees at least key 0.

Loops: b, h (fused: bh, one per blockIdx.x in the float32 flash kernel, blockIdx.y in the tensor-core
one, blockIdx.z unfused), i over queries, j over keys, d over head_dim.
- `annotate("algo", "unfused")`: three kernels (the seed notes' attention): S = Q Kᵀ · scale into a
  workspace (masked entries -inf), a warp per row of S turning it into P = softmax(S) in place,
  O = P V; tiles of 16 x 16 through shared memory.
- `annotate("algo", "flash")`: one kernel, FlashAttention's online softmax. `split("i", BQ, RQ)`: a
  block owns BQ queries (i.0 -> blockIdx.y: with the pairs on x, which blocks start first, every pair's
  longest causal block starts before any pair's next one), RQ rows per thread (i.1 -> threadIdx.y);
  `split("j", BK, RK)`: K and V in tiles of BK keys (j.0, the serial loop), RK keys of a tile per
  thread (j.1 -> threadIdx.x, the keys tx, tx + BK/RK, ...); `split("d", DMAX)`: the Q, K and V tiles
  are DMAX wide (head_dim <= DMAX, zero-padded). A thread keeps its rows' running max and sum and its
  RQ x (DMAX/(BK/RK)) slice of O in registers; each tile's probabilities go through shared memory to
  the P·V product. Tiles past the causal diagonal are skipped, and the q-tiles run heaviest first.
  `double_buffer(K|V, n)` with `annotate("copy", "cp_async")` keeps n-1 K/V tiles in flight.
Rows start 16-byte aligned when head_dim and every stride are multiples of 4: the plan takes the
float4 kernel then, its `_unaligned` twin (element-wise global accesses) otherwise.
- `annotate("algo", "flash_mma")`, float16 / bfloat16 only: FlashAttention-2 on tensor cores (sm_80+).
  `split("i", BQ, WQ)`: BQ queries a block, WQ rows a warp (i.1 -> warp, BQ/WQ warps);
  `split("j", BK)` with `tensorize("j.1", "mma.m16n8k16")`: K/V tiles of BK keys, S = Q Kᵀ and O += P V
  by mma.sync on fragments; `split("d", DMAX)` as above. Q's fragments are loaded once (ldmatrix) and
  stay in registers; the softmax runs on S's fp32 fragments and P goes to the P·V product from the same
  registers, rounded to 16 bits. K/V tiles are XOR-swizzled in shared memory (conflict-free ldmatrix,
  .trans for V), `double_buffer`/`copy` as above. Rows start 16-byte aligned when head_dim and every
  stride are multiples of 8 (cp.async and the 16-byte loads need it; the `_unaligned` twin otherwise).
  Its knobs beyond the tiles (issue 15): `annotate("kv_pipeline", "split")` puts K and V in cp.async
  groups of their own (V(j) lands during S(j), K(j+1) during P V(j): FlashAttention-2's order, two
  barriers a tile, from 1 stage); `cache_read("Q", "shared")` reads Q's fragments from shared memory at
  every tile instead of holding them in registers; `cache_write("O", "shared")` stores O through the Q
  tile in 16-byte row chunks; `annotate("rescale", "lazy")` rescales O only where a weight would pass
  2^8 (FlashAttention-4); `annotate("min_blocks", n)` promises n blocks an SM to __launch_bounds__.
  Masks run only on tiles that cross seq_k or the diagonal, exp is one FFMA and ex2.approx, and a warp
  skips the tiles wholly past its rows' diagonal.
  fp32 data (dtype tf32x3, opt-in here; kernelgen.torch.attention's default for float32 tensors on sm_80+, as torch's
  own fp32 SDPA kernel multiplies so): the same kernel at twice the width, each Q, K, P and V value split into a TF32
  high part and its remainder and each product lo*hi + hi*lo + hi*hi by mma.sync m16n8k8 (about fp32's accuracy);
  P V takes each k8 group's keys in the order 0, 2, 4, 6, 1, 3, 5, 7 so that P stays in S's registers, and S's and
  P V's products are summed apart from the tensor cores' truncating sums. O is stored from the fragments;
  `annotate("tf32_split", "fma" | "mixed")` moves the split's arithmetic from the integer ALU to the FMA pipes.
- `annotate("algo", "flash_wgmma")`, float16 / bfloat16 on sm_90a: the Hopper form (FlashAttention-3's,
  ops/attention_hopper.py). `split("i", BQ, 64)` with `bind("i.1", "warpgroup")`: BQ/64 consumer
  warpgroups of 64 query rows (1 to 3) and a producer warpgroup whose one thread brings Q once and K and V
  tile by tile by TMA (4-D tensor maps over (head_dim, seq, heads, batch): any strides that are multiples
  of 8, rows past seq and columns past head_dim arriving as zeros), 128-byte swizzled panels of 64 columns,
  `double_buffer(K|V, n)` stages each with a full and an empty barrier; `split("j", BK)` with
  `tensorize("j.1", "wgmma.m64nNk16")`: S = Q Kᵀ by wgmma m64nBKk16 from shared memory and O += P V by
  wgmma m64nDMAXk16 with P in registers (S's accumulators rounded: the same fragments as mma.sync's).
  `annotate("pingpong", True)`: the consumers issue their MMAs in turns (named barriers), one's softmax
  under another's MMAs; `annotate("overlap", True)`: tile j's softmax runs while tile j-1's P V does
  (O rescaled after it). head_dim and the strides must be multiples of 8 (schedule_for takes flash_mma
  otherwise); no emulator support (its instructions need the GPU), so it is proven by GPU tests.

>>> str(op.problem({"batch": 2, "heads": 3, "seq": 37, "head_dim": 64}, layout="packed"))
'batch=2,heads=3,seq=37,head_dim=64,layout=packed'
>>> p16 = op.problem({"batch": 8, "heads": 16, "seq": 2048, "head_dim": 64}, dtype="bf16")
>>> op.kernel(op.schedule_for(p16), types=p16.types).name
'attention_bf16_sm90_aflashmma_bq128_wq32_bk64_d64_st2_ccpasync_esmem'
"""
from __future__ import annotations

import math

import numpy as np

from ..dtypes import Types
from ..errors import UsageError, check
from ..schedule import Schedule, ScheduleReader, schedule
from ..target import Target, default_target
from .base import INT_MAX, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, Shorthand, \
    Workspace, cdiv, pow2
from . import attention_hopper as hopper
from . import attention_mma as mma
from .attention_hopper import HALF, WG_ROWS, WGMMA
from .attention_mma import INTRINSIC, LAZY_LOG2, MMA_TYPES
from .attention_layout import LAYOUTS, Strides, logical, store, stored_shapes
from .attention_layout import strides as layout_strides
from .gemm import units
from .io import torch_tensor
from .knobs import Prim

ALGOS = ("unfused", "flash", "flash_mma", "flash_wgmma")
FLASH = ("algo", ("flash", "flash_mma", "flash_wgmma"))   # the knobs of every fused kernel apply with this
CP_ASYNC = ("algo", ("flash", "flash_mma"))  # the fused kernels whose K/V copies are threads' (not TMA's)
FMA = ("algo", ("flash",))                  # the float32 kernel's thread tiles
MMA = ("algo", ("flash_mma",))              # the tensor-core kernel's warp tiles
HOPPER = ("algo", ("flash_wgmma",))         # the wgmma kernel's (ops/attention_hopper.py)
X3_STEP = dict(algo="flash_mma", bq=64, wq=16, bk=32, dmax=64, stages=2, copy="cp_async", qreg=False)
HOPPER_STEP = dict(algo="flash_wgmma", bq=192, bk=128, dmax=64, stages=2, overlap=False, pingpong=True, order="queries",
                   persistent=True)
MAX_GRID = 65535                        # gridDim.y and gridDim.z: flash_mma's and unfused's batch*heads, the
                                        # fp32 flash kernel's query blocks (gridDim.x, its pairs, holds INT_MAX)
MAX_HEAD_DIM = 128
UNFUSED_TILE = 16                       # the unfused kernels' tiles: 16 x 16 threads
SOFTMAX_ROWS = 8                        # the unfused softmax: a warp per row, 8 rows a block
LOG2E = 1.4426950408889634
DMAXES = (32, 64, 128)          # tile widths (the dmax knob): the largest head_dim a kernel takes


BUFS = ("Q", "K", "V", "O")
# Each tensor's (batch, head, seq) strides in elements, run-time arguments after `heads`: batch and head
# strides 64-bit (a batch of a long sequence passes 2^31 elements), row strides int (the copies' `ld`).
# K and V share one row stride, kv_ss: the K/V tile copies then share their row offsets (a stride each cost
# the fp32 kernel at DMAX 128 and the sm_80 tensor-core kernel 30-40 bytes of spills), and every layout
# stores K and V alike (a packed projection, a KV cache, two tensors of one shape).
STRIDE_ARGS = {"Q": ("q_sb", "q_sh", "q_ss"), "K": ("k_sb", "k_sh", "kv_ss"), "V": ("v_sb", "v_sh", "kv_ss"),
               "O": ("o_sb", "o_sh", "o_ss")}
STRIDE_TYPES = ("long long", "long long", "int")


def _stride_args(bufs: str) -> tuple[tuple[str, str], ...]:
    """(name, C type) of the stride arguments of tensors `bufs`, each name once."""
    return tuple(dict((n, t) for b in bufs for n, t in zip(STRIDE_ARGS[b], STRIDE_TYPES)).items())


FUSED_ARGS = ("Q", "K", "V", "O", "seq_q", "seq_k", "head_dim", "causal", "scale", "heads") + \
    tuple(n for n, _ in _stride_args("QKVO"))
SCORES_ARGS = ("Q", "K", "S", "seq_q", "seq_k", "head_dim", "causal", "scale", "heads") + \
    tuple(n for n, _ in _stride_args("QK"))
PV_ARGS = ("S", "V", "O", "seq_q", "seq_k", "head_dim", "heads") + tuple(n for n, _ in _stride_args("VO"))
_params = lambda bufs: ", ".join(f"{t} {n}" for n, t in _stride_args(bufs))
STRIDE_PARAMS = dict(stride_params=_params("QKVO"), stride_args=", ".join(n for n, _ in _stride_args("QKVO")),
                     qk_stride_params=_params("QK"), vo_stride_params=_params("VO"))   # the kernels' parameter lists


def pair_limit(algo: str) -> tuple[int, str]:
    """The most (batch, head) pairs kernel `algo` takes, and the grid dimension that holds them: the fp32 flash
    kernel's gridDim.x (2^31 - 1; its query blocks are y, so blocks start pair-fastest), flash_mma's gridDim.y
    and the unfused kernels' gridDim.z (65535)."""
    return {"flash": (INT_MAX, "gridDim.x"), "flash_mma": (MAX_GRID, "gridDim.y"),
            "flash_wgmma": (MAX_GRID, "gridDim.y")}.get(algo, (MAX_GRID, "gridDim.z"))


def widths_for(d: int) -> list[int]:
    """The tile widths that hold head_dim d, narrowest first."""
    return [w for w in DMAXES if d <= w]
QUIET_CAUSAL = Shorthand("causal", ("causal",), quiet=0)   # non-causal problems print without it


class Attention(Op):
    name = "attention"
    summary = ("O[b,h] = softmax(Q[b,h] K[b,h]ᵀ / sqrt(head_dim), causal mask optional) V[b,h], float32 (CUDA "
               "cores; or tensor cores in 3xTF32: tf32x3) or float16/bfloat16 (tensor cores, fp32 accumulation), (batch, "
               "heads, seq, head_dim) through run-time strides (layout bhsd, bshd or packed)")
    dims = (Dim("batch", 8, 1), Dim("heads", 16, 3),
            Dim("seq_q", 2048, 37, maximum=MAX_GRID * UNFUSED_TILE,
                why=f"gridDim.y holds {MAX_GRID} tiles of {UNFUSED_TILE} queries (the unfused kernels; the float32 "
                    f"flash kernel's blocks are {UNFUSED_TILE} queries or more)"),
            Dim("seq_k", 2048, 37, maximum=INT_MAX - 256, why="int key indexes run up to a tile (256) past seq_k"),
            Dim("head_dim", 64, 64, maximum=MAX_HEAD_DIM,
                why=f"a row of Q, K and V is one shared-memory tile of at most {MAX_HEAD_DIM} elements"),
            Dim("causal", 0, 1, minimum=0, maximum=1, why="causal is 0 (off) or 1 (on)"))
    shorthands = (Shorthand("seq", ("seq_q", "seq_k")), QUIET_CAUSAL)
    loops = ("b", "h", "i", "j", "d")
    inputs = ("Q", "K", "V")
    outputs = ("O",)
    dtypes = ("float32",) + MMA_TYPES
    knobs = (
        Knob("algo", "flash", ALGOS, "unfused (S = Q Kᵀ, softmax, P V: three kernels and a workspace) | flash "
             "(one kernel, online softmax over K/V tiles; float32) | flash_mma (flash on tensor cores, mma.sync; "
             "float16, bfloat16, tf32x3) | flash_wgmma (Hopper: wgmma, TMA, a producer warpgroup; float16, bfloat16, sm_90a)",
             "a", Prim("annotate", "algo", absent="flash", always=True)),
        Knob("bq", 64, (16, 32, 64, 128, 192), "queries per block (i.0; flash_wgmma: 64 a consumer warpgroup)", "bq",
             Prim("split", "i", args="BQ, RQ"), when=FLASH),
        Knob("rq", 8, (1, 2, 4, 8), "query rows per thread (i.2); BQ/RQ threads along y", "rq",
             Prim("split", "i", args="BQ, RQ"), when=FMA),
        Knob("wq", 16, (16, 32), "query rows per warp (i.1 -> warp, whole m16 tiles); BQ/WQ warps", "wq",
             Prim("split", "i", args="BQ, WQ"), when=MMA),
        Knob("bk", 64, (16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192), "keys per K/V tile (j.0 steps; "
             "flash and flash_mma take powers of two, flash_wgmma any multiple of 16: wgmma's n)", "bk",
             Prim("split", "j", args="BK, RK"), when=FLASH),
        Knob("rk", 4, (1, 2, 4, 8), "keys of a tile per thread (j.2, BK/RK apart); BK/RK threads along x", "rk",
             Prim("split", "j", args="BK, RK"), when=FMA),
        Knob("dmax", 64, DMAXES, "width of the Q, K and V tiles: the largest head_dim the kernel takes", "d",
             Prim("split", "d", args="DMAX"), when=FLASH),
        Knob("stages", 2, (1, 2, 3), "K/V tiles in shared memory (> 1: the next ones load during this one)", "st",
             Prim("double_buffer", ("K", "V"), absent=1, always=True), when=FLASH, unused=1),
        Knob("copy", "cp_async", ("sync", "cp_async"), "global->shared copy of K/V through registers, or cp.async", "c",
             Prim("annotate", "copy", absent="sync", always=True), when=CP_ASYNC, unused="sync"),
        Knob("pipe", "joint", ("joint", "split"), "cp.async groups: a tile's K and V in one (one barrier a tile), or "
             "each in its own, V(j) landing during S(j) and K(j+1) during P V(j) (FlashAttention-2's order: two "
             "barriers a tile, 1 stage suffices)", "kv", Prim("annotate", "kv_pipeline", absent="joint"), when=MMA,
             unused="joint"),
        Knob("qreg", True, (False, True), "Q's fragments held in registers through the loop, or read from shared "
             "memory (ldmatrix) at every K/V tile: 4*dmax/16*wq/16 registers fewer", "qr",
             Prim("cache_read", "Q", absent=True, values=((True, "register"), (False, "shared"))), when=MMA,
             unused=True),
        Knob("epilogue", "direct", ("direct", "smem"), "O stored from the accumulator fragments, or staged through "
             "the Q tile in shared memory and stored in 16-byte row chunks", "e",
             Prim("cache_write", "O", absent="direct", values=(("smem", "shared"),)), when=MMA, unused="direct"),
        Knob("rescale", "always", ("always", "lazy"), f"O and the running sum rescaled at every tile where a row's "
             f"max grows, or only where a weight would pass 2^{LAZY_LOG2:g} (FlashAttention-4's conditional rescaling: "
             "a warp-uniform branch skips O's multiplies in most tiles)", "rs", Prim("annotate", "rescale",
             absent="always"), when=MMA, unused="always"),
        Knob("min_blocks", 0, (0, 1, 2, 3, 4), "blocks per SM promised to __launch_bounds__ (caps the registers at "
             "65536 / (threads * min_blocks)); 0: no promise", "mb", Prim("annotate", "min_blocks", absent=0),
             when=MMA, unused=0),
        Knob("split", "alu", ("alu", "fma", "mixed"), "tf32x3: how values are split into TF32 parts: by integer "
             "add and mask (the ALU pipe), by Veltkamp's floating-point split (the FMA pipes), or K's by the FMA pipes "
             "and the others' by the ALU (the two pipes shared)", "sp", Prim("annotate", "tf32_split", absent="alu"),
             when=MMA, unused="alu"),
        Knob("overlap", True, (False, True), "flash_wgmma: tile j's softmax runs while tile j-1's P V does "
             "(FlashAttention-3's intra-warpgroup pipelining: S(j) and P V(j-1) issued together, O rescaled after), "
             "or each tile's S, softmax and P V in turn", "ov", Prim("annotate", "overlap", absent=False), when=HOPPER,
             unused=False),
        Knob("order", "pairs", ("pairs", "queries"), "the order blocks start in: pair-fastest (every pair's longest "
             "query block first) or each pair's query blocks in a row, longest first (the blocks in flight then share "
             "few pairs' K and V, which stay in L2)", "bo", Prim("annotate", "block_order", absent="pairs"),
             when=("algo", ("flash_mma", "flash_wgmma")), unused="pairs"),
        Knob("persistent", False, (False, True), "flash_wgmma: one block an SM walks the (query block, pair) tiles "
             "in rounds, forwards and backwards in turn (which balances a causal grid's longest-first tiles), its K/V "
             "stages and barrier phases running on, so the next tile's Q and K/V load under this one's last P V and "
             "store", "ps", Prim("annotate", "persistent", absent=False), when=HOPPER, unused=False),
        Knob("pingpong", True, (False, True), "flash_wgmma with 2-3 consumer warpgroups: they issue their MMAs in "
             "turns (named barriers), so that one's softmax runs under the next one's MMAs (FlashAttention-3's "
             "inter-warpgroup scheduling)", "pp", Prim("annotate", "pingpong", absent=False), when=HOPPER, unused=False),
    )
    structure_help = ("fuse(b, h); flash: bind(bh, blockIdx.x), bind(i.0, blockIdx.y), bind(i.1, threadIdx.y), "
                      "bind(j.1, threadIdx.x); flash_mma: bind(bh, blockIdx.y), split(i, BQ, WQ), bind(i.0, "
                      f"blockIdx.x), bind(i.1, warp), split(j, BK), tensorize(j.1, {INTRINSIC}); flash_wgmma: as "
                      f"flash_mma with split(i, BQ, {WG_ROWS}), bind(i.1, warpgroup), tensorize(j.1, {WGMMA}); unfused: "
                      "bind(bh, blockIdx.z), no splits")

    # -- problems ----------------------------------------------------------------------------------
    def check_layout(self, layout: str | None) -> str | None:
        """The memory layout `layout` names (any case): None for bhsd (the default, which prints as nothing),
        else "bshd" or "packed"; another word is a UsageError naming them."""
        if layout is None:
            return None
        value = layout.lower() if isinstance(layout, str) else layout
        if value not in LAYOUTS:
            raise UsageError(f"attention: layout {layout!r} is not one of {', '.join(LAYOUTS)} (bhsd: each of Q, K, V, "
                             "O contiguous (batch, heads, seq, head_dim); bshd: (batch, seq, heads, head_dim); packed: Q, "
                             "K, V the thirds of one (batch, seq, 3, heads, head_dim) projection, O bshd)")
        return None if value == "bhsd" else value

    def kernel(self, sched: Schedule, target: Target | None = None, types: Types | None = None,
               layout: str | None = None) -> Kernel:
        """The kernel of `sched`: the layout is checked and plays no part (strides are run-time arguments)."""
        self.check_layout(layout)
        return super().kernel(sched, target, types)

    def check_problem(self, problem: Problem) -> None:
        bh = problem["batch"] * problem["heads"]
        algo = "flash_mma" if problem.dtype("Q").name in MMA_TYPES else "flash"   # the kernel of each type with most pairs
                                                                            # (flash_wgmma's as flash_mma's)
        most, axis = pair_limit(algo)
        if bh > most:
            raise UsageError(f"attention: batch*heads = {problem['batch']}*{problem['heads']} = {bh} exceeds "
                             f"{most} (the {problem.dtype('Q').name} {algo} kernel's {axis} holds one (batch, head) "
                             f"pair each); use at most {most}")
        if problem.layout == "packed" and problem["seq_q"] != problem["seq_k"]:
            raise UsageError(f"attention: layout packed holds Q, K and V in one projection, so seq_q = seq_k; got "
                             f"seq_q={problem['seq_q']}, seq_k={problem['seq_k']} (use bhsd or bshd)")
        seq = max(st.seq for st in self.strides(problem).values())
        most = INT_MAX // units(problem.dtype("Q")) if problem.dtype("Q").name in MMA_TYPES else INT_MAX
        if seq > most:
            raise UsageError(f"attention: a row stride of {seq} elements exceeds {most} (the kernels' row strides "
                             f"are int{', counted in halves' if most < INT_MAX else ''}); use fewer heads or a smaller "
                             "head_dim")

    @staticmethod
    def strides(problem: Problem) -> dict[str, Strides]:
        """The (batch, head, seq) strides in elements of Q, K, V and O (ops/attention_layout.py)."""
        return layout_strides(problem.layout, *(problem[n] for n in ("batch", "heads", "seq_q", "seq_k", "head_dim")))

    def test_problems(self) -> tuple[dict, ...]:
        # seq 1; seq 37 causal; d 64 with seq_q != seq_k, neither a tile multiple; d 24 (the unaligned twin);
        # seq 97 causal: past one 64-key tile, so a block's diagonal tile is not also its last (seq_k's edge);
        # seq_k 300: 5 tiles of 64 keys (19 of 16), more than any pipeline's stages, so every ring of K/V stages
        # wraps; d 20: rows not 16-byte aligned (the tensor-core kernel's unaligned twin, its element-wise
        # copies of K/V tiles over several rounds of rows)
        return ({"batch": 1, "heads": 3, "seq": 37, "head_dim": 64, "causal": 1},
                {"batch": 1, "heads": 1, "seq": 1, "head_dim": 64, "causal": 0},
                {"batch": 3, "heads": 1, "seq_q": 70, "seq_k": 45, "head_dim": 64, "causal": 1},
                {"batch": 1, "heads": 2, "seq_q": 19, "seq_k": 83, "head_dim": 24, "causal": 0},
                {"batch": 1, "heads": 1, "seq": 97, "head_dim": 64, "causal": 1},
                {"batch": 1, "heads": 1, "seq_q": 17, "seq_k": 300, "head_dim": 64, "causal": 0},
                {"batch": 1, "heads": 2, "seq_q": 33, "seq_k": 70, "head_dim": 20, "causal": 1})

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        s = schedule(self.name).fuse("b", "h")
        if k["algo"] == "unfused":
            return self.put(s.bind("bh", "blockIdx.z"), k, "algo")
        if k["algo"] in ("flash_mma", "flash_wgmma"):
            hopper_ = k["algo"] == "flash_wgmma"
            rows, unit, instr = (WG_ROWS, "warpgroup", WGMMA) if hopper_ else (k["wq"], "warp", INTRINSIC)
            s = (s.bind("bh", "blockIdx.y").split("i", k["bq"], rows).bind("i.0", "blockIdx.x").bind("i.1", unit)
                 .split("j", k["bk"]).split("d", k["dmax"]).tensorize("j.1", instr))
            if hopper_:
                return self.put(s, k, "stages", "algo", "overlap", "pingpong", "order", "persistent")
            return self.put(s, k, "stages", "copy", "algo", "pipe", "qreg", "epilogue", "rescale", "min_blocks", "order",
                            "split")
        s = (s.bind("bh", "blockIdx.x").split("i", k["bq"], k["rq"]).bind("i.0", "blockIdx.y")
             .bind("i.1", "threadIdx.y").split("j", k["bk"], k["rk"]).bind("j.1", "threadIdx.x")
             .split("d", k["dmax"]))
        return self.put(s, k, "stages", "copy", "algo")

    def read_knobs(self, r: ScheduleReader) -> dict:
        algo = self.take(r, "algo")
        check(r.fuse(("b", "h")), "fuse", "b", "missing", limit="attention runs one (batch, head) per block row: "
              "fuse(b, h) first")
        if algo == "unfused":
            r.expect("bind", "bh", "blockIdx.z")
            return dict(algo=algo)
        if algo in ("flash_mma", "flash_wgmma"):
            hopper_ = algo == "flash_wgmma"
            r.expect("bind", "bh", "blockIdx.y")
            bq, wq = r.split("i", 2, (128, WG_ROWS) if hopper_ else (64, 16))
            (bk,) = r.split("j", 1, (64,))
            (dmax,) = r.split("d", 1, (64,))
            for loop, axis in (("i.0", "blockIdx.x"), ("i.1", "warpgroup" if hopper_ else "warp")):
                r.expect("bind", loop, axis)
            r.expect("tensorize", "j.1", WGMMA if hopper_ else INTRINSIC)
            if not hopper_:
                return dict(algo=algo, bq=bq, wq=wq, bk=bk, dmax=dmax)
            check(wq == WG_ROWS, "split", "i", (bq, wq), allowed=f"split(i, BQ, {WG_ROWS})",
                  limit=f"a consumer warpgroup owns wgmma's {WG_ROWS} query rows")
            return dict(algo=algo, bq=bq, bk=bk, dmax=dmax)
        bq, rq = r.split("i", 2, (64, 8))
        bk, rk = r.split("j", 2, (64, 4))
        (dmax,) = r.split("d", 1, (64,))
        for loop, axis in (("bh", "blockIdx.x"), ("i.0", "blockIdx.y")):   # the grid (pairs, query blocks)
            got = r.read("bind", loop, axis)
            check(got == axis, "bind", loop, got, allowed=axis, limit="the float32 flash kernel's grid is (pairs, "
                  "query blocks): blocks start x fastest, so every pair's longest causal block starts before any "
                  "pair's next one")
        for loop, axis in (("i.1", "threadIdx.y"), ("j.1", "threadIdx.x")):
            r.expect("bind", loop, axis)
        return dict(algo=algo, bq=bq, rq=rq, bk=bk, rk=rk, dmax=dmax)

    def name_knobs(self, k: dict) -> dict:
        """The knobs the variant uses: those whose `when` applies (the float32 kernels' names as before the
        tensor-core step), less those at the value a missing step means where the builder leaves the step
        out (the name, like the schedule, says only what differs: the tensor-core kernels' names from
        before kv_pipeline, cache_read(Q), cache_write(O) and min_blocks came)."""
        def quiet(knob, v) -> bool:
            st = knob.step
            return st is not None and st.generic and not st.always and v == st.absent and type(v) is type(st.absent)
        return {n: v for n, v in k.items() if self.knob(n).applies(k) and not quiet(self.knob(n), v)}

    # -- legality ----------------------------------------------------------------------------------
    def check_knobs(self, k: dict, target: Target) -> None:
        if k["algo"] == "unfused":
            return
        if k["algo"] == "flash_wgmma":     # TMA brings K and V: no copy knobs
            return hopper.check_knobs(k, target)
        if k["algo"] == "flash_mma":
            mma.check_knobs(k, target)
        else:
            self._check_fma(k, target)
        if k["copy"] == "cp_async":
            target.require("cp_async", "annotate", "copy", "cp_async")
            check(k["stages"] >= 2 or k["pipe"] == "split", "double_buffer", "K", k["stages"], limit="cp.async keeps stages-1 tiles in "
                  "flight: 2 or 3 stages", allowed="2, 3 (1 with annotate(kv_pipeline, split))")
        else:
            check(k["stages"] <= 2, "double_buffer", "K", k["stages"], limit="copies through registers hold one tile "
                  "ahead", allowed="1, 2 (3 with copy cp_async)")

    def _check_fma(self, k: dict, target: Target) -> None:
        for loop, b, r in (("i", k["bq"], k["rq"]), ("j", k["bk"], k["rk"])):
            check(b % r == 0, "split", loop, (b, r), limit=f"the per-thread factor {r} divides the tile {b}")
        tx, ty = k["bk"] // k["rk"], k["bq"] // k["rq"]
        check(pow2(tx) and tx <= 32, "split", "j", (k["bk"], k["rk"]), limit=f"BK/RK = {tx} threads share a row: "
              "a power of two up to 32 (the row's max and sum are warp shuffles)")
        check(k["dmax"] % tx == 0, "split", "d", k["dmax"], limit=f"the {tx} threads of a row split DMAX evenly")
        threads = tx * ty
        check(threads % 32 == 0 and threads <= target.max_threads, "split", "i", (k["bq"], k["rq"]),
              limit=f"{ty} x {tx} = {threads} threads: whole warps, at most {target.max_threads}")

    # -- lowering ----------------------------------------------------------------------------------
    def template(self, knobs: dict) -> str:
        return {"flash": "attention_flash.cu.j2", "flash_mma": "attention_mma.cu.j2",
                "flash_wgmma": "attention_wgmma.cu.j2"}.get(knobs["algo"], "attention_unfused.cu.j2")

    @staticmethod
    def smem_layout(k: dict) -> dict:
        """The flash kernel's shared-memory layout in floats: K rows padded by 4 (a warp's float4 reads of 16
        neighbouring rows land in different banks), V rows unpadded (a row is read along d); Q and P rows
        padded by 4 where that parts the two rows a warp reads (its two threadIdx.y, RQ rows apart): not at
        RQ = 8, where 8 rows of 4 words of padding are 32 words, the same banks again, and the padding only
        cost the shared memory that kept 128-query tiles of head_dim 128 out of a block (235520 bytes: with
        it dropped they ran 12-16% faster than 64-query tiles, 2026-11-25, bench_results/2026-11-25-s15/
        attention_probe_unpadded.md). K and V `stages` times."""
        pad = 0 if 4 * k["rq"] % 32 == 0 else 4
        ldq, ldk = k["dmax"] + pad, k["dmax"] + 4
        ldv, ldp = k["dmax"], k["bk"] + pad
        q, kk, v = k["bq"] * ldq, k["stages"] * k["bk"] * ldk, k["stages"] * k["bk"] * ldv
        return dict(ldq=ldq, ldk=ldk, ldv=ldv, ldp=ldp, q_off=0, k_off=q, v_off=q + kk, p_off=q + kk + v,
                    floats=q + kk + v + k["bq"] * ldp)

    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        p, smem, regs = self._params(k, types, target)
        return dict(p, **STRIDE_PARAMS), smem, regs

    def _params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        if k["algo"] == "flash_wgmma":
            return hopper.params(k, types, target, LOG2E)
        if k["algo"] == "flash_mma":
            return mma.params(k, types, target, LOG2E, tuple(n for n, _ in _stride_args("QKVO")))
        check(types.input.name == "float32", "annotate", "algo", k["algo"], limit=f"algo {k['algo']} runs in float32; "
              f"{types.input.name} runs on tensor cores", allowed="flash_mma")
        if k["algo"] == "unfused":
            return dict(tile=UNFUSED_TILE, softmax_rows=SOFTMAX_ROWS), 0, 40
        tx, ty = k["bk"] // k["rk"], k["bq"] // k["rq"]
        rd = k["dmax"] // tx
        lay = self.smem_layout(k)
        threads = tx * ty
        vecs = lambda rows: rows * k["dmax"] // 4          # float4 vectors of a tile
        p = dict(k, tx=tx, ty=ty, rd=rd, threads=threads, rd_vec=4 if rd % 4 == 0 else 1, log2e=LOG2E,
                 d_unroll=0 if k["dmax"] <= 32 else 4,     # ptxas spilled dmax 32 unrolled by 4, and dmax 64 fully
                 q_iters=cdiv(vecs(k["bq"]), threads), q_vecs=vecs(k["bq"]),
                 kv_iters=cdiv(vecs(k["bk"]), threads), kv_vecs=vecs(k["bk"]), per_row=k["dmax"] // 4, **lay)
        regs = 40 + k["rq"] * (rd + k["rk"] + 2) + 4 * k["rk"] + (8 * p["kv_iters"] if k["copy"] == "sync" and k["stages"] > 1 else 0)
        return p, 4 * lay["floats"], regs

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        k = dict(kernel.knobs)
        b, h, sq, sk, d, causal = (problem[n] for n in ("batch", "heads", "seq_q", "seq_k", "head_dim", "causal"))
        bh = b * h
        st = self.strides(problem)
        scalars = tuple(Scalar(n, "int", v) for n, v in (("seq_q", sq), ("seq_k", sk), ("head_dim", d),
                                                          ("causal", causal))) + (Scalar("scale", "float", 1 / math.sqrt(d)),)
        values = {n: v for b in BUFS for n, v in zip(STRIDE_ARGS[b], (st[b].batch, st[b].head, st[b].seq))}
        scalars += (Scalar("heads", "int", problem["heads"]),) + tuple(Scalar(n, t, values[n])
                                                                       for n, t in _stride_args("QKVO"))
        vec = self._vec(k, kernel.types or self.types())     # elements of a 16-byte access
        # the _unaligned twin's element-wise accesses take any strides
        aligned = self.rows_aligned(problem, vec)
        align = tuple((buf, 16 if aligned else 16 // vec) for buf in BUFS)
        most, axis = pair_limit(k["algo"])
        check(bh <= most, "bind", "bh", f"batch*heads={bh}", limit=f"the {k['algo']} kernels' {axis} holds {most} "
              f"(batch, head) pairs" + ("" if k["algo"] == "flash" else f"; algo flash (float32) takes {INT_MAX}"))
        if k["algo"] == "unfused":
            t = UNFUSED_TILE
            launches = (
                Launch(kernel.name + "_scores", (cdiv(sk, t), cdiv(sq, t), bh), (t, t, 1), SCORES_ARGS),
                Launch(kernel.name + "_softmax", (cdiv(bh * sq, SOFTMAX_ROWS), 1, 1), (32, SOFTMAX_ROWS, 1),
                       ("S", "rows", "seq_k")),
                Launch(kernel.name + "_pv", (cdiv(d, t), cdiv(sq, t), bh), (t, t, 1), PV_ARGS))
            return Plan(kernel, problem, launches, (Workspace("S", "float32", bh * sq * sk),),
                        scalars + (Scalar("rows", "long long", bh * sq),), align)
        check(d <= k["dmax"], "split", "d", f"head_dim={d}", limit=f"head_dim <= DMAX = {k['dmax']} (the tiles' width)")
        p = dict(kernel.params)
        block = (p["tx"], p["ty"], 1) if k["algo"] == "flash" else (p["threads"], 1, 1)
        # the fp32 kernel's grid is (pairs, query blocks), launch order pair-fastest; the tensor-core kernel's
        # (query blocks, pairs), which lib/attention.j2's block_rows walks pair-fastest; seq_q's 1048560 rows
        # are at most 65535 blocks of 16 or more
        blocks = cdiv(sq, k["bq"])
        grid = (bh, blocks, 1) if k["algo"] == "flash" else (blocks, bh, 1)
        if k["algo"] == "flash_wgmma":
            check(aligned, "annotate", "algo", "flash_wgmma", limit=f"TMA reads rows that start 16-byte aligned: "
                  f"head_dim ({d}) and every stride must be multiples of 8 elements", allowed="flash_mma (any strides)")
            maps = hopper.tensor_maps(k, problem, st)
            if k["persistent"]:    # one block an SM, at most one a tile
                grid = (min(blocks * bh, (target or default_target()).sms), 1, 1)
            launch = Launch(kernel.name, grid, block, (*(m.name for m in maps), *FUSED_ARGS[3:], "pairs"),
                            kernel.static_smem)
            return Plan(kernel, problem, (launch,), (), scalars + (Scalar("pairs", "int", bh),), align, maps)
        launch = Launch(kernel.name + ("" if aligned else "_unaligned"), grid, block, FUSED_ARGS, kernel.static_smem)
        return Plan(kernel, problem, (launch,), (), scalars, align)

    @classmethod
    def rows_aligned(cls, problem: Problem, vec: int) -> bool:
        """Whether every row of Q, K, V and O starts 16-byte aligned (float4, cp.async, 16-byte loads, TMA): head_dim
        and every stride multiples of `vec`, the elements of a 16-byte access."""
        return problem["head_dim"] % vec == 0 and all(x.aligned(vec) for x in cls.strides(problem).values())

    @staticmethod
    def _vec(k: dict, types: Types) -> int:
        """Elements of one 16-byte global access: 4 floats (flash; flash_mma's tf32x3 data), or 8 halves (flash_mma,
        flash_wgmma); rows start 16-byte aligned where head_dim is a multiple of it."""
        return 4 if k["algo"] == "flash" else 16 // types.input.itemsize

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k = dict(kernel.knobs)
        sizes = tuple(d.name for d in self.dims)
        lets = [("scale", "float", "1.0 / sqrt(1.0 * head_dim)")]
        exprs = {}
        for buf, seq in (("Q", "seq_q"), ("K", "seq_k"), ("V", "seq_k"), ("O", "seq_q")):   # layout bhsd
            exprs.update(zip(STRIDE_ARGS[buf], (f"kg_ll(heads) * {seq} * head_dim", f"kg_ll({seq}) * head_dim", "head_dim")))
        lets += [(n, t, exprs[n]) for n, t in _stride_args("QKVO")]
        most, axis = pair_limit(k["algo"])   # batch * heads in 64 bits: two ints' product passes 2^31
        requires = [(f"kg_ll(batch) * heads <= {most}", f"{axis} holds {most} (batch, head) pairs")]
        vec = self._vec(k, kernel.types or self.types())
        align = tuple((b, n, when) for n, when in ((16, f"head_dim % {vec} == 0"), (16 // vec, f"head_dim % {vec} != 0"))
                      for b in ("Q", "K", "V", "O"))
        common = dict(arch=kernel.arch, sizes=sizes, buffers=self.recipe_buffers(kernel), alignment=align,
                      note="the launcher takes Q, K, V and O contiguous (batch, heads, seq, head_dim) (layout bhsd); "
                           "the kernels take any (batch, head, seq) strides as the arguments named *_sb, *_sh, *_ss")
        if k["algo"] == "unfused":
            t = UNFUSED_TILE
            lets += [("bh", "int", "batch * heads"), ("rows", "long long", "kg_ll(bh) * seq_q")]
            steps = (Step(kernel.name + "_scores", (f"kg_cdiv(seq_k, {t})", f"kg_cdiv(seq_q, {t})", "bh"), (t, t, 1),
                          SCORES_ARGS),
                     Step(kernel.name + "_softmax", (f"kg_cdiv(rows, {SOFTMAX_ROWS})", "1", "1"), (32, SOFTMAX_ROWS, 1),
                          ("S", "rows", "seq_k")),
                     Step(kernel.name + "_pv", (f"kg_cdiv(head_dim, {t})", f"kg_cdiv(seq_q, {t})", "bh"), (t, t, 1),
                          PV_ARGS))
            return Recipe(steps=steps, lets=tuple(lets), requires=tuple(requires),
                          workspaces=(("S", "float", "rows * seq_k", None),), **common)
        p = dict(kernel.params)
        requires.append((f"head_dim <= {k['dmax']}", f"head_dim <= DMAX = {k['dmax']} (the tiles' width)"))
        blocks = f"kg_cdiv(seq_q, {k['bq']})"
        grid = ("batch * heads", blocks, "1") if k["algo"] == "flash" else (blocks, "batch * heads", "1")   # as plan's
        block = (p["tx"], p["ty"], 1) if k["algo"] == "flash" else (p["threads"], 1, 1)
        if k["algo"] == "flash_wgmma":
            requires.append((f"head_dim % {vec} == 0", "TMA reads rows that start 16-byte aligned: head_dim a multiple "
                             f"of {vec}"))
            maps = hopper.recipe_maps(k, (kernel.types or self.types()).input.name, STRIDE_ARGS)
            if k["persistent"]:    # as plan's: one block an SM, at most one a tile
                grid = (f"kg_min({blocks} * batch * heads, sms)", "1", "1")
            lets.append(("pairs", "int", "batch * heads"))
            step = Step(kernel.name, grid, block, (*(m.name for m in maps), *FUSED_ARGS[3:], "pairs"), kernel.static_smem)
            return Recipe(steps=(step,), lets=tuple(lets), requires=tuple(requires), tensor_maps=maps,
                          **dict(common, alignment=tuple((b, 16, "") for b in BUFS)))
        steps = tuple(Step(kernel.name + sfx, grid, block, FUSED_ARGS, kernel.static_smem, when=when)
                      for sfx, when in (("", f"head_dim % {vec} == 0"), ("_unaligned", f"head_dim % {vec} != 0")))
        return Recipe(steps=steps, lets=tuple(lets), requires=tuple(requires), **common)

    # -- numbers -----------------------------------------------------------------------------------
    @staticmethod
    def logical_shapes(problem: Problem) -> dict[str, tuple[int, int, int, int]]:
        """Each tensor as (batch, heads, seq, head_dim), whatever its layout."""
        b, h, sq, sk, d = (problem[n] for n in ("batch", "heads", "seq_q", "seq_k", "head_dim"))
        return {"Q": (b, h, sq, d), "K": (b, h, sk, d), "V": (b, h, sk, d), "O": (b, h, sq, d)}

    def _stored(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return stored_shapes(problem.layout, *(problem[n] for n in ("batch", "heads", "seq_q", "seq_k", "head_dim")))

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        """The buffers: (batch, heads, seq, head_dim) in layout bhsd, (batch, seq, heads, head_dim) in bshd,
        in packed each of Q, K, V its span of the projection (ops/attention_layout.py)."""
        return {n: s for n, s in self._stored(problem).items() if n != "O"}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"O": self._stored(problem)["O"]}

    def views(self, buffers: dict, problem: Problem, xp=np) -> dict:
        """The (batch, heads, seq, head_dim) views of the buffers given (NumPy or CuPy), through their strides."""
        st, shapes = self.strides(problem), self.logical_shapes(problem)
        return {n: logical(a, st[n], shapes[n], xp) for n, a in buffers.items()}

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        # Q scaled by 3 spreads the scores (std ~3) so the max subtraction and the rescaling matter;
        # an offset on V keeps O away from 0 (the relative error stays meaningful).
        # Stored in the problem's type (16-bit inputs rounded once here: the reference reads the same values).
        # Drawn as (batch, heads, seq, head_dim) in every layout (a layout's problem gets the bhsd problem's
        # values), then stored as the layout has them.
        shapes, d = self.logical_shapes(problem), problem.dtype("Q")
        q = rng.standard_normal(shapes["Q"]) * 3.0
        k = rng.standard_normal(shapes["K"])
        v = rng.standard_normal(shapes["V"]) + 0.5
        return store({n: d.encode(a.astype(np.float32)) for n, a in (("Q", q), ("K", k), ("V", v))}, problem.layout, np)

    device_reference = True     # validate on a GPU computes the float64 reference there (xp=cupy)

    def reference(self, inputs, problem, xp=np):
        """float64 softmax(Q Kᵀ / sqrt(d), masked) V, one batch at a time (S is seq_q x seq_k per head)."""
        sq, sk, d = problem["seq_q"], problem["seq_k"], problem["head_dim"]
        mask = xp.triu(xp.ones((sq, sk), dtype=bool), 1) if problem["causal"] else None
        dt = problem.dtype("Q")
        views = self.views({n: inputs[n] for n in ("Q", "K", "V")}, problem, xp)
        out = []
        for b in range(problem["batch"]):
            q, k, v = (dt.decode(views[n][b], xp) for n in ("Q", "K", "V"))
            s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            if mask is not None:
                s = xp.where(mask, -xp.inf, s)
            e = xp.exp(s - s.max(axis=-1, keepdims=True))
            out.append((e / e.sum(axis=-1, keepdims=True)) @ v)
        o = xp.stack(out)                         # (batch, heads, seq_q, head_dim)
        return {"O": o if problem.layout is None else xp.ascontiguousarray(o.transpose(0, 2, 1, 3))}

    rel_tolerance = 1e-5

    def tolerance(self, problem: Problem) -> float:
        """float32 and tf32x3 (fp32 data): 1e-5. 16-bit: 3 u (u the type's unit roundoff, 2^-11 for fp16 and 2^-8 for bf16: 1.5e-3
        and 1.2e-2). The reference reads the same rounded inputs and S, the softmax and O accumulate in
        fp32, so what is left is P rounded to 16 bits before P·V (<= u on each weight, averaging down
        over the keys) and O rounded once on its store (<= u each, ~u/sqrt(3) rms): 0.44 u measured on
        the emulator for both types. 3 u leaves room for the unlucky draw; a missed mask or rescale
        costs whole rows (errors of 1e-1 and more)."""
        d = problem.dtype("Q")
        return self.rel_tolerance if d.storage == "float32" else 3 * d.unit_roundoff

    def math(self, problem: Problem) -> str:
        return problem.dtype("Q").math

    def bytes_moved(self, problem: Problem) -> int:
        """Q, K, V read and O written once, whatever their layout (the packed layout's spans overlap)."""
        return problem.dtype("Q").itemsize * sum(int(np.prod(s)) for s in self.logical_shapes(problem).values())

    def flops(self, problem: Problem) -> int:
        """4 * b * h * seq_q * seq_k * d (two products), halved (about) under the causal mask."""
        b, h, sq, sk, d = (problem[n] for n in ("batch", "heads", "seq_q", "seq_k", "head_dim"))
        pairs = sum(min(i + 1, sk) for i in range(sq)) if problem["causal"] else sq * sk
        return 4 * b * h * pairs * d

    def vendor(self, dev_inputs, problem):
        """torch's scaled_dot_product_attention: float32 restricted to its math backend (the unfused
        products and softmax that the issue's fp32 target is measured against), tf32x3 to its efficient backend
        (the kernel torch runs for fp32 by default: CUTLASS's memory-efficient attention, whose products are
        3xTF32 on sm_80+, the same arithmetic), float16 / bfloat16 to its flash backend (FlashAttention-2, the
        half-precision target); bench/attention_probe.py times the other backends too."""
        try:
            import torch
            from torch.nn.attention import SDPBackend, sdpa_kernel
        except ImportError:
            return None
        torch.backends.cuda.matmul.allow_tf32 = False
        d = problem.dtype("Q")
        st, shapes = self.strides(problem), self.logical_shapes(problem)
        q, k, v = (torch_tensor(dev_inputs[n], d).reshape(-1).as_strided(
            shapes[n], (st[n].batch, st[n].head, st[n].seq, 1)) for n in ("Q", "K", "V"))
        causal = bool(problem["causal"])
        backend, label = {"float32": (SDPBackend.MATH, "torch SDPA (math backend, TF32 off)"),
                          # torch's own fp32 kernel: CUTLASS's memory-efficient attention, 3xTF32 on sm_80+
                          "tf32x3": (SDPBackend.EFFICIENT_ATTENTION, "torch SDPA (efficient backend: fp32 in 3xTF32)")
                          }.get(d.name, (SDPBackend.FLASH_ATTENTION, f"torch SDPA (flash backend, {d.short})"))

        def run():
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return label, run

    # -- ladder and search -------------------------------------------------------------------------
    def ladder(self) -> tuple[LadderStep, ...]:
        flash = dict(algo="flash", bq=64, rq=8, bk=64, rk=4, dmax=64, stages=1, copy="sync")
        steps = [
            ("unfused: S = Q Kᵀ, softmax, O = P V (three kernels, S in a workspace)", dict(algo="unfused"),
             "the seed's attention: torch's math path, written as kernels"),
            ("fused, online softmax over K/V tiles in shared memory (FlashAttention, fp32)", flash,
             "the seed's softmax notes' online softmax, taken to attention"),
            ("K/V tiles double-buffered with cp.async", dict(flash, stages=2, copy="cp_async"), ""),
        ]
        fp32 = tuple(LadderStep(t, self.schedule_from_knobs(**k), n, dtypes=("float32",)) for t, k, n in steps)
        mma = dict(algo="flash_mma", bq=64, wq=16, bk=64, dmax=64, stages=2, copy="cp_async")
        fa2 = dict(mma, bq=128, wq=32, pipe="joint", epilogue="smem")
        return fp32 + (LadderStep("fp16/bf16 on tensor cores: mma.sync, Q in registers, P from S's registers "
                                  "(FlashAttention-2)", self.schedule_from_knobs(**mma),
                                  "the issue's target: >= 0.8x torch's SDPA flash kernel", dtypes=HALF),
                       LadderStep("FlashAttention-2's tiles: 128 queries, warps of 32 rows (each K/V fragment feeds "
                                  "two m16 tiles), O stored through shared memory",
                                  self.schedule_from_knobs(**fa2), "issue 15: the inner loop, not the instruction; K and "
                                  "V in one cp.async group (FlashAttention-2's groups of their own, pipe split, measured "
                                  "4-7% slower on the H100)", dtypes=HALF),
                       LadderStep("fp32 data on the same tensor cores in 3xTF32: each value split in a TF32 high and "
                                  "low part, three m16n8k8 products (about fp32's accuracy: torch's own fp32 SDPA "
                                  "arithmetic), P V in the key order that leaves P in S's registers",
                                  self.schedule_from_knobs(**X3_STEP), "issue 15: the fp32 block's attention, against "
                                  "torch's fp32 SDPA (CUTLASS's memory-efficient kernel, also 3xTF32)",
                                  dtypes=("tf32x3",)),
                       LadderStep("Hopper (FlashAttention-3's form): wgmma for both products (P from registers), Q, K "
                                  "and V by TMA from a producer warpgroup, 3 consumer warpgroups of 64 rows taking "
                                  "turns at the tensor cores, each pair's query blocks in a row (K and V stay in L2), "
                                  "a block an SM walking the tiles", self.schedule_from_knobs(**HOPPER_STEP),
                                  "issue 15's top step: 1.48x SDPA flash at b8 h16 s2048 d64 on the H100",
                                  arch="sm_90a", dtypes=HALF))

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """float16 / bfloat16: the Hopper kernel where the target has wgmma and it applies (hopper.pick), else the
        mma.sync kernel (attention_mma.pick). float32: the fused kernel: tiles as wide as the
        smallest DMAX that holds head_dim; 16 threads per row (so each owns DMAX/16 columns of O). BQ = 128
        queries where 128-query tiles still give every SM two blocks at d <= 64 (each K/V tile then serves twice
        the rows: 2.09x torch's math path against 1.96x at 64, b8 h16 s2048 d64 on the H100) or one at d 128
        (its shared memory holds one block: 12-16% faster than 64-query tiles, b1 h32 s2048 causal and b8 h16
        s2048, bench_results/2026-11-25-s15/attention_probe_unpadded.md), with 8 rows a thread (O's registers
        8 x DMAX/16); else 64 with RQ as many as keep O's registers at <= 32 (8 rows at d <= 64, 4 at 128),
        and 32 where 64-query tiles cannot give every SM a block; then the first of (cp.async, 2 stages) and
        (through registers, 1 stage), each with 64- then 32-key tiles and BQ, BQ/2 then BQ/4 queries, whose
        shared memory the target holds."""
        target = target or default_target()
        if problem.dtype("Q").name in HALF:
            return self.schedule_from_knobs(**(hopper.pick(problem, self.rows_aligned(problem, 8), target) or
                                               mma.pick(problem, target, widths_for(problem["head_dim"])[0])))
        if problem.dtype("Q").name == "tf32x3":
            return self.schedule_from_knobs(**mma.pick(problem, target, widths_for(problem["head_dim"])[0]))
        d, sq = problem["head_dim"], problem["seq_q"]
        dmax = widths_for(d)[0]
        bh = problem["batch"] * problem["heads"]
        bq = 64 if bh * cdiv(sq, 64) >= target.sms else 32
        if bh * cdiv(sq, 128) >= (2 if dmax <= 64 else 1) * target.sms:
            bq = 128
        pipes = ((2, "cp_async"),) * target.has("cp_async") + ((1, "sync"),)
        for stages, copy in pipes:
            for bq_, (bk, rk) in ((bq, (64, 4)), (bq, (32, 2)), (bq // 2, (32, 2)), (max(bq // 4, 16), (32, 2))):
                rq = 8 if bq_ == 128 else min(max(1, 32 // (dmax // 16)), 8, bq_ // 4)
                k = dict(algo="flash", bq=bq_, rq=rq, bk=bk, rk=rk, dmax=dmax, stages=stages, copy=copy)
                if 4 * self.smem_layout(k)["floats"] <= target.max_smem:
                    return self.schedule_from_knobs(**k)
        return self.schedule_from_knobs(**k)      # the smallest: kernel() names the limit it breaks

    def space(self, problem: Problem, target: Target):
        d = problem["head_dim"]
        name = problem.dtype("Q").name
        if name in MMA_TYPES:
            if name in HALF and target.has("wgmma"):
                yield from hopper.space(problem)
            yield from mma.space(problem, widths_for(d))
            return
        for dmax in widths_for(d):
            for bq, rq in ((32, 4), (64, 4), (64, 8), (128, 8)):
                for bk, rk in ((32, 2), (64, 4), (64, 2), (128, 8)):
                    for stages, copy in ((1, "sync"), (2, "cp_async"), (3, "cp_async")):
                        yield dict(algo="flash", bq=bq, rq=rq, bk=bk, rk=rk, dmax=dmax, stages=stages, copy=copy)
