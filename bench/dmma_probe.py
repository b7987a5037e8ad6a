"""fp32 GEMMs on the fp64 tensor cores (gemm dtype dmma) against cuBLAS SGEMM (TF32 off), same run.

    PYTHONPATH=. python3 bench/dmma_probe.py [--shapes 2048x12288x4096:NT,...] [--variants all|pick]

Per shape: random normal fp32 A and B; cuBLAS SGEMM (torch.matmul, TF32 off) and each dmma schedule timed
by kernelgen.timing.time_callable (events around one launch, L2 flushed, median of 20); each result's error
against the float64 product: the norm-relative error, and the worst element's |C - ref| / (|A| |B|).
Prints a Markdown table; `--json` writes the rows too.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen import get_op, gpu                    # noqa: E402
from kernelgen.prepared import prepare               # noqa: E402
from kernelgen.timing import time_callable           # noqa: E402

SHAPES = "2048x12288x4096:NT,2048x4096x4096:NT,2048x16384x4096:NT,2048x4096x16384:NT,4096x4096x4096:NN," \
         "3000x3000x3000:NN,2047x2049x1023:NT"
# warp tiles of 64x32 (fp64 accumulators: 128 registers) in blocks of 4 or 8 warps; K tiles of 16-64
VARIANTS = {
    "128x128 w64x32 bk32 st4": dict(bm=128, bn=128, wm=64, wn=32, bk=32, stages=4),
    "128x128 w64x32 bk32 st3": dict(bm=128, bn=128, wm=64, wn=32, bk=32, stages=3),
    "128x128 w64x32 bk16 st4": dict(bm=128, bn=128, wm=64, wn=32, bk=16, stages=4),
    "128x128 w64x32 bk32 st4 smem": dict(bm=128, bn=128, wm=64, wn=32, bk=32, stages=4, epilogue="smem"),
    "128x128 w32x64 bk32 st4": dict(bm=128, bn=128, wm=32, wn=64, bk=32, stages=4),
    "128x64 w64x32 bk32 st4 mb2": dict(bm=128, bn=64, wm=64, wn=32, bk=32, stages=4, min_blocks=2),
    "64x128 w32x64 bk32 st4 mb2": dict(bm=64, bn=128, wm=32, wn=64, bk=32, stages=4, min_blocks=2),
    "128x128 w64x32 bk32 st4 sw8": dict(bm=128, bn=128, wm=64, wn=32, bk=32, stages=4, swizzle=8),
    "64x64 w32x32 bk32 st4": dict(bm=64, bn=64, wm=32, wn=32, bk=32, stages=4),
    "128x64 w64x32 bk32 st3": dict(bm=128, bn=64, wm=64, wn=32, bk=32, stages=3),
}


def parse(text):
    out = []
    for s in text.split(","):
        dims, _, layout = s.partition(":")
        m, n, k = (int(x) for x in dims.split("x"))
        out.append((m, n, k, layout or "NN"))
    return out


def operands(m, n, k, layout, seed):
    """Random normal fp32 A (m x k) and B (k x n) stored as `layout` says (a_st, b_st), the float64 product and
    |A| @ |B| (ref, bound), and torch views of the stored arrays as cuBLAS multiplies them (ta @ tb)."""
    import cupy
    import torch
    rng = cupy.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=cupy.float32)
    b = rng.standard_normal((k, n), dtype=cupy.float32)
    a_st = cupy.ascontiguousarray(a.T) if layout[0] == "T" else a
    b_st = cupy.ascontiguousarray(b.T) if layout[1] == "T" else b
    ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
    bound = cupy.abs(a).astype(cupy.float64) @ cupy.abs(b).astype(cupy.float64) + 1e-30
    ta, tb = torch.as_tensor(a_st, device="cuda"), torch.as_tensor(b_st, device="cuda")
    ta, tb = (ta.t() if layout[0] == "T" else ta), (tb.t() if layout[1] == "T" else tb)
    return a_st, b_st, ref, bound, ta, tb


def errors(c, ref, bound):
    import cupy
    c = c.astype(cupy.float64)
    rel = float(cupy.linalg.norm(c - ref) / cupy.linalg.norm(ref))
    worst = float(cupy.max(cupy.abs(c - ref) / bound))
    return rel, worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--variants", default="all", help="all, pick (schedule_for only) or labels joined by ';'")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    import cupy
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    op, dev = get_op("gemm"), gpu.device()
    print(f"# dmma gemm against cuBLAS SGEMM: {dev.gpu} ({dev.arch}, {dev.sms} SMs), "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; events, L2 flushed, median of {args.reps}\n")
    print("| shape | schedule | us | TFLOP/s | cuBLAS us | ratio | rel. error | worst / (|A||B|) |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for m, n, k, layout in parse(args.shapes):
        a_st, b_st, ref, bound, ta, tb = operands(m, n, k, layout, m * 7 + n * 3 + k)
        vendor = time_callable(lambda: torch.matmul(ta, tb), reps=args.reps).median_us
        vrel, vworst = errors(cupy.asarray(torch.matmul(ta, tb)), ref, bound)
        flop = 2.0 * m * n * k
        name = f"{m}x{n}x{k} {layout}"
        print(f"| {name} | cuBLAS SGEMM | {vendor:.1f} | {flop / vendor / 1e6:.1f} | {vendor:.1f} | 1.000 | {vrel:.2e} | {vworst:.2e} |")
        p = op.problem({"M": m, "N": n, "K": k}, dtype="dmma", layout=layout)
        scheds = [("schedule_for", op.schedule_for(p))]
        if args.variants != "pick":
            chosen = VARIANTS if args.variants == "all" else {v: VARIANTS[v] for v in args.variants.split(";")}
            scheds += [(label, op.schedule(**kn)) for label, kn in chosen.items()]
        for label, sched in scheds:
            try:
                prep = prepare(op, sched, p)
            except Exception as e:      # an illegal variant at this shape: say so, go on
                print(f"| {name} | {label} | refused: {str(e).splitlines()[0][:120]} | | | | | |")
                continue
            c = cupy.full((m, n), cupy.nan, cupy.float32)
            run = lambda: prep(A=a_st, B=b_st, C=c)      # noqa: E731
            run()
            cupy.cuda.runtime.deviceSynchronize()
            rel, worst = errors(c, ref, bound)
            t = time_callable(run, reps=args.reps).median_us
            print(f"| {name} | {label} | {t:.1f} | {flop / t / 1e6:.1f} | {vendor:.1f} | {vendor / t:.3f} | {rel:.2e} | {worst:.2e} |")
            rows.append(dict(shape=name, schedule=label, knobs=op.knobs_from_schedule(sched), us=t, cublas_us=vendor,
                             rel=rel, worst=worst, cublas_rel=vrel))
        sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
