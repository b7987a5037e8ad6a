"""Software prefetching for the grid-stride loops of memory-bound ops (the seed notes' batch and rolling
forms, into registers or shared memory): the knobs, how a schedule says them, their legality and the
parameters of templates/lib/prefetch.j2, shared by every op that has such a loop.

>>> from kernelgen.ops import get_op
>>> op = get_op("reduce_sum")
>>> s = op.schedule(items=1, grid_stride=1, prefetch=8, prefetch_scope="shared", prefetch_mode="rolling",
...                 prefetch_pad=1)
>>> [st.to_python() for st in s.steps if st.prim in ("prefetch", "storage_align")]
['prefetch("x", 8, "shared", "rolling")', 'storage_align("x", 1)']
>>> op.kernel(s).name
'reduce_sum_f32_sm90_t512_i1_v4_sshuffle_g1_ftwopass_p8_psshared_pmrolling_pp1_plinterleaved'

A thread of a grid-stride loop visits vectors j = first, first + stride, ... < n: `prefetch(x, D,
scope, mode)` loads D of those iterations ahead. An iteration is one vector, so the loop must be one
(`items` 1) and a loop at all (`grid_stride` >= 1). "batch" loads D iterations together and then uses
them (a thread's last batch is partial: every use is guarded, so any count works); "rolling" keeps D
loads in flight with a ring refilled once per iteration. The shared forms give each thread D slots,
interleaved by default (`prefetch_slots`): slot s of every thread side by side, so a warp's copies
and reads are contiguous and conflict-free. The seed note's layout puts a thread's D slots side by
side (`annotate("prefetch_slots", "thread")`) and needs `storage_align(x, pad)` vectors of padding,
D + pad odd, to be conflict-free; on the H100 it still ran 1.6x slower than interleaved slots at full
occupancy with cp.async (bench_results/2026-11-24-s5/prefetch_shared_micro.md), padded or not. On sm_80
and later the shared slots are filled by cp.async, so the loads do not wait in registers; a 16-byte
copy past the end is issued anyway with a source size of 0 (zeros land), so no copy sits under a
predicate (a predicated cp.async can lose the coalescing of a warp's copies). At full occupancy the
slots of a long distance cost blocks per SM: `fit_distance` gives the longest that lets them fit. A
schedule whose grid stride promises blocks per SM (grid_stride g: min(g, the blocks its threads allow))
has its shared slots refused where they do not let that many fit, and the kernel states the promise in
`__launch_bounds__(threads, blocks)`, so ptxas keeps the registers within it (longer register slots
spill instead of costing a block): prefetching never takes a block per SM from such a loop.

The loops over a row (GEMV, the passes of softmax and layer norm) are the same loop with the row's
vectors for iterations and no grid stride (`check_legal(..., grid_stride=False)`): see kernelgen/ops/rows.py
and kernelgen/ops/gemv.py.
"""
from __future__ import annotations

from ..errors import ScheduleError, check
from ..schedule import Schedule, ScheduleReader
from ..target import Target
from .knobs import Knob, Prim, Range

SCOPES = ("registers", "shared")
MODES = ("batch", "rolling")
MAX_DISTANCE = 16
ON = Range(1, MAX_DISTANCE)
SLOTS = ("interleaved", "thread")
NAMES = ("prefetch", "prefetch_scope", "prefetch_mode", "prefetch_pad", "prefetch_slots")


GRID_STRIDE = "grid-stride iterations each thread loads ahead (needs items 1 and grid_stride >= 1)"


def knobs(buffers: tuple[str, ...], what: str = GRID_STRIDE) -> tuple[Knob, ...]:
    """The four knobs, carried by prefetch(b, ...) and storage_align(b, pad) on each of `buffers` alike;
    `what` says what the distance counts and what it needs (a grid-stride loop's iterations, a row's vectors)."""
    step = Prim("prefetch", buffers, args="DISTANCE, registers|shared, batch|rolling")
    return (
        Knob("prefetch", 0, Range(0, MAX_DISTANCE), f"{what}; 0 = none", "p", step, tune=(0, 4, 8)),
        Knob("prefetch_scope", "registers", SCOPES, "where prefetched vectors wait", "ps", step, when=("prefetch", ON)),
        Knob("prefetch_mode", "batch", MODES, "batch: the loads of `prefetch` iterations, then their uses; "
             "rolling: a ring refilled every iteration", "pm", step, when=("prefetch", ON)),
        Knob("prefetch_pad", 0, Range(0, 4), "padding of the shared slots: vectors after each thread's slots "
             "(slots thread; bank conflicts: prefetch + pad odd) or 128-byte lines after each slot's row of threads "
             "(interleaved: conflict-free without it)", "pp", Prim("storage_align", buffers, absent=0),
             when=("prefetch_scope", ("shared",)), tune=(0, 1)),
        Knob("prefetch_slots", "interleaved", SLOTS, "how the shared slots are laid out: interleaved (slot s of "
             "every thread side by side: a warp's copies land in contiguous bytes) or thread (each thread's slots "
             "side by side, the seed note's layout; 41% slower at full occupancy on the H100)", "pl",
             Prim("annotate", "prefetch_slots", absent="interleaved"), when=("prefetch_scope", ("shared",)),
             tune=("interleaved",)),
    )


