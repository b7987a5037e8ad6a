"""Results as data: what `kernelgen bench --json` and `kernelgen tune --json` write, and what
`kernelgen plot` and `kernelgen report` read. One versioned JSON document ("kernelgen-results/1"):

    {"schema": "kernelgen-results/1", "kind": "bench" | "tune" | "profile", "date": ISO date, "kernelgen": version,
     "command": the command line, "device": {"gpu", "arch", "sms", "bytes_per_s", "peak_flops": {math: flop/s}},
     "runs": [{"op", "problem", "ladder", "timing", "math", "flops", "bytes",
               "roofs": {"bytes_per_s", "flops_per_s"},          # the device's roofs for this run's dtype
               "rows": [{"step", "kernel", "schedule" (to_dict, or null), "schedule_source" (where a schedule chosen
                         for the size came from: tune.defaults, or null), "vendor", "time_us", "GB/s",
                         "TFLOP/s", "roofline", "speedup", "vs_vendor", "valid", "timing",
                         "inspect": [{"symbol", "registers", "spill_bytes", ...} per kernel] or null,
                         "profile": [{"symbol", "occupancy_pct", ...} per launch] (profile only: kernelgen.ncu)}],
               "tune": {"strategy", "measured": [[n, time_us, best_so_far_us], ...]} (tune only)}]}

>>> doc = document("bench", device={"gpu": "H100 80GB HBM3", "arch": "sm_90a"}, runs=[], command="kernelgen bench x")
>>> check(doc, "x.json")["schema"]
'kernelgen-results/1'
>>> check({"schema": "kernelgen-results/0"}, "old.json")
Traceback (most recent call last):
...
kernelgen.errors.UsageError: old.json: schema 'kernelgen-results/0' is not 'kernelgen-results/1'; re-run the benchmark with this kernelgen to write it anew

`from_markdown` reads the tables `kernelgen bench --markdown` printed (bench_results/*.md) into
the same document, so charts can be drawn from results recorded before the JSON existed.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

from .errors import UsageError
from .target import MATH_PATHS

SCHEMA = "kernelgen-results/1"
KINDS = ("bench", "tune", "profile")
ROW_KEYS = ("step", "kernel", "time_us")


def document(kind: str, *, device: dict, runs: list[dict], command: str | None = None,
             date: str | None = None) -> dict:
    from . import config
    return {"schema": SCHEMA, "kind": kind, "date": date or datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"), "kernelgen": config.VERSION,
            "command": command if command is not None else shlex.join(["kernelgen", *sys.argv[1:]]),
            "device": device, "runs": runs}


def device_dict(dev) -> dict:
    """The device's identity and roofs, from a Target (`gpu.device()`, or `target(arch)` without a GPU)."""
    peaks = dev.peaks
    return {"gpu": dev.gpu, "arch": dev.arch, "sms": dev.sms,
            "bytes_per_s": peaks.bytes_per_s if peaks else 0.0,
            "peak_flops": {m: dev.peak_flops(m) for m in MATH_PATHS}}


def run_dict(op, problem, dev, rows: list[dict], *, ladder: bool, timing: str) -> dict:
    """One op on one problem: its rows (bench_rows' dicts) with the roofs they are placed against."""
    m = op.math(problem)
    keep = ("step", "kernel", "schedule", "schedule_source", "time_us", "GB/s", "TFLOP/s", "roofline", "speedup",
            "vs_vendor", "valid", "timing", "inspect", "profile")
    out = [dict({k: _plain(r.get(k)) for k in keep}, vendor=r["step"].startswith("vendor:")) for r in rows]
    return {"op": op.name, "problem": str(problem), "ladder": ladder, "timing": timing, "math": m,
            "flops": op.flops(problem), "bytes": op.bytes_moved(problem),
            "roofs": {"bytes_per_s": dev.peaks.bytes_per_s if dev.peaks else 0.0, "flops_per_s": dev.peak_flops(m)},
            "rows": out}


INSPECT_KEYS = ("symbol", "registers", "shared_bytes", "local_bytes", "spill_bytes", "ldg128", "stg128", "instructions")


