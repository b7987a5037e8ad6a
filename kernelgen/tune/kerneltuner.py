"""Kernel Tuner's cache file: export records for its tools (ktdashboard, its simulation mode), import its caches.

>>> import json, os, tempfile
>>> from kernelgen.ops import get_op
>>> from kernelgen.tune.db import Record
>>> from kernelgen.tune.kerneltuner import read_cache, write_cache
>>> op = get_op("reduce_sum")
>>> s = op.default_schedule()
>>> rec = Record.make("reduce_sum", "n=4096", "sm_90", "H100", s.to_dict(), op.knobs_from_schedule(s), "ok", 12.5)
>>> path = os.path.join(tempfile.mkdtemp(), "cache.json")
>>> write_cache([rec], path)
>>> data = json.load(open(path))
>>> data["tune_params_keys"] == list(rec.knobs), data["problem_size"], data["device_name"]
(True, [4096], 'H100')
>>> (key, entry), = data["cache"].items()
>>> key == ",".join(str(v) for v in rec.knobs.values()), entry["time"]          # Kernel Tuner's unit: ms
(True, 0.0125)
>>> back, = read_cache(path)
>>> (back.op, back.problem, back.time_us, back.schedule == rec.schedule)
('reduce_sum', 'n=4096', 12.5, True)

The format, as Kernel Tuner writes it (kernel_tuner/util.py `process_cache`, `store_cache`) and
as its schema kernel_tuner/schema/cache/1.1.0/schema.json states it:
  {"schema_version": "1.1.0", "device_name": ..., "kernel_name": ..., "problem_size": [ints],
   "tune_params_keys": [names], "tune_params": {name: [values]}, "objective": "time",
   "cache": {"v1,v2,...": {name: value, ..., "time": ms, "times": [ms], "compile_time": ms,
             "verification_time": ms, "benchmark_time": ms, "strategy_time": ms,
             "framework_time": ms, "timestamp": ISO 8601}}}
The key of an entry is the values in tune_params_keys order joined with "," as Python's str()
writes them (so True, not 1); a failure's "time" is the string "CompilationFailedConfig" or
"RuntimeFailedConfig" ("InvalidConfig" is Kernel Tuner's word for a point its restrictions rule
out, which kernelgen prunes before anything runs, so it never writes one and skips it on import).

What kernelgen writes beyond that (the schema allows more properties): a top-level "kernelgen"
object (op, problem, dtype, arch, version) and per entry "kernelgen_status" (the exact status:
wrong_answer and timeout are both RuntimeFailedConfig to Kernel Tuner), "kernelgen_detail",
"kernelgen_kernel" and "kernelgen_schedule", so an exported file imports back record for record.
kernel_name is the op's name; the one times entry is kernelgen's median; the compile, verification,
benchmark, strategy and framework times are 0 (kernelgen does not keep them). A cache Kernel Tuner
wrote has none of the kernelgen fields: importing it needs the op, and the problem where its
problem_size does not give every one of the op's sizes in order; its parameters must be the op's
knobs, and each entry's schedule is made from its knobs. A cache whose closing braces are missing
(Kernel Tuner appends entries to an open file and closes it at the end) reads as if closed.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path

from ..errors import KernelgenError, UsageError
from ..ops.base import Op
from ..schedule import Schedule
from ..target import DEFAULT_ARCH
from .db import Record

SCHEMA_VERSION = "1.1.0"
FAILED = {"compile_error": "CompilationFailedConfig", "launch_error": "RuntimeFailedConfig",
          "wrong_answer": "RuntimeFailedConfig", "timeout": "RuntimeFailedConfig"}
STATUS_OF = {"CompilationFailedConfig": "compile_error", "RuntimeFailedConfig": "launch_error"}


def write_cache(records: list[Record], path: str | Path) -> None:
    """One Kernel Tuner cache of records of one op, problem, dtype, GPU and arch."""
    if not records:
        raise UsageError("no records to export")
    first = records[0]
    groups = {(r.op, r.problem, r.dtype, r.gpu, r.arch) for r in records}
    if len(groups) > 1:
        raise UsageError(f"a Kernel Tuner cache holds one kernel on one problem and device; these records hold "
                         f"{len(groups)}: " + "; ".join(" ".join(g) for g in sorted(groups)))
    keys = list(dict.fromkeys(k for r in records for k in r.knobs))
    values: dict[str, list] = {k: [] for k in keys}
    cache: dict[str, dict] = {}
    for r in records:
        for k in keys:
            if r.knobs.get(k) not in values[k]:
                values[k].append(r.knobs.get(k))
        key = ",".join(str(r.knobs.get(k)) for k in keys)
        time = r.time_us / 1e3 if r.status == "ok" and r.time_us is not None else FAILED[r.status]
        cache[key] = {**{k: r.knobs.get(k) for k in keys}, "time": time,
                      "times": [time] if isinstance(time, float) else [], "compile_time": 0, "verification_time": 0,
                      "benchmark_time": 0, "strategy_time": 0, "framework_time": 0,
                      "timestamp": datetime.datetime.fromtimestamp(r.timestamp, datetime.timezone.utc).isoformat(),
                      "kernelgen_status": r.status, "kernelgen_detail": r.detail, "kernelgen_kernel": r.kernel,
                      "kernelgen_schedule": r.schedule}
    doc = {"schema_version": SCHEMA_VERSION, "device_name": first.gpu, "kernel_name": first.op,
           "problem_size": [int(part.partition("=")[2]) for part in first.problem.partition(":")[0].split(",")
                            if not part.startswith("layout=")],
           "tune_params_keys": keys, "tune_params": values, "objective": "time", "cache": cache,
           "kernelgen": {"op": first.op, "problem": first.problem, "dtype": first.dtype, "arch": first.arch,
                         "version": first.version}}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def read_cache(path: str | Path, op: Op | None = None, problem: str | None = None,
               arch: str = DEFAULT_ARCH) -> list[Record]:
    """The records of a Kernel Tuner cache; `op` and `problem` where the file does not say them."""
    doc = _load(Path(path))
    own = doc.get("kernelgen") or {}
    if op is None:
        from ..ops import get_op
        name = own.get("op")
        if not name:
            raise UsageError(f"{path} is a Kernel Tuner cache of kernel {doc.get('kernel_name')!r}, not written by "
                             "kernelgen: name the op it tunes (--op)")
        op = get_op(name)
    keys = doc["tune_params_keys"]
    unknown = [k for k in keys if k not in {kn.name for kn in op.knobs}]
    if unknown:
        raise UsageError(f"{path}: parameter {unknown[0]!r} is not a knob of {op.name} (its knobs: "
                         f"{', '.join(k.name for k in op.knobs)})")
    problem = problem or own.get("problem") or _problem_from_sizes(op, doc.get("problem_size"), path)
    out = []
    for key, entry in doc["cache"].items():
        time = entry.get("time")
        if time == "InvalidConfig":
            continue
        knobs = {k: entry[k] if k in entry else _value_from_key(doc, key, i) for i, k in enumerate(keys)}
        status = entry.get("kernelgen_status") or ("ok" if isinstance(time, (int, float)) else STATUS_OF.get(time))
        if status is None:
            raise UsageError(f"{path}: entry {key!r} has time {time!r}, neither a number nor a failure Kernel Tuner writes")
        try:
            sched = entry.get("kernelgen_schedule") or op.schedule_from_knobs(**{**op.default_knobs(), **knobs}).to_dict()
            Schedule.from_dict(sched)
        except (KernelgenError, TypeError, ValueError) as e:
            raise UsageError(f"{path}: entry {key!r} is not a schedule of {op.name}: {e}") from None
        rec = Record.make(op.name, problem, own.get("arch", arch), doc.get("device_name", ""), sched, knobs, status,
                          float(time) * 1e3 if status == "ok" else None, entry.get("kernelgen_detail", ""),
                          entry.get("kernelgen_kernel", ""), own.get("dtype", "float32"))
        out.append(dataclasses.replace(rec, version=own.get("version", rec.version),
                                       timestamp=_seconds(entry.get("timestamp"), rec.timestamp)))
    return out


def _load(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read Kernel Tuner cache {path}: {e}") from None
    if text and not (text.endswith("}\n}") or text.endswith("}}}") or _closes(text)):
        text = text.rstrip(",") + "}\n}"     # still open: Kernel Tuner closes it when tuning ends
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path} is not a Kernel Tuner cache (JSON: {e.msg} at line {e.lineno})") from None
    missing = [k for k in ("tune_params_keys", "cache") if k not in doc]
    if missing:
        raise UsageError(f"{path} is not a Kernel Tuner cache: it has no {missing[0]!r}")
    return doc


def _closes(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except json.JSONDecodeError:
        return False


def _problem_from_sizes(op: Op, sizes, path) -> str:
    sizes = [sizes] if isinstance(sizes, int) else sizes
    if not isinstance(sizes, list) or len(sizes) != len(op.dims):
        raise UsageError(f"{path}: problem_size {sizes!r} does not give {op.name}'s sizes "
                         f"({', '.join(d.name for d in op.dims)}); name the problem (--size)")
    return ",".join(f"{d.name}={v}" for d, v in zip(op.dims, sizes))


def _value_from_key(doc: dict, key: str, i: int):
    text = key.split(",")[i]
    return next((v for v in doc["tune_params"][doc["tune_params_keys"][i]] if str(v) == text), text)


def _seconds(stamp, default: float) -> float:
    try:
        return round(datetime.datetime.fromisoformat(stamp).timestamp(), 3)
    except (TypeError, ValueError):
        return default