def build(s: Schedule, k: dict, buffers: tuple[str, ...]) -> Schedule:
    """`s` with a prefetch step on each buffer (none when `prefetch` is 0)."""
    for b in buffers if k["prefetch"] else ():
        s = s.prefetch(b, k["prefetch"], k["prefetch_scope"], k["prefetch_mode"])
    return s


def read(r: ScheduleReader, buffers: tuple[str, ...]) -> dict:
    """The prefetch knobs of a schedule: one prefetch step per buffer, all alike, distance 1..16."""
    steps = [r.step("prefetch", b) for b in buffers]
    given = [s for s in steps if s is not None]
    if not given:
        return {"prefetch": 0}
    first = given[0]
    for b, s in zip(buffers, steps):
        if s is None or s.args()[1:] != first.args()[1:]:
            raise ScheduleError("prefetch", b, "missing" if s is None else s.args()[1:],
                                limit=f"every input is prefetched alike: {first.to_python()} needs its twin on "
                                      f"{', '.join(buffers)}")
    check(1 <= first.distance <= MAX_DISTANCE, "prefetch", first.buffer, first.distance,
          limit="the iterations loaded ahead, at least 1 (no prefetch: leave the step out)",
          allowed=f"1..{MAX_DISTANCE}")
    return {"prefetch": first.distance, "prefetch_scope": first.scope, "prefetch_mode": first.mode}


def name_knobs(op, k: dict) -> dict:
    """The knobs a kernel's name spells: the op's, less the prefetch knobs without prefetch (the names of
    every kernel before prefetch existed) or where they do not apply."""
    return {n: v for n, v in k.items()
            if n not in NAMES or (k["prefetch"] and op.knob(n).applies(k))}


def side_by_side(k: dict) -> bool:
    """Each thread's shared slots side by side (the seed note's layout), not interleaved across threads
    (knob dicts of a space may leave prefetch_slots out: interleaved, its default)."""
    return k.get("prefetch_slots", "interleaved") == "thread"


LINE = 128    # bytes: interleaved slot rows are padded in whole lines


