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
from .timing import describe, measure, measure_vendor, method_for, roofline
from .validate import validate

COLUMNS = ["step", "time_us", "GB/s", "TFLOP/s", "roofline", "speedup", "vs_vendor", "valid", "kernel"]


def bench_rows(op: Op, problem: Problem, *, ladder: bool = False, best_db: str | None = None,
               reps: int = 30, timing: str = "auto", given: Schedule | None = None, db=None) -> list[dict]:
    """The ladder (with `ladder`), the default schedule and the one chosen for `problem` (tune.defaults:
    your tuning database `db`, the GPU's tuned table, else the heuristic; the heuristic's pick too where it
    differs) -- or only `given` (a schedule the user named) -- then the tuning database's best (with
    `best_db`) and the vendor. Rows of a chosen schedule say where it came from ("schedule_source")."""
    from .tune.defaults import HEURISTIC, choose_default
    gpu.require()
    scheds = [(f"{i}. {s.title}", s.schedule, None) for i, s in enumerate(op.ladder(), 1)] if ladder else []
    if given is not None:
        scheds.append(("given schedule", given, None))
    else:
        default = op.default_schedule()
        chosen, source = choose_default(op, problem, gpu.device(), db)
        heuristic = chosen if source == HEURISTIC else op.schedule_for(problem, gpu.device())
        scheds.append(("default schedule", default, source if chosen == default else None))
        if chosen != default:
            label = "heuristic for this size" if source == HEURISTIC else "tuned default for this size"
            scheds.append((label, chosen, source))
        if heuristic not in (default, chosen):
            scheds.append(("heuristic for this size", heuristic, HEURISTIC))
    if best_db:
        from .tune.db import TuningDB
        rec = TuningDB(best_db).best(op.name, str(problem), gpu.device().arch)
        if rec is not None:  # sizes nobody tuned simply have no "tuned" row
            scheds.append(("tuned (best in db)", Schedule.from_dict(rec.schedule), None))
    vendor = measure_vendor(op, problem, reps=reps, timing=timing)
    rows, skipped = [], []
    for label, sched, source in scheds:
        try:
            prepare(op, sched, problem, gpu.device())
        except ScheduleError as e:  # e.g. the default keeps rows in registers and this row is longer
            skipped.append(f"{label}: not applicable to {problem}: {e}")
            continue
        v = validate(op, sched, problem, backend="gpu")
        m = measure(op, sched, problem, reps=reps, timing=timing)
        rows.append({"step": label, "time_us": m.time_us, "GB/s": m.gbps, "TFLOP/s": m.tflops,
                     "roofline": m.roofline, "valid": "ok" if v.ok else "WRONG", "kernel": m.kernel,
                     "timing": m.method, "schedule": sched.to_dict(), "schedule_source": source})
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
    method = method_for(timing, op, problem)
    notes = [f"note: {r['step']} timed by {r['timing']}" for r in rows if r.get("timing", method) != method]
    notes += [f"note: {r['step']}: schedule from {r['schedule_source']}" for r in rows
              if r.get("schedule_source") and r["step"] != "heuristic for this size"]
    head = ("\n\n" if markdown else "\n").join([
        f"{op.name} {problem} on {dev.gpu} ({dev.arch}), {datetime.date.today()}, kernelgen {config.VERSION}; "
        f"speedup vs the first row, vs_vendor = vendor time / this time", describe(method, op, problem, reps), *notes])
    rows = [_fmt(r) for r in rows]
    if markdown:
        lines = [head, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
        return "\n".join(lines)
    return head + "\n" + table(rows, COLUMNS)


# -- shape suites --------------------------------------------------------------------------------
SUITE_COLUMNS = ["#", "op", "problem", "time_us", "vendor_us", "vs_vendor", "valid", "from", "kernel"]
SLOW_BELOW = 0.8     # a shape under this ratio to the vendor is counted apart (issue 14's floor)


def suite_row(op: Op, problem: Problem, line: int, *, reps: int, timing: str, db=None) -> dict:
    """One shape on its default schedule (tune.defaults.choose_default: your tuning database, the GPU's
    tuned table, else the heuristic): validated, timed, and the vendor timed the same way. A shape the
    schedule cannot take, or that cannot be validated here, is a row that says why (the suite goes on)."""
    from .errors import KernelgenError
    from .tune.defaults import choose_default
    row = {"#": line, "op": op.name, "problem": str(problem), "time_us": None, "vendor_us": None,
           "vs_vendor": None, "valid": "-", "kernel": "-", "note": "", "schedule": None, "source": "-"}
    try:
        sched, source = choose_default(op, problem, gpu.device(), db)
        row.update(schedule=sched.to_dict(), source=source)
        prep = prepare(op, sched, problem, gpu.device())
        row["kernel"] = prep.kernel.name
        v = validate(op, sched, problem, backend="gpu")
        row["valid"] = "ok" if v.ok else "WRONG"
        if not v.ok:
            row["note"] = v.summary()
        m = measure(op, sched, problem, reps=reps, timing=timing)
        row.update(time_us=m.time_us, timing=m.method)
    except KernelgenError as e:          # refused (ScheduleError, UsageError) or failed to compile
        row.update(valid="refused", note=str(e).splitlines()[0])
        return row
    vendor = measure_vendor(op, problem, reps=reps, timing=timing)
    if vendor:
        row.update(vendor=vendor[0], vendor_us=vendor[1].time_us, vs_vendor=vendor[1].time_us / row["time_us"])
    return row


def geomean(xs: list[float]) -> float:
    import math
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def suite_summary(rows: list[dict]) -> list[str]:
    """Per op: the geometric mean of vendor time / kernelgen time, the slowest shape, the count under
    SLOW_BELOW, and the shapes refused or wrong."""
    out = []
    for name in dict.fromkeys(r["op"] for r in rows):
        mine = [r for r in rows if r["op"] == name]
        timed = [r for r in mine if r["vs_vendor"] is not None and r["valid"] == "ok"]
        bad = [r for r in mine if r["valid"] in ("refused", "WRONG")]
        line = f"{name}: {len(mine)} shapes"
        if timed:
            worst = min(timed, key=lambda r: r["vs_vendor"])
            slow = sum(r["vs_vendor"] < SLOW_BELOW for r in timed)
            line += (f", {len(timed)} timed against the vendor: geometric mean {geomean([r['vs_vendor'] for r in timed]):.2f}x, "
                     f"min {worst['vs_vendor']:.2f}x ({worst['problem']}), {slow} under {SLOW_BELOW}x")
        if bad:
            line += f"; {sum(r['valid'] == 'refused' for r in bad)} refused, {sum(r['valid'] == 'WRONG' for r in bad)} wrong"
        out.append(line)
    return out


def format_suite(name: str, rows: list[dict], markdown: bool, *, timing: str, reps: int, shard: str = "") -> str:
    dev = gpu.device()
    head = (f"suite {name}{shard} on {dev.gpu} ({dev.arch}), {datetime.date.today()}, kernelgen {config.VERSION}; "
            f"each shape on its default schedule (from: your tuning database, the GPU's tuned table, else the "
            f"heuristic), vs_vendor = vendor time / kernelgen time; timing {timing}, median of {reps}")
    cells = [{"#": r["#"], "op": r["op"], "problem": r["problem"], "kernel": r["kernel"], "valid": r["valid"],
              "from": r.get("source", "-").split(" (")[0],
              "time_us": "-" if r["time_us"] is None else f"{r['time_us']:.1f}",
              "vendor_us": "-" if r["vendor_us"] is None else f"{r['vendor_us']:.1f}",
              "vs_vendor": "-" if r["vs_vendor"] is None else f"{r['vs_vendor']:.2f}x"} for r in rows]
    notes = [f"note: line {r['#']} {r['op']} {r['problem']}: {r['note']}" for r in rows if r["note"]]
    summary = suite_summary(rows)
    if markdown:
        lines = [head, "", "| " + " | ".join(SUITE_COLUMNS) + " |", "|" + "---|" * len(SUITE_COLUMNS)]
        lines += ["| " + " | ".join(str(c[k]) for k in SUITE_COLUMNS) + " |" for c in cells]
        return "\n".join([*lines, "", *notes, "", *summary])
    return "\n".join([head, table(cells, SUITE_COLUMNS), *notes, *summary])


def suite_document(work: list, rows: list[dict], reps: int, timing: str) -> dict:
    """The suite's timed shapes so far as a results document: one run per shape, kernelgen's row and the vendor's."""
    from . import results
    from .tune.defaults import HEURISTIC
    dev = gpu.device()
    runs = []
    for (e, op, problem), r in zip(work, rows):
        if r["time_us"] is None:
            continue
        how = describe(method_for(timing, op, problem), op, problem, reps).removeprefix("timing: ")
        mine = {"step": "heuristic for this size" if r["source"] == HEURISTIC else "tuned default for this size",
                "kernel": r["kernel"], "schedule": r["schedule"], "schedule_source": r["source"],
                "time_us": r["time_us"], "valid": r["valid"], "timing": r.get("timing")}
        pair = [mine] + ([{"step": f"vendor: {r['vendor']}", "kernel": r["vendor"], "time_us": r["vendor_us"],
                           "valid": "-"}] if r["vendor_us"] else [])
        runs.append(results.run_dict(op, problem, dev, with_rates(op, problem, pair, r), ladder=False, timing=how))
    return results.document("bench", device=results.device_dict(dev), runs=runs)


def with_rates(op, problem, pair: list[dict], r: dict) -> list[dict]:
    """The roofline columns bench rows carry, from the times (the suite table leaves them out)."""
    vendor = r["vendor_us"]
    for row in pair:
        gbps, tflops, frac, _ = roofline(op, problem, row["time_us"])
        row.update({"GB/s": gbps, "TFLOP/s": tflops, "roofline": frac, "speedup": pair[0]["time_us"] / row["time_us"],
                    "vs_vendor": vendor / row["time_us"] if vendor else float("nan")})
    return pair


def run_suite(name: str, work: list, *, reps: int, timing: str, json_file: str | None = None, db=None) -> list[dict]:
    """Each (entry, op, problem) of `work` benched on the GPU in turn, with a progress line on stderr;
    with `json_file`, the results document is rewritten (atomically) after every shape, so a run
    stopped half-way keeps what it measured."""
    import sys

    from . import results
    from .tune.progress import Progress
    progress = Progress(total=len(work), label=f"suite {name}", stream=sys.stderr)
    rows = []
    for e, op, problem in work:
        rows.append(suite_row(op, problem, e.line, reps=reps, timing=timing, db=db))
        progress.measured += 1
        progress.failed += rows[-1]["valid"] in ("refused", "WRONG")
        progress.show()
        if json_file:
            results.write(suite_document(work, rows, reps, timing), json_file)
    progress.show(final=True)
    return rows