def add_inspect(op, problem, rows: list[dict], on) -> list[dict]:
    """Each row with a schedule gets "inspect": the facts `kernelgen inspect` prints for its kernels
    (registers, shared and local bytes, spills, 128-bit loads and stores), compiled for `on`."""
    from .errors import KernelgenError
    from .inspect import inspect_kernel
    from .prepared import prepare
    from .schedule import Schedule
    for r in rows:
        if not r.get("schedule"):
            continue
        try:
            kernel = prepare(op, Schedule.from_dict(r["schedule"]), problem, on).kernel
            r["inspect"] = [{k: f.row().get(k) for k in INSPECT_KEYS} for f in inspect_kernel(kernel, on.arch)]
        except (KernelgenError, OSError) as e:   # the table has the row; its facts are a bonus
            r["inspect"] = None
            print(f"note: no inspect facts for {r['step']}: {' '.join(str(e).split())}", file=sys.stderr)
    return rows


def _plain(v):
    """JSON has no NaN: a ratio without a vendor is null."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def write(doc: dict, path: str | os.PathLike) -> Path:
    """Write atomically: a temporary file in the same folder, renamed over `path`."""
    return write_text(json.dumps(doc, indent=1) + "\n", path)


def write_text(text: str | bytes, path: str | os.PathLike) -> Path:
    p = Path(path)
    data = text.encode() if isinstance(text, str) else text
    fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)     # mkstemp makes it 0600; the file is the user's, like any other
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p


def check(doc, where: str) -> dict:
    """`doc` unless it is not a results document of this version (a UsageError naming what is wrong)."""
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: not a kernelgen results file (the top level is not a JSON object)")
    schema = doc.get("schema")
    if schema is None:
        raise UsageError(f"{where}: not a kernelgen results file (no \"schema\"; expected {SCHEMA!r})")
    if schema != SCHEMA:
        raise UsageError(f"{where}: schema {schema!r} is not {SCHEMA!r}; re-run the benchmark with this kernelgen "
                         "to write it anew")
    if doc.get("kind") not in KINDS:
        raise UsageError(f"{where}: \"kind\" is {doc.get('kind')!r}, not one of {', '.join(KINDS)}")
    if not isinstance(doc.get("device"), dict) or not isinstance(doc.get("runs"), list):
        raise UsageError(f"{where}: a results file needs a \"device\" object and a \"runs\" list")
    for key in ("gpu", "arch"):
        if not isinstance(doc["device"].get(key), str):
            raise UsageError(f"{where}: device.{key} is {doc['device'].get(key)!r}, not a string")
    for i, run in enumerate(doc["runs"]):
        if not isinstance(run, dict) or not isinstance(run.get("rows"), list):
            raise UsageError(f"{where}: run {i} has no \"rows\" list")
        _fields(where, f"run {i}", run, {"op": str, "problem": str, "math": str, "flops": _NUM, "bytes": _NUM})
        roofs = run.get("roofs")
        if not isinstance(roofs, dict):
            raise UsageError(f"{where}: run {i} has no \"roofs\" object")
        _fields(where, f"run {i} roofs", roofs, {"bytes_per_s": _NUM, "flops_per_s": _NUM})
        for j, row in enumerate(run["rows"]):
            if not isinstance(row, dict):
                raise UsageError(f"{where}: run {i} row {j} is not an object")
            missing = [k for k in ROW_KEYS if k not in row]
            if missing:
                raise UsageError(f"{where}: run {i} row {j} lacks {', '.join(missing)}")
            _fields(where, f"run {i} row {j}", row, {"step": str, "kernel": str, "time_us": _NUM})
            if row["time_us"] <= 0:
                raise UsageError(f"{where}: run {i} row {j}: time_us {row['time_us']!r} is not a positive number")
        tune = run.get("tune")
        if tune is not None and not (isinstance(tune, dict) and isinstance(tune.get("measured"), list) and all(
                isinstance(m, list) and len(m) >= 3 and isinstance(m[0], _NUM) and all(
                    x is None or isinstance(x, _NUM) for x in m[1:3]) for m in tune["measured"])):
            raise UsageError(f"{where}: run {i}: \"tune\" needs a \"measured\" list of [n, time_us, best_us]")
    return doc


_NUM = (int, float)


def _fields(where: str, what: str, d: dict, types: dict) -> None:
    for k, t in types.items():
        v = d.get(k)
        ok = isinstance(v, t) and not isinstance(v, bool) and (t is str or (math.isfinite(v) and v >= 0))
        if not ok:
            kind = "a string" if t is str else "a number >= 0"
            raise UsageError(f"{where}: {what}: {k} is {v!r}, not {kind}")


def load(path: str | os.PathLike) -> dict:
    """A results file, checked: a missing, unreadable, malformed or older file is one UsageError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"results file {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"results file {str(path)!r} is a directory") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: byte {e.start} is not UTF-8; a results file is JSON text") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    return check(doc, str(path))


