"""Time the tensor-core gemm's schedule candidates per shape against cuBLAS, beside the cost model's
estimate, to fit kernelgen/ops/gemm_cost.py (COSTS and the FAMILIES' efficiencies). One GPU call:

    PYTHONPATH=. python3 bench/gemm_shapes_probe.py                  # writes $OUT/gemm_shapes_probe.{json,md}
    PYTHONPATH=. python3 bench/gemm_shapes_probe.py --list           # no GPU: the candidates and estimates
    PYTHONPATH=. python3 bench/gemm_shapes_probe.py --shapes 16x2000x2000,6001x2048x1500:TN --reps 20

The default shapes stand for the classes where the plain tiles were slow (few blocks: M of 8..128 against
thousands of columns, a very long K; rows TMA cannot read: N, M or K not a multiple of 8) and two
aligned ones; none is one of DeepBench's. Per shape the candidates are schedule_for's pick, every tile
family the model considers at the number of K slices it ranks best for that family, and the pick with K
whole, half and twice its slices (what fits LAUNCH_NEXT_S and WORKSPACE_BYTES_PER_S). Each is compiled
(in parallel, before any timing), validated once on the GPU against a float64 product (inputs are small
integers: a correctly rounded fp16 C is exact to half an ulp), then timed with kernelgen.timing (events,
L2 flushed, unless --timing says otherwise); cuBLAS (torch.matmul, fp16 out) is timed the same way on the
same inputs. Results are written after every shape, so a run stopped by the deadline keeps what it
measured. Columns: model_us (the estimate), time_us, meas/model (what a fit moves toward 1), cublas_us,
ratio = cuBLAS / kernelgen.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernelgen.ops import get_op                            # noqa: E402
from kernelgen.ops.gemm_cost import candidates              # noqa: E402
from sgemm_regimes_probe import compile_all, parse_shapes, shape_name   # noqa: E402  (the same compile and shapes)

SHAPES = "16x2000x2000,48x3000x3000:NT,100x2304x2304,12x768x240000,64x6000x1500,24x640x640:NT," \
         "5000x3001x2000,6001x2048x1500:TN,4000x4000x1234:NT,3003x2000x1000:TT,10000x4096x3000,2048x2048x2048"


def plan_candidates(op, problem, target) -> list[dict]:
    """[{label, family, split_k, model_us, knobs}] for one shape, deduplicated."""
    ranked = candidates(op, problem, target)
    out, seen = [], set()

    def add(label, c):
        if c is None or (c.family, c.split_k) in seen:
            return
        seen.add((c.family, c.split_k))
        out.append(dict(label=label, family=c.family, split_k=c.split_k, model_us=round(c.seconds * 1e6, 2),
                        knobs=dict(c.knobs)))

    pick = ranked[0]
    add("schedule_for", pick)
    for c in ranked:
        if c.family not in {o["family"] for o in out}:
            add("best of family", c)
    same = {c.split_k: c for c in ranked if c.family == pick.family}
    fewer = [s for s in same if 1 < s <= pick.split_k // 2]
    more = [s for s in same if s >= 2 * pick.split_k]
    add("pick, K whole", same.get(1))
    add("pick, fewer slices", same[max(fewer)] if fewer else None)
    add("pick, more slices", same[min(more)] if more else None)
    return out


def check_output(op, sched, problem, ref) -> tuple[bool, float]:
    """One launch on the timing inputs, C poisoned with NaN first; (correctly rounded everywhere, the
    largest |C - ref| in units of u|ref|)."""
    import cupy
    from kernelgen import gpu
    from kernelgen.timing import device_sets, launchers
    _, (launch,) = launchers(op, sched, problem, 1)
    c = device_sets(op, problem, 1)[0]["C"]
    c.fill(math.nan)
    launch()
    gpu.synchronize_checked("gemm")
    d = problem.dtype("C")
    out = d.decode(c, cupy)
    diff = cupy.abs(out - ref)
    units = cupy.where(diff == 0, 0.0, diff / (d.unit_roundoff * cupy.abs(ref)))
    worst = float(cupy.nan_to_num(units, nan=math.inf, posinf=math.inf).max())
    return worst <= 1.0, worst


def run(args) -> int:
    import cupy
    from kernelgen import gpu
    from kernelgen.timing import device_sets, measure, measure_vendor
    op = get_op("gemm")
    target = gpu.device()
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    shapes = parse_shapes(args.shapes or SHAPES)
    plans = [(s, plan_candidates(op, problem_of(op, s), target)) for s in shapes]
    scheds = [(op.schedule_from_knobs(**c["knobs"]), problem_of(op, s).layout) for s, cs in plans for c in cs]
    errors = compile_all(op, scheds, target, args.jobs)
    print(f"compiled {len(errors)} kernels in {time.time() - start:.0f} s "
          f"({sum(bool(e[0]) for e in errors.values())} failed)", flush=True)
    rows, skipped = [], []
    for shape, cands in plans:
        if time.time() - start > args.deadline:
            skipped.append(shape_name(shape))
            continue
        problem = problem_of(op, shape)
        sets = device_sets(op, problem, 1)[0]
        ref = op.reference(sets, problem, xp=cupy)["C"]
        vendor = measure_vendor(op, problem, reps=args.reps, timing=args.timing)
        vendor_us = vendor[1].time_us if vendor else None
        for c in cands:
            sched = op.schedule_from_knobs(**c["knobs"])
            name = op.kernel(sched, target, None, problem.layout).name
            error, regs, spills = errors.get(name, ("", None, None))
            row = dict(shape=shape_name(shape), **{k: v for k, v in c.items() if k != "knobs"},
                       kernel=name, registers=regs, spill_bytes=spills, cublas_us=vendor_us, knobs=c["knobs"])
            try:
                if error:
                    raise RuntimeError(error)
                row["valid"], row["max_units"] = check_output(op, sched, problem, ref)
                m = measure(op, sched, problem, reps=args.reps, timing=args.timing)
                row.update(time_us=round(m.time_us, 2), tflops=round(m.tflops, 1), method=m.method,
                           meas_model=round(m.time_us / c["model_us"], 3),
                           ratio=round(vendor_us / m.time_us, 3) if vendor_us else None)
            except Exception as e:   # a failure is a row, the probe goes on
                row.update(valid=False, time_us=None, ratio=None, failure=f"{type(e).__name__}: {str(e)[:200]}")
            rows.append(row)
            print(f"{row['shape']:>20} {row['label']:<20} {row['family']:<14} sk{row['split_k']:<3} "
                  f"model {row['model_us']:>9} us  time {row.get('time_us')} us  meas/model {row.get('meas_model')}  "
                  f"cuBLAS {vendor_us and round(vendor_us, 2)} us  ratio {row.get('ratio')}  valid {row['valid']}",
                  flush=True)
        del ref
        cupy.get_default_memory_pool().free_all_blocks()
        write(out, rows, skipped, target, args)
    write(out, rows, skipped, target, args)
    print(f"done in {time.time() - start:.0f} s; {out}/gemm_shapes_probe.md", flush=True)
    return 0 if all(r["valid"] for r in rows) else 1


def write(out: Path, rows, skipped, target, args) -> None:
    meta = dict(gpu=target.gpu, arch=target.arch, sms=target.sms, timing=args.timing, reps=args.reps,
                date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), skipped=skipped)
    (out / "gemm_shapes_probe.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    lines = [f"# Tensor-core gemm shapes probe (fp16): {target.gpu} ({target.arch}, {target.sms} SMs), {meta['date']}", "",
             f"timing: {args.timing}, median of {args.reps}; ratio = cuBLAS / kernelgen; model_us = "
             "kernelgen/ops/gemm_cost.py's estimate; meas/model = time_us / model_us", ""]
    cols = ["shape", "label", "family", "split_k", "registers", "model_us", "time_us", "meas_model", "cublas_us",
            "ratio", "valid"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r.get(c) for c in cols]
        cells = [f"{v:.1f}" if isinstance(v, float) and c.endswith("_us") else v for c, v in zip(cols, cells)]
        lines.append("| " + " | ".join("" if v is None else str(v) for v in cells) + " |"
                     + (f" {r['failure']}" if r.get("failure") else ""))
    if skipped:
        lines += ["", f"skipped (deadline): {', '.join(skipped)}"]
    (out / "gemm_shapes_probe.md").write_text("\n".join(lines) + "\n")


def problem_of(op, shape):
    return op.problem(dict(zip("MNK", shape[:3])), dtype="float16", layout=shape[3])


def listing(args) -> int:
    from kernelgen.target import target
    op = get_op("gemm")
    tgt = target("sm_90a")
    for shape in parse_shapes(args.shapes or SHAPES):
        for c in plan_candidates(op, problem_of(op, shape), tgt):
            print(f"{shape_name(shape):>20} {c['label']:<20} {c['family']:<14} sk{c['split_k']:<3} "
                  f"model {c['model_us']:>9} us")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", help="MxNxK[:LAYOUT],... (default: the failure classes' shapes)")
    ap.add_argument("--timing", default="events", choices=("events", "graph", "auto"))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel NVRTC compiles")
    ap.add_argument("--deadline", type=float, default=240.0, help="seconds after which no new shape starts")
    ap.add_argument("--list", action="store_true", help="print the candidates and estimates only (no GPU)")
    a = ap.parse_args()
    sys.exit(listing(a) if a.list else run(a))
