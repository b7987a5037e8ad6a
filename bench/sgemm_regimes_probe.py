"""Time SGEMM schedule candidates per shape regime against cuBLAS, beside the cost model's estimate,
to calibrate kernelgen/ops/sgemm_cost.py (COSTS and the FAMILIES' efficiencies). One GPU call:

    PYTHONPATH=. python3 bench/sgemm_regimes_probe.py                 # writes $OUT/sgemm_regimes_probe.{json,md}
    PYTHONPATH=. python3 bench/sgemm_regimes_probe.py --list          # no GPU: the candidates and estimates
    PYTHONPATH=. python3 bench/sgemm_regimes_probe.py --shapes 4096x8x100000,1000x1000x1000 --timing auto
    PYTHONPATH=. python3 bench/sgemm_regimes_probe.py --shapes 8457x35x4096:NT --families all   # every family
    PYTHONPATH=. python3 bench/sgemm_regimes_probe.py --shapes 8457x35x4096:NT \
        --extra "layout=contiguous,wm=0,wn=0,bm=256,bn=40,tn=5,vec_c=1,split_k=4,reduce_k=workspace"  # a tile of your own

Shapes are representative of each regime and none is one of DeepBench's. Per shape the candidates are
schedule_for's pick, the pick summed the other way (atomic / workspace), its family with half and twice
the K slices, the best of the next families the model ranks, and the default schedule (K whole); with
`--families all`, instead, every family at the slices the model ranks best for it (what calibrates the
families' efficiencies). A shape may carry its operand layout (`MxNxK:NT`). Each
is compiled (in parallel, before any timing), validated once on the GPU against a float64 product
(inputs are small integers: the check is exact while 9K < 2^24), then timed with kernelgen.timing
(events, L2 flushed, unless --timing says otherwise); cuBLAS (TF32 off) is timed the same way on the
same inputs. Results are written after every shape, so a run stopped by the deadline keeps what it
measured. Columns: model_us (the cost model's estimate), time_us, cublas_us, ratio = cuBLAS / kernelgen.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen.ops import get_op                            # noqa: E402
from kernelgen.ops.sgemm_cost import candidates              # noqa: E402

SHAPES = (   # (M, N, K): none is a DeepBench shape
    (4096, 8, 100000),    # very long K, 8 columns
    (600, 24, 300000),    # very long K, 24 columns
    (1, 4096, 4096),      # a row times a matrix
    (16, 5000, 4000),     # skinny M
    (130, 7000, 2500),    # skinny-ish M
    (3000, 64, 2000),     # skinny N
    (5000, 100, 1500),    # skinny-ish N, not a power of two
    (777, 1531, 999),     # small, ragged
    (512, 512, 512),      # small
    (1000, 1000, 1000),   # small, cannot fill 132 SMs with big tiles
    (2047, 2049, 1023),   # ragged, odd K and N (element-wise loads)
    (6000, 6000, 6000),   # large
)
OTHER_FAMILIES = 4


def knob_key(knobs: dict) -> tuple:
    return tuple(sorted(knobs.items()))


def shape_candidates(op, shape, target, args) -> list[dict]:
    """plan_candidates' for one shape, then each --extra over schedule_for's knobs (its first row)."""
    found = plan_candidates(op, problem_of(op, shape), target, args.families == "all")
    return found + extra_candidates(op, problem_of(op, shape), target, args.extra, found[0]["knobs"])


def extra_candidates(op, problem, target, extra: list[str], base: dict) -> list[dict]:
    """Candidates the model does not rank: each `k=v,k=v` over the knobs `base`; a knob set the schedule
    checks refuse is left out with its message printed."""
    out = []
    for text in extra:
        k = dict(base, **dict(op.parse_knob(kv) for kv in text.split(",")))
        try:
            op.kernel(op.schedule_from_knobs(**k), target, None, problem.layout)
        except Exception as e:
            print(f"--extra {text}: {e}", flush=True)
            continue
        out.append(dict(label="extra", family=text, split_k=k["split_k"], reduce_k=k["reduce_k"], model_us=None,
                        knobs=k))
    return out


def plan_candidates(op, problem, target, every_family: bool = False) -> list[dict]:
    """[{label, family, split_k, reduce_k, model_us, knobs}] for one shape, deduplicated."""
    ranked = candidates(op, problem, target)
    if every_family:
        firsts = {}
        for c in ranked:
            firsts.setdefault(c.family, c)
        return [dict(label="best of family" if i else "schedule_for", family=c.family, split_k=c.split_k,
                     reduce_k=c.reduce_k, model_us=round(c.seconds * 1e6, 2), knobs=dict(c.knobs))
                for i, c in enumerate(firsts.values())]
    by = {(c.family, c.split_k, c.reduce_k): c for c in ranked}
    out, seen = [], set()

    def add(label, choice):
        if choice is None:
            return
        k = dict(choice.knobs)
        if knob_key(k) in seen:
            return
        seen.add(knob_key(k))
        out.append(dict(label=label, family=choice.family, split_k=choice.split_k, reduce_k=choice.reduce_k,
                        model_us=round(choice.seconds * 1e6, 2), knobs=k))

    pick = ranked[0]
    add("schedule_for", pick)
    if pick.split_k > 1:
        add("pick, other reduction", by.get((pick.family, pick.split_k,
                                             "atomic" if pick.reduce_k == "workspace" else "workspace")))
        half = max(1, pick.split_k // 2)
        add("pick, half the slices", by.get((pick.family, half, pick.reduce_k if half > 1 else "atomic")))
    reduce_k = pick.reduce_k if pick.split_k > 1 else "workspace"
    twice = [c for c in ranked if c.family == pick.family and c.reduce_k == reduce_k and c.split_k > pick.split_k]
    add("pick, more slices", min(twice, key=lambda c: c.split_k) if twice else None)
    others = []
    for c in ranked:
        if c.family != pick.family and c.family not in others:
            others.append(c.family)
            add(f"next family #{len(others)}", c)
            if len(others) == OTHER_FAMILIES:
                break
    default = by.get(("256x128", 1, "atomic"))
    add("default (K whole)", default)
    return out


def _compile(job):
    from kernelgen.compile import compile_cuda
    from kernelgen.inspect import facts_of
    source, arch, name = job
    try:
        facts = {f.symbol: f for f in facts_of(compile_cuda(source, arch, name))}
        main = facts.get(name)
        return name, ("", main.registers if main else None, sum(f.spill_bytes for f in facts.values()))
    except Exception as e:                       # recorded per candidate, the rest go on
        return name, (f"{type(e).__name__}: {str(e).splitlines()[0][:200]}", None, None)


def compile_all(op, schedules, target, jobs: int) -> dict[str, tuple]:
    """schedules: (schedule, operand layout) pairs."""
    """Compile every kernel once (the disk cache keeps them for prepare); {kernel name: (error or '',
    the main kernel's registers, spilled bytes of all its kernels)}: the registers tell the blocks an SM
    really holds, which the model estimates."""
    from kernelgen.render import render
    work = {}
    for s, layout in schedules:
        k = op.kernel(s, target, None, layout)
        work.setdefault(k.name, (render(k), k.arch, k.name))
    import multiprocessing                       # spawn: the parent already holds a CUDA context
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return dict(pool.map(_compile, work.values()))


def check_output(op, sched, problem, ref, tol) -> tuple[bool, float]:
    """One launch on the timing inputs, C poisoned with NaN first; (ok, max |C - ref|)."""
    import cupy
    from kernelgen import gpu
    from kernelgen.timing import device_sets, launchers
    _, (launch,) = launchers(op, sched, problem, 1)
    c = device_sets(op, problem, 1)[0]["C"]
    c.fill(math.nan)
    launch()
    gpu.synchronize_checked("sgemm")
    err = float(cupy.nan_to_num(cupy.abs(c.astype(cupy.float64) - ref), nan=math.inf).max())
    return err <= tol, err


def run(args) -> int:
    import cupy
    from kernelgen import gpu
    from kernelgen.timing import device_sets, measure, measure_vendor
    op = get_op("sgemm")
    target = gpu.device()
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    shapes = parse_shapes(args.shapes)
    plans = [(s, shape_candidates(op, s, target, args)) for s in shapes]
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
                row["valid"], row["max_error"] = check_output(op, sched, problem, ref, op.tolerance(problem))
                m = measure(op, sched, problem, reps=args.reps, timing=args.timing)
                row.update(time_us=round(m.time_us, 2), tflops=round(m.tflops, 2), method=m.method,
                           ratio=round(vendor_us / m.time_us, 3) if vendor_us else None)
            except Exception as e:   # a failure is a row, the probe goes on
                row.update(valid=False, time_us=None, ratio=None, failure=f"{type(e).__name__}: {str(e)[:200]}")
            rows.append(row)
            print(f"{row['shape']:>18} {row['label']:<24} {row['family']:<17} sk{row['split_k']:<3} "
                  f"{row['reduce_k']:<9} model {str(row['model_us']):>9} us  time {row.get('time_us')} us  "
                  f"cuBLAS {vendor_us and round(vendor_us, 2)} us  ratio {row.get('ratio')}  valid {row['valid']}",
                  flush=True)
        del ref
        cupy.get_default_memory_pool().free_all_blocks()
        write(out, rows, skipped, target, args)
    write(out, rows, skipped, target, args)
    print(f"done in {time.time() - start:.0f} s; {out}/sgemm_regimes_probe.md", flush=True)
    return 0 if all(r["valid"] for r in rows) else 1


def write(out: Path, rows, skipped, target, args) -> None:
    meta = dict(gpu=target.gpu, arch=target.arch, sms=target.sms, timing=args.timing, reps=args.reps,
                date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), skipped=skipped)
    (out / "sgemm_regimes_probe.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    lines = [f"# SGEMM regimes probe: {target.gpu} ({target.arch}, {target.sms} SMs), {meta['date']}", "",
             f"timing: {args.timing}, median of {args.reps}; ratio = cuBLAS (TF32 off) / kernelgen; model_us = "
             "kernelgen/ops/sgemm_cost.py's estimate", ""]
    cols = ["shape", "label", "family", "split_k", "reduce_k", "registers", "model_us", "time_us", "cublas_us", "ratio",
            "valid"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r.get(c) for c in cols]
        cells = [f"{v:.1f}" if isinstance(v, float) and c.endswith("_us") else v for c, v in zip(cols, cells)]
        lines.append("| " + " | ".join("" if v is None else str(v) for v in cells) + " |"
                     + (f" {r['failure']}" if r.get("failure") else ""))
    if skipped:
        lines += ["", f"skipped (deadline): {', '.join(skipped)}"]
    (out / "sgemm_regimes_probe.md").write_text("\n".join(lines) + "\n")


def parse_shapes(text: str | None) -> tuple:
    """((M, N, K, layout), ...) from "MxNxK[:LAYOUT],..."."""
    if not text:
        return tuple((*s, "NN") for s in SHAPES)
    out = []
    for s in text.split(","):
        dims, _, layout = s.partition(":")
        out.append((*(int(v) for v in dims.lower().split("x")), layout.upper() or "NN"))
    return tuple(out)


def problem_of(op, shape):
    return op.problem(dict(zip("MNK", shape[:3])), layout=shape[3])


def shape_name(shape) -> str:
    return "x".join(map(str, shape[:3])) + ("" if shape[3] == "NN" else f":{shape[3]}")


def listing(args) -> int:
    from kernelgen.target import target
    op = get_op("sgemm")
    tgt = target("sm_90a")
    for shape in parse_shapes(args.shapes):
        for c in shape_candidates(op, shape, tgt, args):
            print(f"{shape_name(shape):>18} {c['label']:<24} {c['family']:<17} sk{c['split_k']:<3} "
                  f"{c['reduce_k']:<9} model {str(c['model_us']):>9} us")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", help="MxNxK,MxNxK,... (default: the regimes' shapes)")
    ap.add_argument("--families", default="near", choices=("near", "all"),
                    help="near: the pick and its neighbours; all: every family at its best slices")
    ap.add_argument("--extra", action="append", default=[],
                    help="k=v,k=v: one more candidate, these knobs over schedule_for's (repeatable)")
    ap.add_argument("--timing", default="events", choices=("events", "graph", "auto"))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel NVRTC compiles")
    ap.add_argument("--deadline", type=float, default=240.0, help="seconds after which no new shape starts")
    ap.add_argument("--list", action="store_true", help="print the candidates and estimates only (no GPU)")
    a = ap.parse_args()
    sys.exit(listing(a) if a.list else run(a))
