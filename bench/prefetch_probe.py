"""The prefetch ladder (reduce_sum's last five steps, examples/prefetch_ladder.py) on a 2^28-element stream,
at one block per SM and at full occupancy, beside the measured copy bandwidth. One GPU call:

    OUT=/tmp/out PYTHONPATH=. python3 bench/prefetch_probe.py [--log2n 28] [--sweep] [--budget-s 400]
    OUT=/tmp/out PYTHONPATH=. python3 bench/prefetch_probe.py --ops gemv,softmax [--budget-s 170]

Each step is validated on the GPU first (n = 1000003 and 2^20 + 3: counts that no distance divides),
then timed with events (L2 flushed, median of 30). "Full occupancy" is what a user filling the GPU
would pick: as many blocks per SM as the plain loop fits (4 of 512), each form's distance shortened
until its slots fit that many (kernelgen.ops.prefetch.fit_distance: 8 + 1 padded shared slots -> 4 + 1;
register slots beside the plain loop's own registers, within the 32 a thread then has), and the largest
grid_stride the knob offers within the blocks that then fit (threads, shared memory + 1 KB, registers
from the cubin; a prefetching kernel promises its grid stride's blocks to __launch_bounds__). The copy bandwidth is the better of cupy's device-to-device copy and the elementwise op
copying `a` (read + write bytes / time). --sweep adds every form at distances 2, 4, 8 and 16 at one block
per SM, and at 4 blocks per SM where its slots fit them. Prints a markdown table and writes $OUT/prefetch_probe.md and $OUT/prefetch_probe.json.
The issue's targets: the best step at one block per SM >= 90% of the copy bandwidth; at full occupancy
no step more than 2% slower than the plain loop.

--ops gemv,softmax (bench/prefetch_ops.py) times GEMV's loop over a row and softmax's online passes the same
way instead, float32 and float16: each form against the plain loop (and the unrolled loads the ops take
without prefetch), at one block per SM and at full occupancy; writes $OUT/prefetch_ops.md and .json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import kernelgen as kg
from kernelgen import gpu
from kernelgen.errors import ScheduleError
from kernelgen.features import occupancy
from kernelgen.ops.prefetch import fit_distance
from kernelgen.timing import measure, measure_vendor, time_callable
from kernelgen.validate import validate

op = kg.get_op("reduce_sum")
STEPS = op.ladder()[-5:]
GRID_STRIDES = op.knob("grid_stride").choices


def with_knobs(sched, **changes):
    return op.schedule_from_knobs(**dict(op.knobs_from_schedule(sched), **changes))


def partial_facts(sched, target):
    """(launch, registers) of the partial pass: registers from the cubin, else the estimate."""
    kernel = op.kernel(sched, target)
    plan = op.plan(kernel, op.problem({"n": 1 << 20}), target)
    partial = next(l for l in plan.launches if l.symbol.endswith("_partial"))
    regs = kernel.registers_estimate
    try:
        from kernelgen.inspect import inspect_kernel
        regs = next(f.registers for f in inspect_kernel(kernel, target.arch) if f.symbol == partial.symbol)
    except Exception as e:  # no cuobjdump: the estimate
        print(f"  (registers estimated: {e})", file=sys.stderr)
    return partial, regs


def blocks_that_fit(sched, target) -> int:
    """Resident blocks of the partial pass on one SM: threads, shared memory (+1 KB a block), registers."""
    partial, regs = partial_facts(sched, target)
    smem = 4 * partial.threads + partial.shared_bytes + 1024      # its block sums and slots, + 1 KB reserved
    return int(occupancy(partial.threads, smem, regs, target)["blocks_per_sm"])


def full_occupancy(sched, target):
    """(schedule, blocks that fit): the step at the blocks the plain loop fits per SM (its threads allow 4
    of 512), its prefetch distance shortened until the slots fit them beside the plain loop's own
    registers (fit_distance; the kernel promises the blocks to __launch_bounds__), grid_stride the
    largest choice within what fits."""
    k = op.knobs_from_schedule(sched)
    plain = op.schedule_from_knobs(**dict(k, prefetch=0, prefetch_scope="registers", prefetch_mode="batch",
                                          prefetch_pad=0))
    want, base = blocks_that_fit(plain, target), partial_facts(plain, target)[1]
    vbytes = k["vec"] * op.problem({"n": 1 << 20}).dtype("x").itemsize
    d = fit_distance(k, target, k["threads"], [vbytes], 4 * k["threads"], want, base_registers=base)
    if k["prefetch"] and d:
        sched = with_knobs(sched, prefetch=d)
    fit = blocks_that_fit(with_knobs(sched, grid_stride=want), target)
    return with_knobs(sched, grid_stride=max(g for g in GRID_STRIDES if 1 <= g <= max(1, fit))), fit


def copy_gbps(log2n: int) -> tuple[float, str]:
    """The device's copy bandwidth: the better of cupy's copy and elementwise's `out = a`."""
    import cupy
    n = 1 << log2n
    a, b = cupy.ones(n, cupy.float32), cupy.empty(n, cupy.float32)
    t = time_callable(lambda: cupy.copyto(b, a), reps=30).median_us
    cupy_gbps = 2 * 4 * n / t / 1e3
    del a, b
    ew = kg.get_op("elementwise").with_expr("a")
    problem = ew.problem({"M": n >> 12, "N": 1 << 12})
    best_ew = max(measure(ew, ew.schedule(grid_stride=g), problem, timing="events").gbps for g in (0, 4, 8))
    return max(cupy_gbps, best_ew), f"cupy copy {cupy_gbps:.0f} GB/s, elementwise `a` {best_ew:.0f} GB/s"


