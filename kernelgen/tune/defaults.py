"""Tuned defaults: the one place that picks the schedule `run`, `emit`, `bench` and the PyTorch ops use
when none is named, and says where it came from.

>>> from kernelgen.ops import get_op
>>> from kernelgen.target import target
>>> from kernelgen.tune.db import MemoryDB
>>> from kernelgen.tune.defaults import choose_default, gpu_key
>>> op = get_op("reduce_sum")
>>> sched, source = choose_default(op, op.problem({"n": 1000}), target("sm_80"), MemoryDB())
>>> source                       # no record of this problem, no table shipped for the A100
'heuristic'
>>> gpu_key("H100 80GB HBM3"), gpu_key("A100-SXM4-80GB"), gpu_key("RTX 4090")
('h100', 'a100', 'rtx-4090')

`choose_default(op, problem, target, db)` tries, in order:
  1. your tuning database (`db`, default KERNELGEN_TUNING_DB): its fastest "ok" record of exactly this
     problem (sizes, types, layout, fusion: the problem string) on the target's arch;
  2. the tuned table shipped for the target's GPU (`kernelgen/tuned/<key>.json`, the key from the GPU's
     name: `gpu_key`; a GPU without a table has none): the entry of the same op, element types, layout and
     fusion, measured on an arch of the same compute capability, whose problem is nearest (`distance`:
     the Euclidean distance between the problems' vectors of log2(1 + size), one component per dim of the
     op, a batch's count as one more), if it is within MAX_DISTANCE and its schedule beat the heuristic on
     its own problem (an entry that records the heuristic's time there, `heuristic_us`, no faster than its
     own is passed over);
  3. the op's heuristic, `op.schedule_for(problem, target)`.
A schedule from 1 or 2 is taken only if the op accepts it for this problem and target (its kernel and
plan are built: `prepare`); one it refuses (a ScheduleError) is passed over for the next source.

A table is JSON ("kernelgen-tuned/1"): the GPU and how it was built, then one entry a line, each the best
record of one (op, problem, arch) in the tuning databases it was built from (`build_table`; the command
`kernelgen tune-db table`): op, problem, dtype, arch, schedule, time_us, vendor_us (null where not
measured), date and the command that tunes that problem again.
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import math
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..errors import ScheduleError, UsageError
from ..ops.base import Op, Problem
from ..schedule import Schedule
from ..target import ARCHS, Target, capability, target as arch_target
from .db import Record, TuningDB, dtype_of, standing
from .history import parse_problem

FORMAT = "kernelgen-tuned/1"
TABLES = Path(__file__).resolve().parent.parent / "tuned"    # package data: <key>.json per GPU
# Nearest entries farther than this are not used: on the H100's DeepBench conv list (bench/tuned_defaults.sh,
# 2026-11-24) a shape's nearest other entry within 0.07 (a size 27 against 28) ran 0.97x the heuristic's time,
# within 1.0 (one size twice another) 1.08x, within 3.0 1.13x: a tile tuned for another size loses to the
# heuristic's choice for this one unless the sizes nearly agree.
MAX_DISTANCE = 0.25
HEURISTIC = "heuristic"


@dataclass(frozen=True)
class Entry:
    """One row of a table: the fastest schedule recorded for one problem."""
    op: str
    problem: str            # as printed (the tuning database's key)
    dtype: str              # the record's dtype: float32, float16->float32, ...
    arch: str
    schedule: Schedule
    time_us: float
    vendor_us: float | None = None
    heuristic_us: float | None = None   # schedule_for's time on this problem, measured beside time_us
    date: str = ""
    command: str = ""

    @property
    def beats_heuristic(self) -> bool:
        """Faster than the heuristic on its own problem, where that was measured (a short tune can miss it)."""
        return self.heuristic_us is None or self.time_us < self.heuristic_us

    def to_json(self) -> dict:
        return dict(dataclasses.asdict(self), schedule=self.schedule.to_dict())


@dataclass(frozen=True)
class Table:
    key: str                # gpu_key of the GPU it was measured on
    gpu: str
    entries: tuple[Entry, ...]
    path: str = ""


def gpu_key(name: str) -> str:
    """A table's key from a GPU's name: its lower-case words up to the first that holds a digit
    (H100 80GB HBM3 and H100 PCIe are both h100)."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    upto = next((i for i, w in enumerate(words) if any(c.isdigit() for c in w)), len(words) - 1)
    return "-".join(words[:upto + 1])


# -- choosing --------------------------------------------------------------------------------------
def choose_default(op: Op, problem: Problem, target: Target, db: TuningDB | None = None,
                   table: Table | None = None) -> tuple[Schedule, str]:
    """(the schedule, where it came from): your database's record of this problem, else the tuned table's
    nearest entry (`table`, default the one shipped for the target's GPU), else the heuristic; each
    taken only where it is legal for `problem` on `target`."""
    db = db if db is not None else TuningDB()
    rec = db.best(op.name, str(problem), target.arch)
    if rec is not None and (sched := _legal(op, rec.schedule, problem, target)):
        return sched, f"your tuning database ({db.path})"
    table = table if table is not None else shipped_table(gpu_key(target.gpu))
    entry = nearest(op, problem, target, table) if table is not None else None
    if entry is not None and entry.beats_heuristic and (sched := _legal(op, entry.schedule, problem, target)):
        return sched, f"tuned table {table.key} (nearest: {entry.problem})"
    return op.schedule_for(problem, target), HEURISTIC