def is_ladder_step(row: dict) -> bool:
    return bool(re.match(r"\d+\. ", row["step"]))


def intensity(run: dict) -> float:
    """Arithmetic intensity, flop per byte the op must move."""
    return run["flops"] / run["bytes"] if run.get("bytes") else 0.0


def achieved_flops(run: dict, row: dict) -> float:
    return run["flops"] / (row["time_us"] * 1e-6)


def select_run(doc: dict, which: str | None, *, ladder: bool = False) -> dict:
    """The run `which` names (its index, or `op problem`), or the file's only (ladder) run."""
    runs = [r for r in doc["runs"] if not ladder or any(is_ladder_step(x) for x in r["rows"])]
    names = [f"{r['op']} {r['problem']}" for r in doc["runs"]]
    if which is None:
        if len(runs) == 1:
            return runs[0]
        what = "ladder runs" if ladder else "runs"
        listed = "; ".join(f"{r['op']} {r['problem']}" for r in runs)
        raise UsageError(f"the file holds {len(runs)} {what}; choose one with --run (an index 0..{len(names) - 1} or "
                         f"one of: {listed})" if runs else f"the file holds no {what}")
    if which.isdigit() and int(which) < len(names):
        run = doc["runs"][int(which)]
    elif which in names:
        run = doc["runs"][names.index(which)]
    else:
        raise UsageError(f"--run {which!r} names no run of the file; choose an index 0..{len(names) - 1} or one of: "
                         f"{'; '.join(names)}")
    if ladder and run not in runs:
        raise UsageError(f"--run {which!r} has no ladder steps to chart")
    return run


# -- the tables `kernelgen bench --markdown` printed ----------------------------------------------
_HEAD = re.compile(r"^(?P<op>\w+) (?P<problem>\S+) on (?P<gpu>.+?) \((?P<arch>sm_\w+)\), (?P<date>\d{4}-\d\d-\d\d), "
                   r"kernelgen (?P<version>\S+);")


def _number(text: str) -> float | None:
    t = text.strip().rstrip("x%")
    try:
        v = float(t)
    except ValueError:
        return None
    return None if not math.isfinite(v) else v / 100 if text.strip().endswith("%") else v


def from_markdown(text: str, source: str = "") -> dict:
    """The bench tables of a Markdown file as one results document (one run per table).

    Flops and bytes come from the op where it still accepts the problem, else from the rates."""
    from .target import gpu_peaks, target
    runs, device, date, head, timing = [], None, None, None, ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        m = _HEAD.match(line)
        if m:
            head, timing = m, ""
        elif head and line.startswith("timing:"):
            timing = line[len("timing:"):].strip()
        elif head and line.startswith("| step |"):
            cols = [c.strip() for c in line.strip("|").split("|")]
            i += 2
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                rows.append(dict(zip(cols, cells)))
                i += 1
            if device is None:
                peaks = gpu_peaks(head["gpu"])
                base = target(head["arch"]) if peaks is None else None
                device = {"gpu": head["gpu"], "arch": head["arch"], "sms": peaks.sms if peaks else base.sms,
                          "bytes_per_s": (peaks or base.peaks).bytes_per_s,
                          "peak_flops": {k: getattr(peaks or base.peaks, k) for k in MATH_PATHS}}
                date = head["date"]
            runs.append(_md_run(head, timing, rows, device))
            head = None
            continue
        i += 1
    if not runs:
        raise UsageError(f"{source or 'the text'}: no `kernelgen bench --markdown` table found")
    return document("bench", device=device, runs=runs, date=date,
                    command=f"converted from {source or 'Markdown'} (kernelgen bench --markdown tables)")


