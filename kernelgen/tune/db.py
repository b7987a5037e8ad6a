"""The tuning database: append-only JSON lines, one measurement (or failure) per line.

>>> import tempfile, os
>>> from kernelgen.tune.db import TuningDB, Record
>>> db = TuningDB(os.path.join(tempfile.mkdtemp(), "t.jsonl"))
>>> db.append(Record.make("reduce_sum", "n=8", "sm_90", "H100", {"op": "reduce_sum", "steps": []}, {}, "ok", 1.5))
>>> [r.time_us for r in db.records()]
[1.5]

Each line is written with one `write` on a file opened for appending, then flushed and fsynced, so
a crash leaves at most one torn final line, which `records()` skips; lines are never rewritten.
Records are keyed by op, problem, dtype, arch, GPU name, kernelgen version and schedule. Fields
added later have defaults (`features`), so the lines of older versions still load.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import config

STATUSES = ("ok", "compile_error", "launch_error", "wrong_answer", "timeout")


@dataclass(frozen=True)
class Record:
    op: str
    problem: str
    dtype: str
    arch: str
    gpu: str
    version: str
    schedule: dict
    knobs: dict
    status: str
    time_us: float | None
    detail: str = ""
    kernel: str = ""
    timestamp: float = 0.0
    features: dict | None = None   # kernelgen.features of the schedule; absent from older lines

    @staticmethod
    def make(op, problem, arch, gpu, schedule, knobs, status, time_us, detail="", kernel="", dtype="float32",
             features=None):
        return Record(op, problem, dtype, arch, gpu, config.VERSION, schedule, knobs, status, time_us, detail, kernel,
                      round(time.time(), 3), features)

    def key(self) -> tuple:
        return (self.op, self.problem, self.dtype, self.arch, self.gpu, self.version,
                json.dumps(self.schedule, sort_keys=True))


class TuningDB:
    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else config.tuning_db()

    def append(self, rec: Record) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(asdict(rec), sort_keys=True) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def records(self) -> list[Record]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(Record(**json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                continue  # a torn last line from a crash; the rest is intact
        return out

    def measured_keys(self) -> set[tuple]:
        return {r.key() for r in self.records()}

    def best(self, op: str, problem: str | None = None, arch: str | None = None, gpu: str | None = None) -> Record | None:
        ok = [r for r in self.records() if r.op == op and r.status == "ok" and r.time_us is not None
              and (problem is None or r.problem == problem) and (arch is None or r.arch == arch)
              and (gpu is None or r.gpu == gpu)]
        return min(ok, key=lambda r: r.time_us) if ok else None