def nearest(op: Op, problem: Problem, target: Target, table: Table) -> Entry | None:
    """The table's entry for the same op, types, layout and fusion (on an arch of the target's compute
    capability) nearest to `problem`, within MAX_DISTANCE; the first listed among equally near ones."""
    near = []
    for i, e in enumerate(table.entries):
        if e.op != op.name or e.dtype != dtype_of(problem) or capability(e.arch) != capability(target.arch):
            continue
        p = _entry_problem(op, e.problem, e.dtype)
        if p is not None and _kind(p) == _kind(problem) and (d := distance(p, problem)) <= MAX_DISTANCE:
            near.append((d, i, e))
    return min(near)[2] if near else None


def distance(a: Problem, b: Problem) -> float:
    """Euclidean distance between two problems' vectors of log2(1 + size) (one op's dims, in its order;
    a batch's count is one more component): 1.0 is one size twice the other's."""
    return math.dist(_logs(a), _logs(b))


def _logs(p: Problem) -> list[float]:
    return [math.log2(1 + v) for _, v in p.sizes] + ([math.log2(1 + p.batch.count)] if p.batch else [])


def _kind(p: Problem) -> tuple:
    """What must agree besides the sizes: element types, layout, fused epilogue, residual, batch strides."""
    batch = None if p.batch is None else (p.batch.stride_a == 0, p.batch.stride_b == 0)
    return p.types, p.layout, p.epilogue, p.residual, batch


@functools.lru_cache(maxsize=4096)
def _entry_problem(op: Op, text: str, dtype: str) -> Problem | None:
    """A table entry's Problem (history.parse_problem); None where the op no longer accepts it."""
    try:
        return parse_problem(op, text, dtype)
    except UsageError:
        return None


def _legal(op: Op, sched: Schedule | dict, problem: Problem, target: Target) -> Schedule | None:
    """`sched` if the op builds its kernel and plan for `problem` on `target`, else None."""
    from ..prepared import prepare
    try:
        sched = sched if isinstance(sched, Schedule) else Schedule.from_dict(sched)
        prepare(op, sched, problem, target)
        return sched
    except ScheduleError:
        return None


# -- the shipped tables ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def shipped_table(key: str) -> Table | None:
    """The table shipped for GPU `key`, read once; None where there is none."""
    path = TABLES / f"{key}.json"
    return read_table(path) if path.is_file() else None


def read_table(path: str | os.PathLike) -> Table:
    """A table file; UsageError naming the file and what is wrong with it."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"tuned table {path} cannot be read: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UsageError(f"tuned table {path} is not a {FORMAT} file")
    names = {f.name for f in dataclasses.fields(Entry)}
    entries = []
    for i, d in enumerate(doc.get("entries", [])):
        try:
            entries.append(Entry(**dict({k: v for k, v in d.items() if k in names},
                                        schedule=Schedule.from_dict(d["schedule"]))))
        except (TypeError, KeyError, AttributeError, ScheduleError) as e:
            raise UsageError(f"tuned table {path} entry {i + 1}: {e}") from None
    return Table(str(doc.get("key", "")), str(doc.get("gpu", "")), tuple(entries), str(path))


# -- building a table ------------------------------------------------------------------------------
def build_table(records: list[Record], gpu: str, command: str = "") -> dict:
    """The table document of GPU `gpu` (its key: gpu_key) from tuning records: per (op, problem, dtype, arch)
    the fastest schedule whose latest record is "ok" and that the op still accepts on that problem."""
    from ..ops import get_op, OPS
    key = gpu_key(gpu)
    groups: dict[tuple, list[Record]] = {}
    for r in standing(records):
        if r.op in OPS and r.arch in ARCHS and gpu_key(r.gpu) == key:
            groups.setdefault((r.op, r.problem, r.dtype, r.arch), []).append(r)
    entries, gpus = [], set()
    for (op_name, problem_text, dtype, arch), recs in sorted(groups.items()):
        op = get_op(op_name)
        problem = _entry_problem(op, problem_text, dtype)
        if problem is None:
            continue
        for r in sorted(recs, key=lambda r: r.time_us):
            sched = _legal(op, r.schedule, problem, arch_target(arch))
            if sched is not None:
                entries.append(Entry(op_name, problem_text, dtype, arch, sched, r.time_us,
                                     date=_date(r.timestamp), command=_tune_command(op_name, problem_text, dtype)))
                gpus.add(r.gpu)
                break
    return {"format": FORMAT, "key": key, "gpu": ", ".join(sorted(gpus)) or gpu,
            "date": datetime.date.today().isoformat(), "command": command,
            "entries": [e.to_json() for e in entries]}


def write_table(doc: dict, path: str | os.PathLike) -> Path:
    """Write a table document atomically (a temporary file in the same folder, renamed over `path`), one
    entry a line so that a diff of a table reads shape by shape."""
    from ..results import write_text
    head = json.dumps({k: v for k, v in doc.items() if k != "entries"}, indent=1)[:-2]
    lines = ",\n".join("  " + json.dumps(e) for e in doc["entries"])
    return write_text(f'{head},\n "entries": [\n{lines}\n ]\n}}\n', path)


def _date(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).date().isoformat() if timestamp else ""


def _tune_command(op: str, problem: str, dtype: str) -> str:
    inp, _, out = dtype.partition("->")
    types = (["--dtype", inp] if inp != "float32" or out else []) + (["--out-dtype", out] if out else [])
    return shlex.join(["kernelgen", "tune", op, "--size", problem, *types])
