"""Calibrate the row ops' and transpose's heuristics: for each shape, time (kernelgen.timing.measure against
measure_vendor, the same input sets, timing "auto") what `schedule_for` picks and the candidates around it,
each validated on the GPU (the same kernel at the shape's columns and at most 48 rows; transpose at a size
with the same residues mod 512), and write $OUT/rows_probe.json and $OUT/rows_probe.md. One GPU call:

    OUT=/tmp/out PYTHONPATH=. python3 bench/rows_probe.py [--budget-s 220] [--ops layernorm,softmax,transpose]

Kernels are compiled first, in parallel (the content-keyed cache then serves them). Past --budget-s the
remaining candidates are recorded as skipped, so the call ends in time. The constants to move are in
kernelgen/ops/rows.py (RowRules: layernorm.RULES, softmax.RULES) and transpose.schedule_for.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import kernelgen as kg
from kernelgen import gpu
from kernelgen.compile import compile_cuda
from kernelgen.ops.base import cdiv
from kernelgen.timing import measure, measure_vendor
from kernelgen.validate import validate

# In order of importance (past the budget the rest is skipped): transpose, the hidden sizes of layer norm,
# softmax's vocabularies, then long layer-norm rows and 16-bit types.
TRANSPOSE = [(12345, 6789, "float32"), (5000, 7001, "float32"), (8192, 8192, "float32")]
LAYERNORM = [(4096, c, "float32") for c in (768, 1000, 5120, 8192, 12288, 16384)] + \
            [(8192, c, "float32") for c in (768, 16384)]
SOFTMAX = [(r, c, "float32") for c in (32000, 50257, 128256) for r in (1, 64, 4096)] + \
          [(r, 262144, "float32") for r in (1, 64, 2048)] + [(4096, 50256, "float32")]
LONG = [(r, c, "float32") for c in (65536, 262144) for r in (1, 64, 1024)]
HALF = [("layernorm", (4096, c, "float16")) for c in (768, 8192, 16384)] + [("softmax", (4096, 50257, "float16"))]
ORDER = [("transpose", s) for s in TRANSPOSE] + [("layernorm", s) for s in LAYERNORM] + \
        [("softmax", s) for s in SOFTMAX] + [("layernorm", s) for s in LONG] + HALF


def row_candidates(op, rows, cols, itemsize):
    """(label, knobs) around the heuristic: register rows at 8/16/32 floats a thread, a warp per row,
    the looping forms, the split form over batches."""
    vec, loop = 16 // itemsize, "welford" if op.name == "layernorm" else "online"
    base = dict(vec=vec, reduction="shuffle", rows_per_block=1, l2_batch_mb=16)
    out = []
    for floats in (8, 16, 32):
        t = min(1024, max(32, 1 << max(0, (cdiv(cols, floats) - 1).bit_length())))
        items = cdiv(cols, t * vec)
        if items * vec <= 40:
            out.append((f"registers {items * vec} floats x {t}", dict(base, threads=t, items=items, algo="registers")))
    if cols <= 32 * 32:
        out.append(("registers, a warp per row, 8 rows", dict(base, threads=32, rows_per_block=8,
                                                               items=cdiv(cols, 32 * vec), algo="registers")))
    if cols > 8192:
        for t, i in ((1024, 2), (512, 4)):
            out.append((f"loop {loop} t{t} i{i}", dict(base, threads=t, items=i * 4 // vec, algo=loop)))
        batches = ((256, 4, 32), (256, 4, 64), (256, 4, 0)) if rows * cols * itemsize > 16 << 20 else ()
        for t, i, b in ((256, 4, 16), (512, 4, 16), (128, 2, 16)) + batches:
            out.append((f"split t{t} i{i} b{b}", dict(base, threads=t, items=max(1, i * 4 // vec), algo="split",
                                                      l2_batch_mb=b)))
    return out


TRANSPOSE_CANDIDATES = [("t32 r8 v4 (default)", dict()), ("t32 r8 v1 (scalar, 256 threads)", dict(vec=1)),
                        ("t32 r16 v4", dict(rows=16)), ("t64 r16 v4", dict(tile=64, rows=16)),
                        ("t32 r8 v4 grid-stride 16", dict(grid_stride=16)), ("t32 r8 v4 diagonal", dict(order="diagonal"))]


def cases(ops):
    """(op, sizes, dtype, [(label, schedule)], validation sizes) for every shape, the heuristic first."""
    tgt = gpu.device()
    for name, (a, b, dtype) in ORDER:
        if name not in ops:
            continue
        op = kg.get_op(name)
        if name == "transpose":
            sizes = {"M": a, "N": b}
            p = op.problem(sizes, dtype=dtype)
            scheds = [("heuristic", op.schedule_for(p, tgt))] + [(l, op.schedule(**k)) for l, k in TRANSPOSE_CANDIDATES]
            small = {"M": a % 512 + 512, "N": b % 512 + 512}
        else:
            sizes = {"rows": a, "cols": b}
            p = op.problem(sizes, dtype=dtype)
            scheds = [("heuristic", op.schedule_for(p, tgt))]
            for label, k in row_candidates(op, a, b, p.dtype("x").itemsize):
                try:
                    s = op.schedule_from_knobs(**k)
                    op.plan(op.kernel(s, tgt, op.types(dtype)), p, tgt)
                    scheds.append((label, s))
                except kg.errors.KernelgenError:
                    continue
            small = {"rows": max(1, min(a, 48, (1 << 21) // b)), "cols": b}   # the same kernel, cheap to check
        seen, unique = set(), []
        for label, s in scheds:
            kname = op.kernel(s, tgt, op.types(dtype)).name
            if kname not in seen:
                seen.add(kname)
                unique.append((label, s))
        yield op, sizes, dtype, unique, small


def _compile(job):
    source, arch, name = job
    try:
        compile_cuda(source, arch, name)
        return None
    except Exception as e:  # reported, and the candidate then fails on its own
        return f"{name}: {type(e).__name__}: {str(e)[:200]}"


def precompile(all_cases):
    tgt = gpu.device()
    jobs = {}
    for op, sizes, dtype, scheds, _ in all_cases:
        for _, s in scheds:
            k = op.kernel(s, tgt, op.types(dtype))
            jobs[k.name] = (kg.render(k), k.arch, k.name)
    with ProcessPoolExecutor(max_workers=max(2, (os.cpu_count() or 4) - 2)) as pool:
        return [e for e in pool.map(_compile, jobs.values()) if e], len(jobs)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget-s", type=float, default=220.0)
    ap.add_argument("--ops", default="layernorm,softmax,transpose")
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args(argv)
    start = time.time()
    out_dir = Path(os.environ.get("OUT", "."))
    all_cases = list(cases(args.ops.split(",")))
    errors, compiled = precompile(all_cases)
    print(f"compiled {compiled} kernels in {time.time() - start:.0f} s; errors: {errors}", flush=True)
    dev = gpu.device()
    records = []
    for op, sizes, dtype, scheds, small in all_cases:
        p = op.problem(sizes, dtype=dtype)
        shape = ",".join(f"{k}={v}" for k, v in sizes.items())
        if time.time() - start > args.budget_s:
            records += [dict(op=op.name, shape=shape, dtype=dtype, label=l, status="skipped (budget)") for l, _ in scheds]
            continue
        vendor = measure_vendor(op, p, reps=args.reps, timing="auto")
        vus = vendor[1].time_us if vendor else None
        for label, s in scheds:
            rec = dict(op=op.name, shape=shape, dtype=dtype, label=label, knobs=op.knobs_from_schedule(s),
                       vendor=vendor[0] if vendor else None, vendor_us=vus)
            if time.time() - start > args.budget_s:
                records.append(dict(rec, status="skipped (budget)"))
                continue
            try:
                v = validate(op, s, op.problem(small, dtype=dtype), backend="gpu")
                m = measure(op, s, p, reps=args.reps, timing="auto")
                rec.update(status="ok" if v.ok else "WRONG", kernel=m.kernel, us=round(m.time_us, 2),
                           gbps=round(m.gbps), spread=round(m.spread, 3), method=m.method,
                           vs_vendor=round(vus / m.time_us, 3) if vus else None)
            except Exception as e:  # an illegal or failing candidate is data, not the end of the probe
                rec.update(status=f"error: {type(e).__name__}: {str(e)[:160]}")
            records.append(rec)
            print(json.dumps(rec), flush=True)
    meta = dict(gpu=dev.gpu, arch=dev.arch, sms=dev.sms, l2_bytes=dev.l2_bytes, seconds=round(time.time() - start, 1),
                compile_errors=errors)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "rows_probe.json").write_text(json.dumps(dict(meta=meta, records=records), indent=1))
    (out_dir / "rows_probe.md").write_text(markdown(meta, records))
    print(markdown(meta, records))


def markdown(meta, records) -> str:
    lines = [f"# rows_probe on {meta['gpu']} ({meta['arch']}, {meta['sms']} SMs, L2 {meta['l2_bytes'] >> 20} MB), "
             f"{meta['seconds']} s", "",
             "Per shape: the heuristic's pick, the best candidate, and every candidate (us, GB/s, vendor time / time).", ""]
    by_shape: dict = {}
    for r in records:
        by_shape.setdefault((r["op"], r["shape"], r["dtype"]), []).append(r)
    lines += ["| op | shape | dtype | vendor us | heuristic us | x vendor | best | best us | x vendor | heuristic/best |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for (op, shape, dtype), rs in by_shape.items():
        ok = [r for r in rs if r.get("status") == "ok"]
        heur = next((r for r in ok if r["label"] == "heuristic"), None)
        best = min(ok, key=lambda r: r["us"], default=None)
        if not heur or not best:
            lines.append(f"| {op} | {shape} | {dtype} | - | - | - | - | - | - | {rs[0].get('status')} |")
            continue
        lines.append(f"| {op} | {shape} | {dtype} | {heur['vendor_us']} | {heur['us']} | {heur['vs_vendor']} | "
                     f"{best['label']} | {best['us']} | {best['vs_vendor']} | {best['us'] / heur['us']:.2f} |")
    lines += ["", "## Every candidate", "", "| op | shape | dtype | candidate | kernel | us | GB/s | x vendor | status |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['label']} | {r.get('kernel', '-')} | "
                     f"{r.get('us', '-')} | {r.get('gbps', '-')} | {r.get('vs_vendor', '-')} | {r.get('status')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