def time_step(sched, problem) -> float:
    return measure(op, sched, problem, timing="events").gbps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--sweep", action="store_true", help="every form at distances 2, 4, 8, 16 at one block per SM")
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--ops", default="", help="gemv,softmax: time those ops' prefetch forms (bench/prefetch_ops.py)")
    args = ap.parse_args(argv)
    if args.ops:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import prefetch_ops
        return prefetch_ops.main(args.ops.split(","), min(args.budget_s, 170.0))
    gpu.require()
    start, target = time.time(), gpu.device()
    out_dir = Path(os.environ.get("OUT", "."))
    problem = op.problem({"n": 1 << args.log2n})
    copy, copy_how = copy_gbps(args.log2n)
    rows = []
    for i, step in enumerate(STEPS, 1):
        for n in (1000003, (1 << 20) + 3):
            v = validate(op, step.schedule, op.problem({"n": n}), backend="gpu")
            assert v.ok, (step.title, n, v.summary())
        full_sched, fit = full_occupancy(step.schedule, target)
        fk = op.knobs_from_schedule(full_sched)
        full, full_d = fk["grid_stride"], fk["prefetch"]
        for n in (1000003, (1 << 20) + 3):
            v = validate(op, full_sched, op.problem({"n": n}), backend="gpu")
            assert v.ok, (step.title, "full occupancy", n, v.summary())
        one_gbps = time_step(step.schedule, problem)
        full_gbps = time_step(full_sched, problem)
        rows.append(dict(step=i, title=step.title, kernel=op.kernel(step.schedule).name, one_block_gbps=one_gbps,
                         fit=fit, full_grid_stride=full, full_distance=full_d, full_gbps=full_gbps,
                         full_kernel=op.kernel(full_sched).name))
        print(f"  step {i}: {one_gbps:.0f} GB/s at 1 block/SM, {full_gbps:.0f} GB/s at {full} blocks/SM "
              f"(distance {full_d})", file=sys.stderr)
    sweep = []
    if args.sweep:
        for scope, mode, slots in (("registers", "batch", ""), ("registers", "rolling", ""),
                                   ("shared", "batch", "interleaved"), ("shared", "rolling", "interleaved"),
                                   ("shared", "batch", "thread"), ("shared", "rolling", "thread")):
            for d in (2, 4, 8, 16):
                if time.time() - start > args.budget_s:
                    break
                k = dict(prefetch=d, prefetch_scope=scope, prefetch_mode=mode)
                if scope == "shared":    # the note's side-by-side slots padded to an odd count (conflict-free)
                    k.update(prefetch_slots=slots, prefetch_pad=(d + 1) % 2 if slots == "thread" else 0)
                try:
                    sched = with_knobs(STEPS[0].schedule, **k)
                    op.kernel(sched, target)
                except ScheduleError as e:
                    sweep.append(dict(form=f"{scope} {mode} {slots}".strip(), distance=d, gbps=None, note=str(e)[:80]))
                    continue
                fit = blocks_that_fit(sched, target)
                full = time_step(with_knobs(sched, grid_stride=4), problem) if fit >= 4 else None
                sweep.append(dict(form=f"{scope} {mode} {slots}".strip(), distance=d, gbps=time_step(sched, problem), full_gbps=full,
                                  note=""))
    vendor = measure_vendor(op, problem, timing="events")
    text = table(rows, sweep, copy, copy_how, vendor, target, args.log2n)
    print(text)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "prefetch_probe.md").write_text(text)
    (out_dir / "prefetch_probe.json").write_text(json.dumps(dict(gpu=target.gpu, log2n=args.log2n, copy_gbps=copy,
                                                                 copy=copy_how, rows=rows, sweep=sweep), indent=1))
    return 0