def row_vectors(k: dict, threads: int, vbytes: int) -> int:
    """Vectors in one row of interleaved slots (slot s of every thread): the threads, and `pad` whole
    128-byte lines, so every row, and so every warp's copies, stays line-aligned (a 16-byte pad that
    broke it cost 5.7% at full occupancy on the H100)."""
    return threads + k["prefetch_pad"] * max(1, LINE // vbytes)


def slot_vectors(k: dict, threads: int, vbytes: int) -> int:
    """Vectors of one buffer's shared slots in a block: threads x (distance + pad) with each thread's
    slots side by side, distance rows of row_vectors with each slot's row of threads side by side."""
    d, pad = k["prefetch"], k["prefetch_pad"]
    if side_by_side(k):
        return threads * (d + pad)
    return d * row_vectors(k, threads, vbytes)


def _slots_text(k: dict, threads: int) -> str:
    d, pad = k["prefetch"], k["prefetch_pad"]
    if side_by_side(k):
        return f"({d} + {pad} pad) vectors x {threads} threads"
    return f"{d} slots x ({threads} threads + {pad} pad lines)"


def shared_bytes(k: dict, threads: int, vector_bytes: list[int]) -> int:
    """Dynamic shared memory of the slots, over every buffer."""
    if not k["prefetch"] or k["prefetch_scope"] != "shared":
        return 0
    return sum(slot_vectors(k, threads, b) * b for b in vector_bytes)


RESERVED = 1024     # shared memory the driver keeps per block (sm_80 and later)
BASE_REGISTERS = 16  # a grid-stride loop's own registers beside the slots (reduce_sum's plain loop: 15-16 on sm_90)


def resident(k: dict, target: Target, threads: int) -> int:
    """Blocks per SM a grid-stride schedule promises: grid_stride, or as many as the threads allow
    where that is fewer (0: no promise, one block per chunk or row group)."""
    g = k.get("grid_stride", 0)
    return min(g, target.max_threads_per_sm // threads) if g else 0


def min_blocks(k: dict, target: Target, threads: int) -> int:
    """The second figure of a prefetching kernel's __launch_bounds__: the blocks per SM its grid stride
    promises, so that ptxas keeps the registers (slots included) that many blocks leave a thread and the
    prefetch never costs a block per SM; 0 (not stated) for one block, no promise or no prefetch."""
    blocks = resident(k, target, threads) if k["prefetch"] else 0
    return blocks if blocks > 1 else 0


def check_legal(k: dict, target: Target, buffer: str, threads: int, vector_bytes: list[int], static: int,
                split: tuple[str, str] = ("i", "items"), grid_stride: bool = True) -> None:
    """A loop to prefetch in, one vector per iteration (`split` = (loop, knob) of the vectors an iteration
    loads), and the slots within the shared memory of a block and of the blocks a grid stride promises.
    `grid_stride`: the loop is the grid-stride loop (reduce, elementwise), absent with grid_stride 0;
    else the op always loops (over a row: GEMV, softmax, layer norm)."""
    d = k["prefetch"]
    if not d:
        return
    if grid_stride:
        check(k["grid_stride"] >= 1, "prefetch", buffer, d, limit="prefetching needs a grid-stride loop: "
              "annotate(grid_stride, 1 or more), not 0 (one block per chunk runs one iteration per thread)")
    loop, knob = split
    check(k[knob] == 1, "prefetch", buffer, d, limit=f"an iteration is one vector: split {loop} with {knob} 1, "
          f"not {k[knob]}; the distance stands in for {knob}")
    smem = shared_bytes(k, threads, vector_bytes)
    check(static + smem <= target.max_smem, "prefetch", buffer, f"{smem} bytes",
          limit=f"{_slots_text(k, threads)} x {'+'.join(map(str, vector_bytes))} "
                f"bytes of shared slots + {static} bytes > {target.max_smem} bytes of shared memory per block on "
                f"{target.arch}", allowed="a shorter distance, fewer threads or scope registers")
    blocks = resident(k, target, threads)
    per_block = static + smem + RESERVED
    if smem and blocks > 1 and per_block * blocks > target.smem_per_sm:
        fit = fit_distance(k, target, threads, vector_bytes, static, blocks)
        raise ScheduleError("prefetch", buffer, d, limit=f"grid_stride {k['grid_stride']} promises {blocks} blocks an "
                            f"SM: {blocks} x ({smem} bytes of slots + {static} + {RESERVED} reserved) > "
                            f"{target.smem_per_sm} bytes per SM on {target.arch}",
                            allowed=(f"distance <= {fit} (fit_distance)" if fit else "no shared slots") +
                            ", fewer blocks per SM or scope registers")


def fit_distance(k: dict, target: Target, threads: int, vector_bytes: list[int], static: int, blocks: int,
                 reserved: int = RESERVED, base_registers: int = BASE_REGISTERS) -> int:
    """The longest distance, at most k's, that lets `blocks` blocks share an SM; 0 where not even
    distance 1 does. Shared slots: each block holds `static` bytes, the slots and `reserved` bytes the
    driver keeps, and prefetch + pad stays odd where it was (conflict-free slots). Register slots:
    distance x the vectors' words, beside `base_registers` of the loop's own, within the registers
    `blocks` blocks leave a thread (a kernel that promises them, min_blocks(), is capped there by ptxas:
    longer register slots spill). What a user at full occupancy picks: H100, 512 threads of float4 and
    2 KB of block sums, 4 blocks: (8 + 1) x 8 KB of slots per block does not fit 57 KB, (4 + 1) x 8 KB
    does; 8 float4 registers do not fit the 32 a thread may hold, 4 do.

    >>> from kernelgen.target import target
    >>> k = dict(prefetch=8, prefetch_scope="shared", prefetch_pad=1, prefetch_slots="thread")
    >>> fit_distance(k, target("sm_90"), 512, [16], 2048, 4), fit_distance(dict(k, prefetch_pad=0), target("sm_90"), 512, [16], 2048, 4)
    (4, 6)
    >>> fit_distance(dict(k, prefetch_slots="interleaved"), target("sm_90"), 512, [16], 2048, 4)
    6
    >>> fit_distance(dict(k, prefetch_scope="registers"), target("sm_90"), 512, [16], 2048, 4)
    4
    """
    d = k["prefetch"]
    if not d:
        return d
    if k["prefetch_scope"] != "shared":
        cap = min(target.max_registers, target.regs_per_sm // (threads * blocks))
        return max(0, min(d, (cap - base_registers) // (sum(vector_bytes) // 4 or 1)))
    odd = side_by_side(k) and (d + k["prefetch_pad"]) % 2 == 1
    for dist in range(d, 0, -1):
        if odd and (dist + k["prefetch_pad"]) % 2 == 0:
            continue
        per_block = static + shared_bytes(dict(k, prefetch=dist), threads, vector_bytes) + reserved
        if per_block * blocks <= target.smem_per_sm and per_block - reserved <= target.max_smem:
            return dist
    return 0


def registers(k: dict, vec_words: int) -> int:
    """Registers the register slots hold (`vec_words` 4-byte words per iteration over all buffers)."""
    return k["prefetch"] * vec_words if k["prefetch"] and k["prefetch_scope"] == "registers" else 0


def params(k: dict, target: Target, bufs: list[dict], threads: int | None = None) -> dict:
    """Template parameters of lib/prefetch.j2's `stream`: each buf (name, vtype, src, zero, vbytes) gets
    its offset in the shared slots and its copy size; cp.async where the target has it and every
    vector is whole 4-byte words (a 2-byte vector goes through registers). `threads`: of the block
    (k["threads"] unless the op's block is larger, as the row ops' several rows); `min_blocks` is the
    kernel's __launch_bounds__ promise (min_blocks())."""
    threads = threads or k["threads"]
    if not k["prefetch"]:
        return {"prefetch": 0, "min_blocks": 0}
    slot = k["prefetch"] + (k["prefetch_pad"] if k["prefetch_scope"] == "shared" else 0)
    # thread t's slot s is vector t * lane + s * step of its buffer's slots
    offset, out = 0, []
    for b in bufs:
        lane, step = (slot, 1) if side_by_side(k) else (1, row_vectors(k, threads, b["vbytes"]))
        out.append(dict(b, offset=offset, copy_bytes=16 if b["vbytes"] == 16 else 4, lane=lane, step=step))
        offset += slot_vectors(k, threads, b["vbytes"]) * b["vbytes"]
    async_copy = target.has("cp_async") and all(b["vbytes"] % 4 == 0 for b in bufs)
    return dict(prefetch=k["prefetch"], prefetch_scope=k["prefetch_scope"], prefetch_mode=k["prefetch_mode"],
                prefetch_slot=slot, prefetch_bufs=out, prefetch_async=async_copy,
                min_blocks=min_blocks(k, target, threads))


def forms(distances: tuple[int, ...] = (4, 8)):
    """The prefetch knobs a tuning space tries: each distance in each of the four forms, shared slots
    interleaved and unpadded (a warp's copies contiguous: conflict-free, and 1.6x the bandwidth of a
    thread's slots side by side on the H100, bench_results/2026-11-24-s5/prefetch_shared_micro.md)."""
    for d in distances:
        for scope in SCOPES:
            for mode in MODES:
                yield dict(prefetch=d, prefetch_scope=scope, prefetch_mode=mode, prefetch_pad=0)


def legal(k: dict, target: Target, threads: int, vector_bytes: list[int], static: int, **how) -> bool:
    """Whether check_legal takes `k` (the spaces of ops that list their points keep only legal ones)."""
    try:
        check_legal(k, target, "x", threads, vector_bytes, static, **how)
    except ScheduleError:
        return False
    return True


def space(op, base):
    """The points of `base` (the op's default space) that prefetching can serve: no prefetch anywhere,
    prefetch only with items 1 and a grid-stride loop (the rest would be pruned as illegal), and shared
    slots unpadded where interleaved (conflict-free as they are), and with the padding that puts a
    thread's slots an odd number of vectors apart where side by side (another only adds conflicts)."""
    def useful(k):
        if not k["prefetch"]:
            return True
        if k["prefetch_scope"] != "shared":
            odd = True
        elif not side_by_side(k):
            odd = k["prefetch_pad"] == 0           # conflict-free as they are: padding only costs bytes
        else:
            odd = (k["prefetch"] + k["prefetch_pad"]) % 2 == 1
        return k["items"] == 1 and k["grid_stride"] >= 1 and odd
    return (k for k in base if useful(k))
