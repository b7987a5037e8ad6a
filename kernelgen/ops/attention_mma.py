"""The tensor-core attention kernel (algo flash_mma: FlashAttention-2's form on mma.sync, templates/attention_mma.cu.j2)
on 16-bit data or on fp32 data in 3xTF32 (tf32x3): its legality, shared-memory layout, register estimate, template
parameters, heuristic pick and tuning space. ops/attention.py's Attention calls these as it calls
ops/attention_hopper.py's for the wgmma kernel."""
from __future__ import annotations

import itertools

from ..dtypes import Types
from ..errors import check
from ..target import Target
from .attention_hopper import HALF
from .base import cdiv, pow2
from .gemm import smem_tile, units

INTRINSIC = "mma.m16n8k16"
MMA_TYPES = HALF + ("tf32x3",)          # 16-bit data, or fp32 data in 3xTF32 (m16n8k8, opt-in)
PV_COLS = 4                             # tf32x3's P V: O's n8 column blocks summed apart at a time (lib/attention_mma.j2's
                                        # part): 8 spilled at d128 with 64-key tiles, 4 kept 168 registers at 32-key ones
SPLIT_FN = ("kg_tf32", "kg_tf32_fma")    # tf32x3's split on the ALU or the FMA pipes (common/mma_tf32.cuh), by knob split
S_CHUNK = 4                             # tf32x3's S: k8 steps whose products are summed apart (lib/attention_mma.j2's t)
LAZY_LOG2 = 8.0                         # rescale lazy: the largest weight 2^x a stale row max may leave (fp16 holds 256)