def table(rows, sweep, copy, copy_how, vendor, target, log2n) -> str:
    plain_one, plain_full = rows[0]["one_block_gbps"], rows[0]["full_gbps"]
    best = max(rows, key=lambda r: r["one_block_gbps"])
    out = [f"## Prefetch ladder, reduce_sum over 2^{log2n} float32 on {target.gpu} ({target.sms} SMs)", "",
           f"Copy bandwidth {copy:.0f} GB/s ({copy_how})."
           + (f" Vendor {vendor[0]}: {vendor[1].gbps:.0f} GB/s." if vendor else ""), "",
           "| step | 1 block/SM GB/s | % of copy | full: blocks/SM | full: distance | full GB/s | full vs plain |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['step']} {r['title']} | {r['one_block_gbps']:.0f} | {100 * r['one_block_gbps'] / copy:.1f}% | "
                   f"{r['full_grid_stride']} (fit {r['fit']}) | {r['full_distance']} | {r['full_gbps']:.0f} | "
                   f"{100 * (r['full_gbps'] / plain_full - 1):+.1f}% |")
    slowest = min(r["full_gbps"] / plain_full for r in rows)
    out += ["", f"Best at one block per SM: step {best['step']}, {100 * best['one_block_gbps'] / copy:.1f}% of copy "
                f"(target >= 90%; the plain loop {100 * plain_one / copy:.1f}%). At full occupancy the slowest step is "
                f"{100 * (1 - slowest):.1f}% below the plain loop (target <= 2%)."]
    if sweep:
        out += ["", "| form | distance | 1 block/SM GB/s | % of copy | 4 blocks/SM GB/s | vs plain at full |",
                "|---|---|---|---|---|---|"]
        for s in sweep:
            if not s["gbps"]:
                out.append(f"| {s['form']} | {s['distance']} | refused | {s['note']} | | |")
                continue
            full = s.get("full_gbps")
            out.append(f"| {s['form']} | {s['distance']} | {s['gbps']:.0f} | {100 * s['gbps'] / copy:.1f}% | "
                       + (f"{full:.0f} | {100 * (full / plain_full - 1):+.1f}% |" if full else "slots do not fit 4 | |"))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
