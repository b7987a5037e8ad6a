"""The schedule of the row ops (softmax, layer norm): a group of threads per row, several rows per
block, each thread loading `items` vectors of `vec` floats of its row at once.

>>> from kernelgen.ops import get_op
>>> op = get_op("layernorm")
>>> op.knobs_from_schedule(op.schedule(threads=32, rows_per_block=4))["rows_per_block"]
4

`split("i", rows_per_block)` gives i.0 (blockIdx.x) and i.1 (threadIdx.y); `split("j", items*threads*vec,
threads*vec, vec)` gives j.0 (chunks of a row), j.1 (loads in flight), j.2 (threadIdx.x), j.3 (the vector lane).

`prefetch("x", D, scope, mode)` (kernelgen/ops/prefetch.py) serves the passes that stream a row from
global memory (softmax three_pass and online, layer norm two_pass and welford): a thread's loop over
its vectors t, t + threads, ... of the row, one vector an iteration (items 1), D of them loaded ahead;
layer norm's residual row is loaded beside x's alike. The forms that hold the row (registers) or a
block's chunk of it (split) in registers have no such loop and refuse it by name.

>>> op.kernel(op.schedule(algo="welford", items=1, prefetch=4, prefetch_mode="rolling")).name
'layernorm_f32_sm90_t256_r1_i1_v4_sshuffle_awelford_p4_psregisters_pmrolling'
>>> op.kernel(op.schedule(prefetch=4))
Traceback (most recent call last):
...
kernelgen.errors.ScheduleError: prefetch(x): 4 is illegal (limit: algo registers holds the whole row in registers: no loop over the row to prefetch in; allowed: algo two_pass, welford)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dtypes import Types
from ..errors import check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import Launch, Scalar, Workspace, cdiv, pointwise_error
from . import prefetch
from .knobs import Knob, Prim, Range
from .io import element_io, vector_widths, zero_vector
from ..target import Target

REDUCTIONS = ("serial", "shared", "shuffle")
SPLIT_I = Prim("split", "i", args="rows_per_block")
SPLIT_J = Prim("split", "j", args="items*threads*vec, threads*vec, vec")
MAX_CHUNK = 32 * 1024 * 8         # columns of a row a block's threads load at once: items*threads*vec at most
# The twin kernel for cols % vec != 0: rows start anywhere in a vector, read as aligned vectors from the
# aligned address at or below their start (templates/lib/rows.j2).
ANY_SUFFIX = "_anyalign"
# The knobs softmax and layer norm share: a group of threads per row, several rows per block.
ROW_KNOBS = (
    Knob("threads", 256, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), "threads per row (j.2)", "t", SPLIT_J),
    Knob("rows_per_block", 1, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), "rows per block (i.1)", "r", SPLIT_I),
    Knob("items", 4, Range(1, 32), "vectors per thread per chunk, loaded at once (j.1)", "i", SPLIT_J,
         tune=(1, 2, 4, 8, 16)),
    Knob("vec", 4, (1, 2, 4, 8), "elements per access (j.3): float32 1|4, 16-bit types 1|2|4|8; "
         "cols % vec != 0 runs an any-alignment twin (same vectors, edges lane by lane)", "v", Prim("vectorize", "j.3", always=True)),
    Knob("reduction", "shuffle", REDUCTIONS, "how a row's threads combine", "s",
         Prim("reduction", "j", absent="shuffle", always=True)),
)

# The prefetch knobs of the row ops: x (and layer norm's residual row with it) in the passes over a row.
ROW_PREFETCH = prefetch.knobs(("x",), "vectors of its row each thread loads ahead in a pass that streams it "
                              "(needs items 1 and a streaming algo)")

BATCH_MB = (0, 8, 16, 32, 64)
# The split form's knob (softmax and layer norm): rows go in batches of this many MB of x per launch pair.
L2_BATCH = Knob("l2_batch_mb", 16, BATCH_MB, "MB of rows per stats+write launch pair (0: all rows)", "b",
                Prim("annotate", "l2_batch_mb", absent=16), when=("algo", ("split",)))


@dataclass(frozen=True)
class RowRules:
    """The constants of a row op's heuristic (`row_heuristic`), one table per op, for bench/rows_probe.py
    to calibrate. Everything else comes from the shape and the Target."""
    floats: int = 16              # floats of a row per thread in registers (threads grow to max_threads first)
    spare_registers: int = 8      # registers left free below check_register_row's cap (ptxas headroom)
    min_threads: int = 4          # threads per row at least
    block: int = 256              # threads per block when a row takes a warp or less (several rows per block)
    fill: float = 0.5             # fewer rows than fill * SMs: split the row over blocks (a block per row idles SMs),
    split_min_mb: float = 0.0625  #   if x holds this many MB (smaller: one launch beats two); H100: one row of
                                  #   32000 floats (125 KB) ran 1.4x faster split in 32 chunks than in one block
    loop_threads: int = 1024      # rows too long for registers, many rows: a block per row looping over it,
    loop_items: int = 2           #   items vectors per thread per chunk; one such block per SM ...
    l2_fit: float = float("inf")  #   ... when an SM's row each fit in l2_fit * L2, else split. On the H100 the loop
                                  #   won wherever rows filled the SMs, the re-read missing L2 or not (1024-4096 rows
                                  #   of 65536-262144: loop 1.05-1.32x torch, split 0.77-1.30x): no L2 limit
    split_threads: int = 256      # the split form: threads per block at most,
    split_floats: int = 16        #   floats per thread per chunk at most,
    split_blocks_per_sm: float = 0.5   # and chunks small enough for this many blocks per SM (few rows); H100, one
                                  #   row of 32000-262144: chunks of 1024-4096 (32-64 blocks) beat 128-wide
                                  #   ones (500+ blocks) by 1.2-1.5x, so half a block per SM, not 4
    batch_share: float | None = None   # split row batches: at most this share of L2 per stats+write launch pair;
                                  #   None: one pair over every row (H100: unbatched equalled or beat 16-64 MB batches
                                  #   on every shape probed, 1024 x 262144 by 1.39x over 16 MB)


def pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def register_row(rows: int, cols: int, vec: int, target: Target, r: RowRules) -> dict | None:
    """The row in registers: the fewest power-of-two threads per row that hold it at `r.floats` floats
    each (at least r.min_threads, at most a block), the vectors per thread that cover it; None when the
    registers a thread may use (the target's, for the block's size) cannot hold them."""
    threads = min(target.max_threads, max(r.min_threads, pow2_at_least(cdiv(cols, r.floats))))
    items = cdiv(cols, threads * vec)
    rpb = max(1, r.block // threads) if threads <= 32 else 1
    cap = min(target.max_registers, target.regs_per_sm // (threads * rpb)) - 24 - r.spare_registers
    if items * vec > cap:
        return None
    return dict(threads=threads, rows_per_block=rpb, items=items, vec=vec, algo="registers")


def split_row(rows: int, cols: int, vec: int, itemsize: int, target: Target, r: RowRules) -> dict:
    """Several blocks per row: chunks of at most split_threads x split_floats, smaller until the grid
    has split_blocks_per_sm blocks per SM; batches of rows of at most batch_share of L2."""
    want = cdiv(rows * cols, max(1, int(target.sms * r.split_blocks_per_sm)))   # columns per block
    threads = min(r.split_threads, max(32, pow2_at_least(cdiv(want, vec))))
    items = max(1, min(r.split_floats // vec, want // (threads * vec)))
    if cdiv(cols, threads * items * vec) > 65535:        # gridDim.y: longer chunks for rows of billions
        threads = r.split_threads
        items = cdiv(cols, 65535 * threads * vec)
    if r.batch_share is None:
        batch = 0
    else:
        batch = max([b for b in BATCH_MB if b and b << 20 <= r.batch_share * target.l2_bytes] or [min(b for b in BATCH_MB if b)])
    return dict(threads=threads, rows_per_block=1, items=items, vec=vec, algo="split", l2_batch_mb=batch)


def row_heuristic(rows: int, cols: int, itemsize: int, target: Target, r: RowRules, loop_algo: str) -> dict:
    """The knobs of a row op for a shape (16-byte accesses): the row in registers where it fits and there
    are rows enough to fill the GPU; else, with many rows whose per-SM share of rows fits L2, a block per
    row looping twice over it (`loop_algo`, the second read from L2); else several blocks per row."""
    vec = 16 // itemsize
    few = rows < r.fill * target.sms
    reg = register_row(rows, cols, vec, target, r)
    split = split_row(rows, cols, vec, itemsize, target, r)
    spread = few and rows * cols * itemsize >= r.split_min_mb * (1 << 20) and \
        cdiv(cols, split["threads"] * split["items"] * vec) > 1
    if reg and not spread:
        return dict(reg, reduction="shuffle")
    if not few and target.sms * cols * itemsize <= r.l2_fit * target.l2_bytes:
        return dict(threads=r.loop_threads, rows_per_block=1, items=r.loop_items, vec=vec, algo=loop_algo,
                    reduction="shuffle")
    return dict(split, reduction="shuffle")


def row_space(cols: int, itemsize: int, target: Target, loop_algo: str, streams: int = 1, static_words: int = 2):
    """The tuning space of a row op (16-byte accesses): register rows whose tile holds the row with less
    than a vector per thread to spare (power-of-two items, and the exact cover), the two-read loop
    (`loop_algo`), prefetching in place of its `items` (each form whose distance a thread's vectors of
    the row cover, its slots for `streams` rows legal beside `static_words` words a warp of reductions),
    and for long rows the split form over chunk sizes and row batches."""
    vec = 16 // itemsize
    base = dict(vec=vec, reduction="shuffle", l2_batch_mb=16)
    for threads in (4, 8, 16, 32, 64, 128, 256, 512, 1024):
        for rpb in ((1,) if threads > 32 else (1, 2, 4, 8, 16, 32, 64)):
            if not 64 <= threads * rpb <= target.max_threads:
                continue
            exact = cdiv(cols, threads * vec)
            for items in sorted({1, 2, 4, 8, 16} | ({exact} if exact <= 16 else set())):
                cap = items * threads * vec
                if cap >= cols and (cap // 2 < cols or items == exact):   # the smallest register tiles that hold the row
                    yield dict(base, threads=threads, rows_per_block=rpb, items=items, algo="registers")
                if threads * rpb >= 128 and items in (2, 4):
                    yield dict(base, threads=threads, rows_per_block=rpb, items=items, algo=loop_algo)
            if threads * rpb >= 128 and rpb == 1:
                for pf in prefetch.forms():
                    k = dict(base, threads=threads, rows_per_block=1, items=1, algo=loop_algo, **pf)
                    if pf["prefetch"] * threads * vec <= cols and prefetch.legal(
                            k, target, threads, [itemsize * vec] * streams, 4 * static_words * max(1, threads // 32),
                            split=("j", "items"), grid_stride=False):
                        yield k
    if cols >= 8192:
        for threads in (128, 256, 512):
            for items in (2, 4, 8):
                for batch in BATCH_MB:
                    yield dict(base, threads=threads, rows_per_block=1, items=items * 4 // vec or 1, algo="split",
                               l2_batch_mb=batch)


def row_wide_axes(itemsize: int, algos: tuple[str, ...]) -> dict[str, tuple]:
    """The wide space of a row op: each form (`algos`) at every group size, rows a block, count of
    vectors a thread holds, access width and reduction, crossed onto each point of row_space (its
    prefetch forms); legality prunes what cannot run, e.g. register rows that do not hold the row."""
    return dict(algo=algos, threads=(32, 64, 128, 256, 512, 1024), rows_per_block=(1, 2, 4), items=(1, 2, 3, 4, 6, 8, 12, 16),
                vec=tuple(v for v in (1, 2, 4, 8) if v * itemsize <= 16), reduction=("shared", "shuffle"))


class RowSchedule:
    """Schedule <-> knobs for the row ops (softmax, layernorm): a group of `threads` threads per row,
    `rows_per_block` rows per block, `items` vectors of `vec` floats per thread per chunk."""

    def row_alignment(self, k: dict, problem, buffers) -> tuple[tuple[tuple[str, int], ...], bool]:
        """(buffer alignment in bytes, any-alignment twin?): every buffer vec*itemsize-aligned. When
        cols % vec != 0 the plan takes the twin, which finds each row's offset in its vector from x's
        base, so the row buffers stay vec*itemsize-aligned (their rows then start at the same offsets);
        layer norm's gamma and beta too (the twin reads them as aligned vectors, funnel-shifted)."""
        size = problem.dtype("x").itemsize
        twin = k["vec"] > 1 and problem["cols"] % k["vec"] != 0
        return tuple((b, size * k["vec"]) for b in buffers), twin

    def row_recipe_twins(self, kernel, k: dict, buffers) -> tuple[tuple[tuple[str, str], ...], tuple]:
        """row_alignment as a recipe: ((symbol suffix, when), ...) for the vector kernel and its
        any-alignment twin, and the alignment each needs."""
        size = (kernel.types or self.types())["x"].itemsize
        if k["vec"] == 1:
            return (("", ""),), tuple((b, size, "") for b in buffers)
        vector, twin = f"cols % {k['vec']} == 0", f"cols % {k['vec']} != 0"
        return ((("", vector), (ANY_SUFFIX, twin)),
                tuple((b, size * k["vec"], vector) for b in buffers) +
                tuple((b, size * k["vec"], twin) for b in buffers))

    def row_reach(self, k: dict, cols: int) -> int:
        """Columns a row's vectors span in the split form: cols, and vec - 1 more for the any-alignment
        twin (a row may start up to vec - 1 elements past an aligned address, so it may take a chunk more)."""
        return cols + (k["vec"] - 1 if cols % k["vec"] else 0)

    def recipe_reach(self, k: dict) -> str:
        """row_reach as a recipe expression of cols."""
        return "cols" if k["vec"] == 1 else f"(cols + {k['vec'] - 1} * kg_min(1, cols % {k['vec']}))"

    # -- the split form: j.0 on blockIdx.y, a stats launch and a write launch per batch of rows ----------
    def split_chunks(self, k: dict, cols: int) -> int:
        chunks = cdiv(self.row_reach(k, cols), k["items"] * k["threads"] * k["vec"])
        check(chunks <= 65535, "split", "j", f"{chunks} blocks per row", limit="65535 (gridDim.y): raise items*threads*vec")
        return chunks

    def split_launches(self, kernel, k: dict, problem, suffix: str, stats_args, write_args, words: int):
        """(launches, workspaces, scalars) of the split form: per batch of rows (`l2_batch_mb` MB of x,
        so the write launch re-reads x from L2) the `_stats` launch writes `words` floats per block to
        the `stats` workspace and the `_write` launch merges a row's and writes y. "row0" in the
        argument lists is the batch's first row."""
        rows, cols = problem["rows"], problem["cols"]
        chunks = self.split_chunks(k, cols)
        batch = rows if not k["l2_batch_mb"] else \
            max(1, min(rows, (k["l2_batch_mb"] << 20) // (problem.dtype("x").itemsize * cols)))
        scalars = [Scalar("rows", "int", rows), Scalar("cols", "int", cols), Scalar("chunks", "int", chunks)]
        launches = []
        for n, row0 in enumerate(range(0, rows, batch)):
            scalars.append(Scalar(f"row0_{n}", "int", row0))
            grid, block = (min(batch, rows - row0), chunks, 1), (k["threads"], 1, 1)
            for part, args in (("stats", stats_args), ("write", write_args)):
                launches.append(Launch(f"{kernel.name}_{part}{suffix}", grid, block,
                                       tuple(f"row0_{n}" if a == "row0" else a for a in args)))
        return tuple(launches), (Workspace("stats", "float32", words * rows * chunks),), tuple(scalars)

    def split_recipe(self, kernel, k: dict, twins, stats_args, write_args, words: int) -> dict:
        """split_launches as a recipe: the Recipe's lets, steps, workspaces and requirements."""
        from ..recipe import Step
        itemsize = (kernel.types or self.types())["x"].itemsize
        batch = "rows" if not k["l2_batch_mb"] else \
            f"kg_max(1, kg_min(rows, kg_div({k['l2_batch_mb'] << 20}, kg_ll({itemsize}) * cols)))"
        loop, grid = ("row0", "rows", "batch"), ("kg_min(batch, rows - row0)", "chunks", "1")
        steps = tuple(Step(f"{kernel.name}_{part}{sfx}", grid, (k["threads"], 1, 1), args, when=when, loop=loop)
                      for sfx, when in twins for part, args in (("stats", stats_args), ("write", write_args)))
        return dict(steps=steps, lets=(("chunks", "int", f"kg_cdiv({self.recipe_reach(k)}, {k['items'] * k['threads'] * k['vec']})"),
                                       ("batch", "int", batch)),
                    workspaces=(("stats", "float", f"{words} * kg_ll(rows) * chunks", None),),
                    requires=(("chunks <= 65535", "gridDim.y holds 65535 chunks of a row: raise items*threads*vec"),))

    def row_steps(self, k: dict) -> Schedule:
        return self.put(schedule(self.name).split("i", k["rows_per_block"]).bind("i.0", "blockIdx.x")
                        .bind("i.1", "threadIdx.y")
                        .split("j", k["items"] * k["threads"] * k["vec"], k["threads"] * k["vec"], k["vec"])
                        .bind("j.2", "threadIdx.x").unroll("j.1"), k, "vec", "reduction")

    def read_row_steps(self, r: ScheduleReader) -> dict:
        (rpb,) = r.split("i", 1, (1,))
        items, threads, vec = r.vector_split("j", (256, 256, 1))
        r.expect("bind", "i.0", "blockIdx.x")
        r.expect("bind", "i.1", "threadIdx.y")
        r.expect("bind", "j.2", "threadIdx.x")
        r.expect("unroll", "j.1", 0)
        return {"threads": threads, "rows_per_block": rpb, "items": items, "vec": vec}

    def check_row_knobs(self, k: dict, target: Target) -> None:
        t, rpb = k["threads"], k["rows_per_block"]
        check(32 <= t * rpb <= target.max_threads, "split", "i", f"{rpb} rows x {t} threads = {t * rpb} threads",
              limit=f"a block has 32..{target.max_threads} threads (whole warps: the shuffles use full masks)")
        check(t <= 32 or rpb == 1, "split", "i", rpb, limit=f"{t} threads per row span warps: one row per block")
        check((t == 1) == (k["reduction"] == "serial"), "reduction", "j", k["reduction"],
              limit=f"{t} thread(s) per row", allowed="serial" if t == 1 else "shared, shuffle")

    def check_register_row(self, k: dict, target: Target) -> None:
        """A row held in registers: items*vec floats per thread plus ~24 registers of bookkeeping must fit
        the registers a block of this size may use per thread (ptxas spills past that)."""
        block = k["threads"] * k["rows_per_block"]
        cap = min(target.max_registers, 65536 // block)
        floats = k["items"] * k["vec"]
        check(floats + 24 <= cap, "cache_read", "x", f"{floats} floats per thread",
              limit=f"{cap - 24} floats per thread in registers with {block} threads per block "
                    f"({cap} registers each, ~24 kept for addressing)")

    def check_row_types(self, k: dict, types: Types) -> None:
        """The row's element type and the vector width: float32 1 or 4 (float4), 16-bit types 1..8 (up
        to 16 bytes an access); rows are written in the input's type."""
        check(types.output == types.input, "cache_write", "y", types.output.name,
              limit=f"{self.name} writes y in its input's type", allowed=types.input.name)
        widths = vector_widths(types.input)
        check(k["vec"] in widths, "vectorize", "j.3", k["vec"], limit=f"{types.input.name} rows",
              allowed=", ".join(map(str, widths)))

    def row_params(self, k: dict, types: Types) -> tuple[dict, int]:
        """Template parameters shared by the row templates, and the shared memory their reductions use."""
        self.check_row_types(k, types)
        t, rpb = k["threads"], k["rows_per_block"]
        if k["reduction"] == "shared":
            red_words = t * rpb
        elif k["reduction"] == "shuffle" and t > 32:
            red_words = t // 32
        else:
            red_words = 1
        params = dict(k, block=t * rpb, red_words=red_words, warps=max(1, t // 32), any_suffix=ANY_SUFFIX,
                      chunk_cols=k["items"] * t * k["vec"],
                      io=element_io(types.input, k["vec"]),
                      access_bytes=k["vec"] * types.input.itemsize)
        return params, red_words


    def row_prefetch(self, k: dict, types: Types, target: Target, streaming: tuple[str, ...], static: int,
                     rows: tuple[str, ...] = ("x",)) -> dict:
        """The `pf` parameter of lib/rows.j2's row_pass (None without prefetch): the streams of `rows` (x,
        and layer norm's residual row), legal only in the `streaming` algos, with one vector an iteration
        and the slots of the block's threads within its shared memory (`static`: the reductions' bytes)."""
        d = k["prefetch"]
        if not d:
            return {"pf": None}
        held = "the whole row" if k["algo"] == "registers" else "each block's chunk of the row"
        check(k["algo"] in streaming, "prefetch", "x", d, limit=f"algo {k['algo']} holds {held} in registers: no "
              "loop over the row to prefetch in", allowed="algo " + ", ".join(streaming))
        block, vbytes = k["threads"] * k["rows_per_block"], types.input.itemsize * k["vec"]
        prefetch.check_legal(k, target, "x", block, [vbytes] * len(rows), static, ("j", "items"), grid_stride=False)
        io = element_io(types.input, k["vec"])
        bufs = [dict(name=b, vtype=io["vtype"], src=f"{b[0]}{'v' if k['vec'] > 1 else 'r'}",
                     zero=zero_vector(io, k["vec"]), vbytes=vbytes) for b in rows]
        pf = prefetch.params(k, target, bufs, block)
        return {"pf": dict(bufs=pf["prefetch_bufs"], tid=f"(int)(threadIdx.y * {k['threads']} + t)", distance=d,
                           scope=k["prefetch_scope"], mode=k["prefetch_mode"], slot=pf["prefetch_slot"], threads=block,
                           copy_async=pf["prefetch_async"])}

    def row_prefetch_bytes(self, kernel, rows: int = 1) -> int:
        """Dynamic shared memory of a row kernel: the prefetch slots of its `rows` streamed rows."""
        return self.row_prefetch_bytes_of(dict(kernel.knobs), kernel.types or self.types(), rows)

    def row_prefetch_bytes_of(self, k: dict, types: Types, rows: int = 1) -> int:
        vbytes = types["x"].itemsize * k["vec"]
        return prefetch.shared_bytes(k, k["threads"] * k["rows_per_block"], [vbytes] * rows)


class HalfRowNumbers:
    """Inputs, reference, bytes and error of a row op whose buffers may be 16-bit: inputs drawn as
    floats and rounded to the input type (so the float64 reference of the decoded values is exact
    input), and for 16-bit outputs an elementwise error. float32 problems keep the op's own measure."""

    def encoded(self, problem, arrays: dict) -> dict:
        """Float arrays rounded to each buffer's type, as its storage."""
        return {b: problem.dtype(b).encode(np.asarray(a, dtype=np.float32)) for b, a in arrays.items()}

    def decoded(self, problem, inputs: dict, xp=np) -> dict:
        """The inputs' values as float64 (`xp`: numpy, or cupy for arrays on the GPU)."""
        return {b: problem.dtype(b).decode(a, xp) for b, a in inputs.items()}

    def half_output(self, problem) -> bool:
        return problem.dtype(self.outputs[0]).itemsize == 2

    def elementwise_error(self, out, ref, scale) -> float:
        return pointwise_error(out, ref, scale)
