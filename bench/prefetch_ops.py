"""GEMV's loop over a row and softmax's online passes with and without prefetch, at one block per SM and at
full occupancy, float32 and float16, in one GPU call of under 3 minutes:

    OUT=/tmp/out PYTHONPATH=. python3 bench/prefetch_probe.py --ops gemv,softmax

One block per SM: GEMV with a block of 512 threads per row looping over the rows (grid_stride 1) on
8192 x 8192; softmax online with 1024 threads per row on one row per SM (rows = SMs, 2^17 float32 or 2^18
float16 columns). Full occupancy: GEMV at grid_stride 4 (2048 threads an SM), softmax with 512 threads per
row on 4096 rows of 16384. Each form 8 vectors ahead at one block per SM; at full occupancy its distance
is fitted to the blocks the plain loop fits (kernelgen.ops.prefetch.fit_distance: shared slots within an
SM's shared memory, register slots beside the plain loop's own registers within what those blocks leave a
thread; none may fit). Beside the plain loop
(one vector an iteration) the op's own way to keep loads in flight without prefetch (unroll / items 4).
Every kernel is validated on the GPU first (GEMV 133 x 1001, softmax 37 x 1001: sizes no distance or
vector divides), then timed with events (L2 flushed, median of 20). Writes $OUT/prefetch_ops.md and .json.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import kernelgen as kg
from kernelgen import gpu
from kernelgen.errors import KernelgenError
from kernelgen.features import occupancy
from kernelgen.ops.prefetch import RESERVED, fit_distance
from kernelgen.timing import measure
from kernelgen.validate import validate

D = 8
STEPS = [("plain loop, one vector an iteration", {}),
         ("4 loads in flight, no prefetch", {"more": 4}),
         ("batch prefetch into registers", dict(prefetch=D, prefetch_scope="registers", prefetch_mode="batch")),
         ("rolling prefetch through registers", dict(prefetch=D, prefetch_scope="registers", prefetch_mode="rolling")),
         ("batch prefetch into shared memory", dict(prefetch=D, prefetch_scope="shared", prefetch_mode="batch",
                                                    prefetch_pad=1)),
         ("rolling through shared memory, padded", dict(prefetch=D, prefetch_scope="shared", prefetch_mode="rolling",
                                                        prefetch_pad=1))]


def cases(name: str, dtype: str, target):
    """(op, [(regime, problem, knobs of the plain loop, blocks an SM its threads allow)], knob of `more`,
    check problem, the slots' vector bytes, static shared bytes of a block)."""
    op = kg.get_op(name)
    itemsize = 4 if dtype == "float32" else 2
    vec = 16 // itemsize
    if name == "gemv":
        base = dict(threads=512, lanes=512, vec=vec, unroll=1)
        problem = op.problem({"M": 8192, "N": 8192}, dtype=dtype)
        regimes = [("one block per SM", problem, dict(base, grid_stride=1), 1),
                   ("full occupancy", problem, dict(base, grid_stride=4), target.max_threads_per_sm // 512)]
        return op, regimes, "unroll", op.problem({"M": 133, "N": 1001}, dtype=dtype), [16, 16], 4 * 16
    base = dict(rows_per_block=1, items=1, vec=vec, algo="online", reduction="shuffle")
    one = op.problem({"rows": target.sms, "cols": (1 << 19) // itemsize}, dtype=dtype)
    full = op.problem({"rows": 4096, "cols": 16384}, dtype=dtype)
    regimes = [("one block per SM", one, dict(base, threads=1024), 1),
               ("full occupancy", full, dict(base, threads=512), target.max_threads_per_sm // 512)]
    return op, regimes, "items", op.problem({"rows": 37, "cols": 1001}, dtype=dtype), [16], None


def launch_facts(op, sched, problem, target):
    """(blocks of the kernel's launch that fit one SM: threads, shared memory + 1 KB, registers; its registers)."""
    from kernelgen.inspect import inspect_kernel
    kernel = op.kernel(sched, target, problem.types)
    (launch,) = op.plan(kernel, problem, target).launches
    f = {f.symbol: f for f in inspect_kernel(kernel, target.arch)}[launch.symbol]
    smem = launch.shared_bytes + f.shared_bytes + RESERVED
    return int(occupancy(launch.threads, smem, f.registers, target)["blocks_per_sm"]), f.registers


def main(names: list[str], budget_s: float) -> int:
    gpu.require()
    start, target = time.time(), gpu.device()
    out_dir = Path(os.environ.get("OUT", "."))
    rows = []
    for name in names:
        for dtype in ("float32", "float16"):
            op, regimes, more, check_problem, vbytes, static = cases(name, dtype, target)
            for regime, problem, plain, allowed in regimes:
                block = plain["threads"]
                static_bytes = static if static is not None else 4 * 2 * (block // 32)   # softmax online: (m, s) a warp
                # full occupancy: the blocks the plain loop fits, each form's slots fitted beside its registers
                want, base = launch_facts(op, op.schedule_from_knobs(**plain), problem, target)
                want = min(want, allowed)
                for title, change in STEPS:
                    if time.time() - start > budget_s:
                        rows.append(dict(op=name, dtype=dtype, regime=regime, step=title, note="over the time budget"))
                        continue
                    k = dict(plain, **{kk: v for kk, v in change.items() if kk != "more"})
                    if "more" in change:
                        k[more] = change["more"]
                    if k.get("prefetch") and want > 1:
                        k["prefetch"] = fit_distance(dict(dict(prefetch_pad=0), **k), target, block, vbytes,
                                                     static_bytes, want, base_registers=base)
                        if not k["prefetch"]:
                            rows.append(dict(op=name, dtype=dtype, regime=regime, step=title, note="no distance fits"))
                            continue
                    row = dict(op=name, dtype=dtype, regime=regime, step=title, distance=k.get("prefetch", 0), note="")
                    try:
                        sched = op.schedule_from_knobs(**k)
                        v = validate(op, sched, check_problem, backend="gpu")
                        assert v.ok, v.summary()
                        row.update(kernel=op.kernel(sched, target, problem.types).name,
                                   fit=launch_facts(op, sched, problem, target)[0],
                                   gbps=measure(op, sched, problem, reps=20, timing="events").gbps)
                    except (KernelgenError, AssertionError) as e:
                        row["note"] = str(e).splitlines()[0][:100]
                    rows.append(row)
                    print(f"  {name} {dtype} {regime}: {title}: {row.get('gbps', 0):.0f} GB/s "
                          f"(distance {row['distance']}, {row.get('fit')} blocks fit) {row['note']}", file=sys.stderr)
    text = table(rows, target)
    print(text)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "prefetch_ops.md").write_text(text)
    (out_dir / "prefetch_ops.json").write_text(json.dumps(dict(gpu=target.gpu, rows=rows,
                                                               seconds=time.time() - start), indent=1))
    return 0


def table(rows, target) -> str:
    out = [f"## Prefetch in GEMV and softmax on {target.gpu} ({target.sms} SMs)", "",
           "| op | type | regime | step | distance | blocks/SM fit | GB/s | vs plain |", "|---|---|---|---|---|---|---|---|"]
    plain, worst = {}, {}
    for r in rows:
        key = (r["op"], r["dtype"], r["regime"])
        if "gbps" not in r:
            out.append(f"| {r['op']} | {r['dtype']} | {r['regime']} | {r['step']} | {r.get('distance', '')} | | "
                       f"{r['note']} | |")
            continue
        plain.setdefault(key, r["gbps"])
        rel = r["gbps"] / plain[key] - 1
        if r.get("distance"):
            worst[key] = min(worst.get(key, rel), rel)
        out.append(f"| {r['op']} | {r['dtype']} | {r['regime']} | {r['step']} | {r['distance']} | {r['fit']} | "
                   f"{r['gbps']:.0f} | {100 * rel:+.1f}% |")
    out.append("")
    for (op, dtype, regime), w in worst.items():
        out.append(f"- {op} {dtype}, {regime}: the slowest prefetch form is {100 * abs(w):.1f}% "
                   f"{'below' if w < 0 else 'above'} the plain loop" + (" (target at full occupancy: <= 2% below)"
                                                                       if regime == "full occupancy" else ""))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["gemv", "softmax"], 170.0))
