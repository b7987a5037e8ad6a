"""Benchmark tables: each schedule validated, timed, placed on the roofline, and compared with the
vendor library measured in the same process and run, both timed the same way (`timing.py`: CUDA
events around one launch, or CUDA-graph replays over rotating input sets for small problems).

>>> from kernelgen.bench import COLUMNS
>>> COLUMNS[:3]
['step', 'time_us', 'GB/s']
"""
from __future__ import annotations

import datetime

from . import config, gpu
from .errors import ScheduleError
from .ops.base import Op, Problem
from .prepared import prepare
from .schedule import Schedule
from .timing import choose_method, describe, measure, measure_vendor
from .validate import validate

COLUMNS = ["step", "time_us", "GB/s", "TFLOP/s", "roofline", "speedup", "vs_vendor", "valid", "kernel"]


def bench_rows(op: Op, problem: Problem, *, ladder: bool = False, best_db: str | None = None,
               reps: int = 30, timing: str = "auto") -> list[dict]:
    gpu.require()
    scheds = [(f"{i}. {s.title}", s.schedule) for i, s in enumerate(op.ladder(), 1)] if ladder else []
    scheds.append(("default schedule", op.default_schedule()))
    heuristic = op.schedule_for(problem, gpu.device())
    if heuristic != op.default_schedule():
        scheds.append(("heuristic for this size", heuristic))
    if best_db:
        from .tune.db import TuningDB
        rec = TuningDB(best_db).best(op.name, str(problem), gpu.device().arch)
        if rec is not None:  # sizes nobody tuned simply have no "tuned" row
            scheds.append(("tuned (best in db)", Schedule.from_dict(rec.schedule)))
    vendor = measure_vendor(op, problem, reps=reps, timing=timing)
    rows, skipped = [], []
    for label, sched in scheds:
        try:
            prepare(op, sched, problem, gpu.device())
        except ScheduleError as e:  # e.g. the default keeps rows in registers and this row is longer
            skipped.append(f"{label}: not applicable to {problem}: {e}")
            continue
        v = validate(op, sched, problem, backend="gpu")
        m = measure(op, sched, problem, reps=reps, timing=timing)
        rows.append({"step": label, "time_us": m.time_us, "GB/s": m.gbps, "TFLOP/s": m.tflops,
                     "roofline": m.roofline, "valid": "ok" if v.ok else "WRONG", "kernel": m.kernel,
                     "timing": m.method, "schedule": sched.to_dict()})
    if vendor:
        label, m = vendor
        rows.append({"step": f"vendor: {label}", "time_us": m.time_us, "GB/s": m.gbps, "TFLOP/s": m.tflops,
                     "roofline": m.roofline, "valid": "-", "kernel": label, "timing": m.method,
                     "schedule": None})
    for note in skipped:
        print(f"note: {note}")
    first = rows[0]["time_us"]
    for r in rows:
        r["speedup"] = first / r["time_us"]
        r["vs_vendor"] = vendor[1].time_us / r["time_us"] if vendor else float("nan")
    return rows


def table(rows: list[dict], cols: list[str]) -> str:
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols), "  ".join("-" * widths[c] for c in cols)]
    lines += ["  ".join(str(r.get(c, "")).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(lines)


def _fmt(r: dict) -> dict:
    return dict(r, time_us=f"{r['time_us']:.1f}", **{"GB/s": f"{r['GB/s']:.0f}", "TFLOP/s": f"{r['TFLOP/s']:.2f}",
                "roofline": f"{r['roofline']:.0%}", "speedup": f"{r['speedup']:.2f}x",
                "vs_vendor": f"{r['vs_vendor']:.2f}x"})


def format_rows(op: Op, problem: Problem, rows: list[dict], markdown: bool, *, timing: str = "auto",
                reps: int = 30) -> str:
    dev = gpu.device()
    method = choose_method(timing, op.bytes_moved(problem))
    notes = [f"note: {r['step']} timed by {r['timing']}" for r in rows if r.get("timing", method) != method]
    head = ("\n\n" if markdown else "\n").join([
        f"{op.name} {problem} on {dev.gpu} ({dev.arch}), {datetime.date.today()}, kernelgen {config.VERSION}; "
        f"speedup vs the first row, vs_vendor = vendor time / this time", describe(method, op, problem, reps), *notes])
    rows = [_fmt(r) for r in rows]
    if markdown:
        lines = [head, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
        return "\n".join(lines)
    return head + "\n" + table(rows, COLUMNS)