def _md_run(head, timing: str, cells: list[dict], device: dict) -> dict:
    rows = []
    for c in cells:
        rows.append({"step": c["step"], "kernel": c["kernel"], "schedule": None,
                     "vendor": c["step"].startswith("vendor:"), "time_us": _number(c["time_us"]),
                     "GB/s": _number(c["GB/s"]), "TFLOP/s": _number(c["TFLOP/s"]), "roofline": _number(c["roofline"]),
                     "speedup": _number(c["speedup"]), "vs_vendor": _number(c["vs_vendor"]), "valid": c["valid"],
                     "timing": timing.split(",")[0]})
    op_name, problem = head["op"], head["problem"]
    flops = nbytes = None
    math_path = "fp16" if re.search(r":b?f16", problem) else "fp32"
    try:
        from .ops import get_op
        op = get_op(op_name)
        prob = _parse_problem(op, problem)
        flops, nbytes, math_path = op.flops(prob), op.bytes_moved(prob), op.math(prob)
    except Exception:   # an op or size the code no longer accepts: the rates of the table say as much
        pass
    first = rows[0]
    secs = first["time_us"] * 1e-6
    if nbytes is None:
        nbytes = round((first["GB/s"] or 0) * 1e9 * secs)
        flops = round((first["TFLOP/s"] or 0) * 1e12 * secs)
    ladder = any(is_ladder_step(r) for r in rows)
    return {"op": op_name, "problem": problem, "ladder": ladder, "timing": timing, "math": math_path,
            "flops": flops, "bytes": nbytes,
            "roofs": {"bytes_per_s": device["bytes_per_s"], "flops_per_s": device["peak_flops"].get(math_path, 0.0)},
            "rows": rows}


def _parse_problem(op, text: str):
    from .sizes import parse_size
    sizes, _, types = text.partition(":")
    dtype = out = None
    if types:
        inp, _, o = types.partition("o")
        dtype, out = inp, (o or None)
    return parse_size(op, sizes, False, dtype, out)


def tune_run(op, problem, dev, records: list, strategy: str) -> dict:
    """A tune as one run: a row per schedule that ran correctly (the best first), and best-so-far
    against candidates measured, in the order measured."""
    run = run_dict(op, problem, dev, [], ladder=False, timing="tune")
    roofs = run["roofs"]
    floor = max(run["bytes"] / roofs["bytes_per_s"] if roofs["bytes_per_s"] else 0.0,
                run["flops"] / roofs["flops_per_s"] if roofs["flops_per_s"] else 0.0)
    measured, best, rows = [], math.inf, []
    for n, r in enumerate(records, 1):
        ok = r.status == "ok" and r.time_us
        if ok:
            best = min(best, r.time_us)
            secs = r.time_us * 1e-6
            rows.append({"step": f"candidate {n}", "kernel": r.kernel, "schedule": r.schedule, "vendor": False,
                         "time_us": r.time_us, "GB/s": run["bytes"] / secs / 1e9, "TFLOP/s": run["flops"] / secs / 1e12,
                         "roofline": floor / secs, "speedup": None, "vs_vendor": None, "valid": "ok",
                         "timing": "tune"})
        measured.append([n, r.time_us if ok else None, None if best == math.inf else best, r.status])
    rows.sort(key=lambda x: x["time_us"])
    if rows:
        rows[0]["step"] = f"best ({rows[0]['step']})"
    run["rows"] = rows
    run["tune"] = {"strategy": strategy, "measured": measured}
    return run
