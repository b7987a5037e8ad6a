"""The schedule of the row ops (softmax, layer norm): a group of threads per row, several rows per
block, each thread loading `items` vectors of `vec` floats of its row at once.

>>> from kernelgen.ops import get_op
>>> op = get_op("layernorm")
>>> op.knobs_from_schedule(op.schedule(threads=32, rows_per_block=4))["rows_per_block"]
4

`split("i", rows_per_block)` gives i.0 (blockIdx.x) and i.1 (threadIdx.y); `split("j", items*threads*vec,
threads*vec, vec)` gives j.0 (chunks of a row), j.1 (loads in flight), j.2 (threadIdx.x), j.3 (the vector lane).
"""
from __future__ import annotations

from ..errors import check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import pow2
from ..target import Target

REDUCTIONS = ("serial", "shared", "shuffle")


class RowSchedule:
    """Schedule <-> knobs for the row ops (softmax, layernorm): a group of `threads` threads per row,
    `rows_per_block` rows per block, `items` vectors of `vec` floats per thread per chunk."""

    def row_steps(self, threads, rows_per_block, items, vec, reduction) -> Schedule:
        return (schedule(self.name).split("i", rows_per_block).bind("i.0", "blockIdx.x").bind("i.1", "threadIdx.y")
                .split("j", items * threads * vec, threads * vec, vec).bind("j.2", "threadIdx.x")
                .unroll("j.1").vectorize("j.3", vec).reduction("j", reduction))

    def read_row_steps(self, r: ScheduleReader) -> dict:
        (rpb,) = r.split("i", 1, (1,))
        items, threads, vec = r.vector_split("j", (256, 256, 1), allowed_widths=(1, 4))
        r.bind("i.0", "blockIdx.x", allowed=("blockIdx.x",))
        r.bind("i.1", "threadIdx.y", allowed=("threadIdx.y",))
        r.bind("j.2", "threadIdx.x", allowed=("threadIdx.x",))
        r.unroll("j.1")
        return {"threads": threads, "rows_per_block": rpb, "items": items, "vec": vec,
                "reduction": r.reduction("j", "shuffle", REDUCTIONS)}

    def check_row_knobs(self, k: dict, target: Target) -> None:
        t, rpb = k["threads"], k["rows_per_block"]
        check(pow2(t) and t <= target.max_threads, "split", "j.2", t,
              limit=f"threads per row is a power of two up to {target.max_threads}")
        check(pow2(rpb), "split", "i", rpb, limit="rows per block is a power of two")
        check(32 <= t * rpb <= target.max_threads, "split", "i", f"{rpb} rows x {t} threads = {t * rpb} threads",
              limit=f"a block has 32..{target.max_threads} threads (whole warps: the shuffles use full masks)")
        check(t <= 32 or rpb == 1, "split", "i", rpb, limit=f"{t} threads per row span warps: one row per block")
        check(1 <= k["items"] <= 32, "split", "j.1", k["items"], limit="1..32 vectors per thread per chunk")
        check(k["vec"] in (1, 4), "vectorize", "j.3", k["vec"], allowed="1, 4")
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

    def row_params(self, k: dict) -> tuple[dict, int]:
        """Template parameters shared by the row templates, and the shared memory their reductions use."""
        t, rpb = k["threads"], k["rows_per_block"]
        if k["reduction"] == "shared":
            red_words = t * rpb
        elif k["reduction"] == "shuffle" and t > 32:
            red_words = t // 32
        else:
            red_words = 1
        params = dict(k, block=t * rpb, red_words=red_words, warps=max(1, t // 32),
                      scalar_items=k["items"] * k["vec"],         # the any-cols kernel: the same floats, one at a time
                      chunk_cols=k["items"] * t * k["vec"],
                      lanes=("x", "y", "z", "w"))
        return params, red_words
