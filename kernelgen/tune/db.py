"""The tuning database: append-only JSON lines, one measurement (or failure) per line.

>>> import tempfile, os
>>> from kernelgen.tune.db import TuningDB, Record
>>> db = TuningDB(os.path.join(tempfile.mkdtemp(), "t.jsonl"))
>>> db.append(Record.make("reduce_sum", "n=8", "sm_90", "H100", {"op": "reduce_sum", "steps": []}, {}, "ok", 1.5))
>>> [r.time_us for r in db.records()]
[1.5]

Each line is written with one `write` on a file opened for appending, then flushed and fsynced, so
a crash leaves at most one torn final line, which `records()` skips; lines are never rewritten.
Anything else that is not a record (a directory, bytes that are not UTF-8, a line that is not a
record, a field of the wrong type) is a UsageError naming the file and line, raised by `check()`
before any work starts and by `records()`.
Records are keyed by op, problem, dtype, arch, GPU name, kernelgen version and schedule. Fields
added later have defaults (`features`), so the lines of older versions still load. A MemoryDB
holds records in a list instead (a replay records nothing on disk).
"""
from __future__ import annotations

import gzip
import json
import os
import time
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path

from .. import config
from ..errors import UsageError

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

    @staticmethod
    def from_json(d) -> "Record":
        """A record from one parsed line; ValueError naming the field that is missing or mistyped."""
        if not isinstance(d, dict):
            raise ValueError(f"a line holds a {type(d).__name__}, not a record object")
        names = [f.name for f in fields(Record)]
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}")
        for f in fields(Record):
            if f.name not in d:
                if f.default is MISSING:
                    raise ValueError(f"field {f.name!r} is missing")
                continue
            v, want = d[f.name], _FIELD_TYPES[f.name]
            ok = (v is None and f.name in ("time_us", "features")) or (isinstance(v, want) and not isinstance(v, bool))
            if not ok:
                raise ValueError(f"{f.name} is {type(v).__name__} {v!r:.40}; expected "
                                 f"{' or '.join(t.__name__ for t in (want if isinstance(want, tuple) else (want,)))}")
        if d["status"] not in STATUSES:
            raise ValueError(f"status {d.get('status')!r} is not one of {', '.join(STATUSES)}")
        return Record(**d)

    def key(self) -> tuple:
        return (self.op, self.problem, self.dtype, self.arch, self.gpu, self.version,
                json.dumps(self.schedule, sort_keys=True))


_FIELD_TYPES = {"op": str, "problem": str, "dtype": str, "arch": str, "gpu": str, "version": str, "schedule": dict,
                "knobs": dict, "status": str, "time_us": (int, float), "detail": str, "kernel": str,
                "timestamp": (int, float), "features": dict}


def dtype_of(problem) -> str:
    """A record's dtype: the input type's name, `->output` appended where the outputs differ."""
    if problem.types is None:
        return "float32"
    t = problem.types
    return t.input.name if t.output == t.input else f"{t.input.name}->{t.output.name}"


class TuningDB:
    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else config.tuning_db()

    def check(self, writable: bool = False) -> None:
        """UsageError now, before any work, if the database cannot be read (or appended to)."""
        self.records()
        if writable:
            parent = self.path.parent if str(self.path.parent) else Path(".")
            if self.path.exists() and not os.access(self.path, os.W_OK):
                raise UsageError(f"tuning database {self.path} is not writable")
            if not self.path.exists() and not (parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)):
                what = "does not exist" if not parent.exists() else (
                    "is not a folder" if not parent.is_dir() else "is not writable")
                raise UsageError(f"tuning database {self.path}: its folder {parent} {what}")

    def append(self, rec: Record) -> None:
        if self.path.suffix == ".gz":
            raise UsageError(f"tuning database {self.path} is compressed (read-only: shipped sweeps); "
                             "record into a .jsonl file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(asdict(rec), sort_keys=True) + "\n"   # ASCII: a torn line is never half a character
        try:
            with open(self.path, "rb") as f:
                f.seek(0, os.SEEK_END)
                if f.tell() and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n":
                    line = "\n" + line             # a torn last line from a crash stays a line of its own
        except FileNotFoundError:
            pass
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def records(self) -> list[Record]:
        if not self.path.exists():
            return []
        if self.path.is_dir():
            raise UsageError(f"tuning database {self.path} is a directory; --db takes a .jsonl file")
        try:
            data = self.path.read_bytes()
            if data[:2] == b"\x1f\x8b":       # gzip: a shipped sweep, read as its JSON lines
                data = gzip.decompress(data)
        except OSError as e:
            raise UsageError(f"tuning database {self.path} cannot be read: {e.strerror or e}") from None
        lines = data.split(b"\n")
        last = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
        out = []
        for i, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                out.append(Record.from_json(json.loads(raw.decode("utf-8"))))
            except UnicodeDecodeError as e:
                if i == last and not data.endswith(b"\n"):
                    continue  # a torn last line
                raise UsageError(f"tuning database {self.path} line {i + 1}: byte {e.start} is not UTF-8; "
                                 "it is not a kernelgen tuning database (JSON lines)") from None
            except json.JSONDecodeError as e:
                if i == last or raw.startswith(b'{"'):
                    continue  # a line torn by a crash (append() starts a fresh line after it); the rest is intact
                raise UsageError(f"tuning database {self.path} line {i + 1} is not a JSON record ({e.msg}); "
                                 "it is not a kernelgen tuning database (JSON lines)") from None
            except ValueError as e:
                raise UsageError(f"tuning database {self.path} line {i + 1}: {e}") from None
        return out

    def measured_keys(self) -> set[tuple]:
        return {r.key() for r in self.records()}

    def best(self, op: str, problem: str | None = None, arch: str | None = None, gpu: str | None = None) -> Record | None:
        """The fastest schedule whose latest record is "ok" (`standing`)."""
        ok = [r for r in standing(self.records()) if r.op == op and (problem is None or r.problem == problem)
              and (arch is None or r.arch == arch) and (gpu is None or r.gpu == gpu)]
        return min(ok, key=lambda r: r.time_us) if ok else None


def standing(records: list[Record]) -> list[Record]:
    """Each schedule's latest record, where that is "ok" with a time: what a best is chosen from (a winner that
    failed its final check is recorded again with that outcome, and no longer counts)."""
    latest = {r.key(): r for r in records}
    return [r for r in latest.values() if r.status == "ok" and r.time_us is not None]


class MemoryDB(TuningDB):
    """A tuning database in memory: what a replay or a test records, gone when it ends."""

    def __init__(self, records: list[Record] | None = None):
        self.path = Path("<memory>")
        self._records = list(records or [])

    def check(self, writable: bool = False) -> None:
        pass

    def append(self, rec: Record) -> None:
        self._records.append(rec)

    def records(self) -> list[Record]:
        return list(self._records)