def check_knobs(k: dict, target: Target) -> None:
    """Warps of WQ rows (whole m16 tiles), K/V tiles of whole k16 steps, at most max_threads."""
    target.require("mma_m16n8k16_f16", "tensorize", "j.1", INTRINSIC)
    target.require("ldmatrix", "tensorize", "j.1", INTRINSIC)
    check(k["bq"] % k["wq"] == 0, "split", "i", (k["bq"], k["wq"]),
          limit=f"the warp's rows {k['wq']} divide the block's {k['bq']}")
    check(pow2(k["bk"]), "split", "j", k["bk"], allowed="16, 32, 64, 128",
          limit="the mma.sync kernel's K/V tiles are a power of two keys (its copies' rounds of rows)")
    threads = 32 * (k["bq"] // k["wq"])
    check(threads <= target.max_threads, "split", "i", (k["bq"], k["wq"]),
          limit=f"{threads} threads: at most {target.max_threads}")
    check(k["pipe"] == "joint" or k["copy"] == "cp_async", "annotate", "kv_pipeline", k["pipe"],
          limit="K and V in groups of their own are cp.async groups: annotate(copy, cp_async)", allowed="joint")


def check_min_blocks(k: dict, target: Target, smem: int, regs: int) -> None:
    """annotate(min_blocks, n): n blocks of the kernel's threads, `smem` bytes and ~`regs` registers each fit an SM."""
    threads, n = 32 * (k["bq"] // k["wq"]), k["min_blocks"]
    cap = target.regs_per_sm // (threads * n)
    check(regs <= cap, "annotate", "min_blocks", n, limit=f"{n} blocks of {threads} threads leave {cap} registers "
          f"a thread; the tiles need ~{regs} (fewer rows a warp, or cache_read(Q, shared))")
    check(n * threads <= target.max_threads_per_sm, "annotate", "min_blocks", n,
          limit=f"{n} blocks of {threads} threads; an SM holds {target.max_threads_per_sm}")
    check(n * smem <= target.smem_per_sm, "annotate", "min_blocks", n,
          limit=f"{n} blocks of {smem} bytes of shared memory; an SM holds {target.smem_per_sm}")


def layout(k: dict, ew: int = 1) -> dict:
    """The tensor-core kernel's shared memory in halves: Q's tile, then `stages` K tiles and `stages` V
    tiles, each bk x dmax elements of `ew` halves (2: fp32 data), rows XOR-swizzled in 16-byte chunks
    (lib/tc_copy.j2's tile dicts)."""
    threads = 32 * (k["bq"] // k["wq"])
    tq, tk = (smem_tile(rows, k["dmax"] * ew, 0, True, threads) for rows in (k["bq"], k["bk"]))
    q, kv = tq["rows"] * tq["ld"], tk["rows"] * tk["ld"]
    return dict(tq=tq, tk=tk, kv_stage=kv, q_off=0, k_off=q, v_off=q + k["stages"] * kv,
                halves=q + 2 * k["stages"] * kv, threads=threads)


def params(k: dict, types: Types, target: Target, log2e: float,
           stride_names: tuple[str, ...]) -> tuple[dict, int, int]:
    """The template's parameters, shared memory (bytes) and registers estimate of the kernel of knobs `k` on data
    of `types`; `stride_names`: the stride arguments of Q, K, V and O in the kernel's order (those of Q, K and V are
    passed on in halves)."""
    d = types.input
    check(d.name in MMA_TYPES, "tensorize", "j.1", INTRINSIC, limit=f"{INTRINSIC} takes float16 or bfloat16 inputs "
          f"(or fp32 data as tf32x3), not {d.name}; float32 runs algo flash", allowed=", ".join(MMA_TYPES))
    x3 = d.name == "tf32x3"
    if d.name == "bfloat16":
        target.require("mma_m16n8k16_bf16", "tensorize", "j.1", f"{INTRINSIC} on bfloat16")
    if x3:
        target.require("mma_m16n8k8_tf32", "tensorize", "j.1", "mma.m16n8k8 on tf32x3")
        check(k["epilogue"] == "direct", "cache_write", "O", "shared", allowed="no cache_write(O) (O stored from "
              "the fragments)", limit="O goes through the Q tile as 16-bit pairs; tf32x3's fp32 O is stored from "
              "its fragments")
    check(x3 or k["split"] == "alu", "annotate", "tf32_split", k["split"], allowed="alu (none)",
          limit=f"{d.name} data is not split: the knob is tf32x3's")
    ew = units(d)
    lay = layout(k, ew)
    mi, nk, nd, dk = k["wq"] // 16, k["bk"] // 8, k["dmax"] // 8, k["dmax"] * ew // 16
    tq, tk = lay["tq"], lay["tk"]
    # lib/tc_fragment.j2's hoisted ldmatrix addresses: unpadded rows, a swizzle repeating every 8 rows,
    # Q's tile read with K's and V's lane offsets (the same width)
    assert all(t["ld"] == t["cols"] and t["xor_div"] * t["xor_mod"] == 8 for t in (tq, tk)) and tq["ld"] == tk["ld"]
    regs = registers(k, x3)
    if k["min_blocks"]:
        check_min_blocks(k, target, 2 * lay["halves"], regs)
    # the body reads Q, K and V as halves: their strides scaled to halves on the way in (O's stay elements)
    unit_strides = ", ".join(n if ew == 1 or n.startswith("o_") else f"{n} * {ew}" for n in stride_names)
    p = dict(k, **lay, warps=lay["threads"] // 32, mi=mi, nk=nk, nd=nd, dk=dk, log2e=log2e, out=types.output,
             in_header=d.header, mma_fn=f"kg_mma_m16n8k16_{d.short}", o_staged=k["epilogue"] == "smem",
             lazy=LAZY_LOG2 if k["rescale"] == "lazy" else None, tf32x3=x3, ew=ew, vec=16 // d.itemsize,
             pv_cols=min(nd, PV_COLS), s_chunk=min(dk, S_CHUNK) if x3 else None,
             k_round=SPLIT_FN[k["split"] != "alu"], qpv_round=SPLIT_FN[k["split"] == "fma"],   # K's, and Q's, P's, V's
             unit_stride_args=unit_strides,
             walk=tk["row_step"] > 0 and tk["row_step"] % 8 == 0)   # lib/tc_copy.j2's walk_copy
    return p, 2 * lay["halves"], regs


def registers(k: dict, x3: bool = False) -> int:
    """Per thread: S and O fragments, Q's fragments (all of them in registers, else one k16 step's), one
    k16 step's B fragments, m and l, ~40 for addresses and what ptxas keeps in flight. ptxas takes
    more where it may (244 at d64 wq32 with Q in registers: 224 here) and spills past this (sm_90:
    wq32 bk64 d128 and wq32 bk128 d64 with Q in shared, 280 here, spill 116 and 448 bytes; wq32 bk32
    d128, 248 here, takes 238 and none).
    x3 (fp32 data in 3xTF32): twice S's, O's and Q's fragment registers (Q's held ones twice as many: k8
    steps), 2 a column block of O and 50: fitted to ptxas (sm_90) over d 32/64/128, wq 16/32, bk 32/64/128
    and Q held or not, every tile below 255 here compiled without spills (d128 wq16 bk32 with Q in shared
    memory: 242 here, 168 used) and every tile that spilled is above (d64 wq16 bk64 with Q held: 258 here,
    24 bytes)."""
    mi, nk, nd = k["wq"] // 16, k["bk"] // 8, k["dmax"] // 8
    staged = 8 * cdiv(k["bk"] * k["dmax"] * (2 if x3 else 1) // 8, 32 * (k["bq"] // k["wq"])) \
        if k["copy"] == "sync" and k["stages"] > 1 else 0
    if x3:
        return 2 * 4 * mi * (nk + nd + (k["dmax"] // 8 if k["qreg"] else 0)) + 2 * nd + 50 + staged
    dk = k["dmax"] // 16
    return 4 * mi * (nk + nd + (dk if k["qreg"] else 1)) + 2 * max(nk, nd) + 4 * mi + 40 + staged


def pick(problem, target: Target, dmax: int) -> dict:
    """The tensor-core kernel at tiles `dmax` wide (the smallest DMAX that holds head_dim); 128-query
    blocks where that gives every SM a block, so each K/V tile feeds twice the rows (FlashAttention-2's
    forward tiles), else 64 queries; then the first warp tile whose registers fit a thread (the
    estimate of registers(), which matches where ptxas starts to spill) of: 32 rows and 64-key
    tiles with Q's fragments in registers (d64: each K and V fragment serves two m16 tiles, 4 warps),
    the same with Q read from shared memory, 32 rows and 32-key tiles (d128: O alone is 128 floats a
    thread; FlashAttention-2's 128 x 32 tiles on sm_8x), 16 rows. K and V in cp.async groups of their
    own would be FlashAttention-2's order (pipe split); one group a tile (joint) measured faster on the
    H100 at every shape probed (2026-11-24, bench_results/2026-11-24-s5/attention_probe.md: d64 435 vs
    456 us, d128 861 vs 916 us, SDPA flash 467 / 790 us), 2 stages, O stored through shared memory.
    tf32x3 (fp32 data, twice the registers and shared memory a value): warps of 16 rows with Q read from shared
    memory, 64-key tiles where their registers fit (d <= 64), else 32, and O stored from its fragments; with
    min_blocks 1, since ptxas otherwise held the d128 kernel to 168 registers (three blocks of 128 threads, which
    its shared memory never allows) and spilled (807 against 629 us); 128-query blocks at d128 only (each K/V tile
    then feeds 8 warps: 629 against 703 us at the 7B layer's attention, b1 h32 s2048 d128 causal), 64 at d <= 64
    (238 against 252 us at GPT-2 small's, b8 h12 s1024 d64 causal; 2250 against 2274 at b8 h16 s2048): H200,
    2026-11-29, bench_results/2026-11-29-s21/call4_attention_probe_x3.md."""
    d, bh = problem["head_dim"], problem["batch"] * problem["heads"]
    x3 = problem.dtype("Q").name == "tf32x3"
    bq = 128 if bh * cdiv(problem["seq_q"], 128) >= target.sms and not (x3 and d <= 64) else 64
    base = dict(algo="flash_mma", bq=bq, dmax=dmax, stages=2, copy="cp_async", pipe="joint",
                epilogue="direct" if x3 else "smem")
    # tf32x3: 16 rows a warp (32 spill), Q read from shared memory, min_blocks 1 (see the docstring)
    tiles = ([dict(wq=16, bk=64, qreg=False, min_blocks=1), dict(wq=16, bk=32, qreg=False, min_blocks=1)] if x3 else
             [dict(wq=32, bk=64, qreg=True), dict(wq=32, bk=64, qreg=False), dict(wq=32, bk=32, qreg=False),
              dict(wq=16, bk=64, qreg=True), dict(wq=16, bk=32, qreg=False)])
    fits = [dict(base, **w) for w in tiles if w["wq"] <= bq // 4]
    smem = lambda k: 2 * layout(k, 2 if x3 else 1)["halves"]
    return next((k for k in fits if registers(k, x3) <= target.max_registers and
                 smem(k) <= target.max_smem), fits[-1])


def space(problem, dmaxes: list[int]):
    """The kernel's tuning points for `problem`: tile widths `dmaxes`, block and warp rows, key tiles, K/V pipelines,
    Q held or not; tf32x3 also min_blocks 0 and 1 and the split on the ALU or on both pipes; O staged through shared
    memory for 16-bit data (stored from the fragments for tf32x3, whose O is fp32)."""
    name = problem.dtype("Q").name
    pipes = (("joint", 2), ("joint", 3), ("split", 1), ("split", 2))
    x3 = {"min_blocks": (0, 1), "split": ("alu", "mixed")} if name == "tf32x3" else {}
    for dmax, (bq, wq), bk, (pipe, stages), qreg, *more in itertools.product(
            dmaxes, ((64, 16), (128, 16), (128, 32), (64, 32)), (32, 64, 128), pipes, (True, False), *x3.values()):
        yield dict(algo="flash_mma", bq=bq, wq=wq, bk=bk, dmax=dmax, stages=stages, copy="cp_async", pipe=pipe,
                   qreg=qreg, epilogue="smem" if name in HALF else "direct", **dict(zip(x3, more)))
