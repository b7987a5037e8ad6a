"""Tuned defaults at scale (issue 13): tune every shape of a suite briefly, then time each shape's default
schedule with the tuned table beside the heuristic, the per-shape tuned best and the vendor. The GPU parts
of bench/tuned_defaults.sh; `--dry-run` runs the same code on the CPU with made-up times (no GPU, no NVRTC).

  python3 bench/tuned_defaults.py tune    --suite deepbench-conv-train --db T.jsonl --until EPOCH [--budget 32]
  python3 -m kernelgen.cli tune-db table  --db T.jsonl --gpu H100 -o h100.json
  python3 bench/tuned_defaults.py measure --suite deepbench-conv-train --db T.jsonl --table h100.json \
      --out tuned_defaults.md --until EPOCH

`tune` runs the model-guided search of `kernelgen tune --strategy model` shape after shape in one process,
with one GPU worker and one builder pool for the whole suite (a process per shape would spend seconds each
starting CUDA, 16 builders and scikit-learn), every record appended to --db as it is measured. Each shape
gets an equal share of the time left until --until (and at most --budget candidates), so the suite ends in
time whatever the shapes cost; the model learns from the shapes before it (and --history files).

`measure` times, per shape, in one process and the same way (`kernelgen bench`'s timing): the default
`choose_default` picks with the table (your database left out), the table's choice with this shape's own
entry left out (what a shape nobody tuned gets), the heuristic (`schedule_for`), the tuned best in --db, and
the vendor; the table's problems outside the suite are timed too. Each distinct schedule is timed once per
shape. The markdown is rewritten after every shape, so a run stopped at --until keeps what it measured; the
vendor times are written into the table's vendor_us.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen.ops import get_op  # noqa: E402
from kernelgen.sizes import parse_size  # noqa: E402
from kernelgen.tune.db import MemoryDB, TuningDB, standing  # noqa: E402
from kernelgen.tune.runners import Outcome  # noqa: E402


def suite_work(name: str) -> list:
    from kernelgen import suites
    return [(get_op(e.op), parse_size(get_op(e.op), e.size, False, e.dtype, None)) for e in suites.load(name).entries]


class DryRunner:
    """Made-up times, the same for a schedule and problem in every process: the CPU check of this script."""

    def __init__(self):
        from kernelgen.target import target
        self.arch, self.gpu, self.limits = "sm_90a", "H100 80GB HBM3", target("sm_90a")

    def __call__(self, op, sched, problem) -> Outcome:
        return Outcome("ok", dry_time(sched, problem))


def dry_time(sched, problem) -> float:
    return 100.0 + zlib.crc32(f"{sched.to_json()}{problem}".encode()) % 1000 / 10


# -- tune --------------------------------------------------------------------------------------------
def tune_suite(work: list, runner, builders, db: TuningDB, *, until: float, budget: int, batch: int,
               history: list, strategy: str, out=sys.stdout) -> None:
    from kernelgen.tune import tune
    from kernelgen.tune.history import observations
    for i, (op, problem) in enumerate(work):
        now = time.time()
        if now >= until:
            print(f"deadline: {len(work) - i} shapes left untuned", file=out, flush=True)
            return
        slot_end = now + (until - now) / (len(work) - i)
        seen = observations(op, problem, db.records() + history, runner.gpu)
        result = tune(op, problem, runner=runner, strategy=strategy, budget=budget, seed=i, db=db, resume=True,
                      progress=False, batch=batch, builders=builders, ahead=2, history=seen,
                      stop=lambda _: time.time() > slot_end)
        best = f"best {result.best.time_us:.1f} us" if result.best else "none correct"
        fails = sum(result.failures.values())
        print(f"{i + 1}/{len(work)} {problem}: {result.measured} measured ({result.skipped} already), {fails} failed, "
              f"{best}, {time.time() - now:.1f} s", file=out, flush=True)


def cmd_tune(args) -> None:
    from kernelgen.tune import GpuRunner, model
    from kernelgen.tune.builder import Builders
    from kernelgen.tune.worker import ProcessRunner
    strategy = args.strategy
    if strategy == "model" and not model.available():
        print("scikit-learn is missing: the model strategy falls back to random", flush=True)
        strategy = "random"
    work = suite_work(args.suite)
    db = TuningDB(args.db)
    db.check(writable=True)
    history = [r for f in args.history for r in TuningDB(f).records()]
    if args.dry_run:
        tune_suite(work, DryRunner(), None, db, until=args.until, budget=args.budget, batch=args.batch,
                   history=history, strategy=strategy)
        return
    make = functools.partial(GpuRunner, args.reps, 1000.0, "auto")
    with ProcessRunner(make, args.limit_s) as runner, Builders(args.jobs) as builders:
        tune_suite(work, runner, builders, db, until=args.until, budget=args.budget, batch=args.batch,
                   history=history, strategy=strategy)


# -- measure -----------------------------------------------------------------------------------------
COLUMNS = ["#", "problem", "default_us", "from", "unseen_us", "unseen from", "heuristic_us", "tuned_us", "vendor_us",
           "default/tuned", "unseen/tuned", "heuristic/tuned", "vendor/default"]


def best_records(records: list) -> dict:
    """(op, problem, arch) -> the fastest standing record (TuningDB.best, for all problems at once: best() reads
    every record per call)."""
    best = {}
    for r in standing(records):
        k = (r.op, r.problem, r.arch)
        if k not in best or r.time_us < best[k].time_us:
            best[k] = r
    return best


def choices(op, problem, dev, table, tuned: dict) -> dict:
    """label -> (schedule, source) of the columns that time a kernelgen schedule (None where there is none)."""
    from kernelgen.schedule import Schedule
    from kernelgen.tune.defaults import choose_default
    from kernelgen.tune.db import dtype_of
    own = [e for e in table.entries if (e.op, e.problem, e.dtype) == (op.name, str(problem), dtype_of(problem))]
    unseen = dataclasses.replace(table, entries=tuple(e for e in table.entries if e not in own))
    rec = tuned.get((op.name, str(problem), dev.arch))
    return {"default": choose_default(op, problem, dev, MemoryDB(), table),
            "unseen": choose_default(op, problem, dev, MemoryDB(), unseen),
            "heuristic": (op.schedule_for(problem, dev), "heuristic"),
            "tuned": (Schedule.from_dict(rec.schedule), "db") if rec else None}


def short(source: str) -> str:
    """`tuned table h100 (nearest: P)` -> `table: P`."""
    if source.startswith("tuned table"):
        return "table: " + source.partition("nearest: ")[2].rstrip(")")
    return source


def ratio(a, b) -> float | None:
    return a / b if a and b else None


def row_of(i: int, problem, times: dict, picked: dict, vendor) -> dict:
    t = {k: times.get(v[0]) if v else None for k, v in picked.items()}
    return {"#": i, "problem": str(problem), "default_us": t["default"], "from": short(picked["default"][1]),
            "unseen_us": t["unseen"], "unseen from": short(picked["unseen"][1]), "heuristic_us": t["heuristic"],
            "tuned_us": t["tuned"], "vendor_us": vendor, "default/tuned": ratio(t["default"], t["tuned"]),
            "unseen/tuned": ratio(t["unseen"], t["tuned"]), "heuristic/tuned": ratio(t["heuristic"], t["tuned"]),
            "vendor/default": ratio(vendor, t["default"])}


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summary(rows: list[dict]) -> list[str]:
    """Per column against the tuned best: geometric mean, worst, count within 10%; the default vs the vendor."""
    out = []
    for col in ("default/tuned", "unseen/tuned", "heuristic/tuned"):
        xs = [(r[col], r["problem"]) for r in rows if r[col]]
        if xs:
            worst = max(xs)
            out.append(f"- {col}: geometric mean {geomean([x for x, _ in xs]):.3f} over {len(xs)} shapes, "
                       f"{sum(x <= 1.10 for x, _ in xs)} within 10% of the tuned best, worst {worst[0]:.2f} ({worst[1]})")
    v = [r["vendor/default"] for r in rows if r["vendor/default"]]
    if v:
        out.append(f"- vendor time / default time: geometric mean {geomean(v):.3f} over {len(v)} shapes")
    return out


def markdown(head: list[str], rows: list[dict]) -> str:
    def cell(v):
        return "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)
    lines = [*head, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join([*lines, "", *summary(rows), ""])


def cmd_measure(args) -> None:
    from kernelgen import config
    from kernelgen.results import write_text
    from kernelgen.tune.defaults import read_table, write_table
    from kernelgen.tune.history import parse_problem
    table = read_table(args.table)
    tuned = best_records([r for f in [args.db, *args.more_db] for r in TuningDB(f).records()])
    work = suite_work(args.suite)
    listed = {(op.name, str(p)) for op, p in work}
    for e in table.entries:          # the table's other problems (earlier sweeps) are its claims too
        if (e.op, e.problem) not in listed:
            op = get_op(e.op)
            work.append((op, parse_problem(op, e.problem, e.dtype)))
    if args.dry_run:
        dev, timer = DryRunner().limits, None
    else:
        from kernelgen import gpu
        dev, timer = gpu.device(), functools.partial(gpu_times, reps=args.reps)
    head = [f"# Tuned defaults on {dev.gpu} ({dev.arch}), {time.strftime('%Y-%m-%d')}, kernelgen {config.VERSION}",
            "", f"Suite {args.suite} tuned into {args.db}; table {args.table} ({len(table.entries)} entries). "
            "default: `choose_default` with the table (your database left out); unseen: the same with this "
            "shape's own entry left out (the nearest other shape's schedule, else the heuristic); heuristic: "
            "`schedule_for`; tuned: the best in the database. Times in us, each timed here the same way (bench's "
            f"timing, median of {args.reps}); x/tuned > 1 is slower than the tuned best."]
    write_text(markdown(head, []), args.out)
    picks = [choices(op, p, dev, table, tuned) for op, p in work]
    if timer is not None:
        precompile(work, picks, dev, args.jobs, args.until)
    rows, vendor_us, beside = [], {}, {}
    for i, ((op, p), picked) in enumerate(zip(work, picks), 1):
        if time.time() > args.until:
            head.append(f"\nStopped at the deadline: {len(work) - i + 1} shapes not timed.")
            break
        scheds = list(dict.fromkeys(v[0] for v in picked.values() if v))
        if timer is None:
            times, vendor = {s: dry_time(s, p) for s in scheds}, 90.0
        else:
            times, vendor = timer(op, p, scheds)
        rows.append(row_of(i, p, times, picked, vendor))
        vendor_us[(op.name, str(p))] = vendor
        beside[(op.name, str(p))] = (rows[-1]["tuned_us"], rows[-1]["heuristic_us"])
        write_text(markdown(head, rows), args.out)
        print(f"{i}/{len(work)} {p}: " + ", ".join(f"{k} {rows[-1][k]:.1f}" for k in ("default_us", "tuned_us")
                                                   if rows[-1][k]), flush=True)
    write_text(markdown(head, rows), args.out)
    doc = table_doc(args.table)
    for e in doc["entries"]:     # the entry's time and the heuristic's, measured side by side (choose_default
        key = (e["op"], e["problem"])   # passes over an entry the heuristic matched), and the vendor's
        e["vendor_us"] = vendor_us.get(key, e.get("vendor_us"))
        tuned_us, heuristic_us = beside.get(key, (None, None))
        if tuned_us and heuristic_us:
            e["time_us"], e["heuristic_us"] = tuned_us, heuristic_us
    write_table(doc, args.table)
    print(f"wrote {args.out} ({len(rows)} shapes) and the heuristic's, the table's and the vendor's times into {args.table}")


def table_doc(path: str) -> dict:
    import json
    return json.loads(Path(path).read_text())


def precompile(work, picks, dev, jobs: int, until: float) -> None:
    """Every schedule to be timed compiled at once in a builder pool (the disk cache keeps them)."""
    import concurrent.futures
    from kernelgen.errors import KernelgenError
    from kernelgen.tune.builder import Builders
    with Builders(jobs) as pool:
        futures = [pool.submit(op, s, p, dev) for (op, p), picked in zip(work, picks)
                   for s in dict.fromkeys(v[0] for v in picked.values() if v)]
        for job in futures:
            try:
                job.result(timeout=max(1.0, until - time.time()))
            except concurrent.futures.TimeoutError:
                return
            except KernelgenError as e:   # timed (and reported) as failing in gpu_times
                print(f"  build: {e}", flush=True)


def gpu_times(op, problem, scheds, *, reps: int):
    """{schedule: median us} and the vendor's us, timed as `kernelgen bench` times them; one that fails has none."""
    from kernelgen.timing import measure, measure_vendor
    times, vendor = {}, None
    for s in scheds:
        try:
            times[s] = measure(op, s, problem, reps=reps, timing="auto").time_us
        except Exception as e:        # noqa: BLE001  (one shape's failure is a gap in the table, not the end of the run)
            print(f"  {problem}: {type(e).__name__}: {e}", flush=True)
    try:
        found = measure_vendor(op, problem, reps=reps, timing="auto")
        vendor = found[1].time_us if found else None
    except Exception as e:            # noqa: BLE001
        print(f"  {problem}: vendor: {type(e).__name__}: {e}", flush=True)
    return times, vendor


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("tune", "measure"):
        p = sub.add_parser(name)
        p.add_argument("--suite", default="deepbench-conv-train")
        p.add_argument("--db", required=True, help="the tuning database the tune writes and measure reads")
        p.add_argument("--until", type=float, required=True, help="stop by this time (seconds since the epoch)")
        p.add_argument("--jobs", type=int, default=16)
        p.add_argument("--dry-run", action="store_true", help="made-up times on the CPU: check this script")
    t, m = sub.choices["tune"], sub.choices["measure"]
    t.add_argument("--budget", type=int, default=32, help="candidates per shape at most")
    t.add_argument("--batch", type=int, default=8)
    t.add_argument("--strategy", default="model")
    t.add_argument("--reps", type=int, default=10)
    t.add_argument("--limit-s", type=float, default=30.0)
    t.add_argument("--history", action="append", default=[], help="records of other shapes the model learns from")
    m.add_argument("--more-db", action="append", default=[], help="more records for the tuned column (earlier sweeps)")
    m.add_argument("--table", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--reps", type=int, default=10)
    args = ap.parse_args(argv)
    try:
        (cmd_tune if args.cmd == "tune" else cmd_measure)(args)
    except KeyboardInterrupt:         # the shell's deadline: what was recorded stays (the db is fsynced per line)
        print("interrupted at the deadline", flush=True)


if __name__ == "__main__":
    main()
