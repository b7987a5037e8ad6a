"""Schedules are frozen values: a tuple of named primitives (TVM's names) over an op's loops and buffers.

>>> from kernelgen.schedule import schedule
>>> s = schedule("sgemm").split("i", 128, 8).split("j", 128, 8).split("k", 8).bind("i.0", "blockIdx.y")
>>> s.to_python()
'schedule("sgemm").split("i", 128, 8).split("j", 128, 8).split("k", 8).bind("i.0", "blockIdx.y")'
>>> Schedule.from_json(s.to_json()) == s
True

`split("i", 128, 8)` makes loops `i.0` (over tiles of 128), `i.1` (over tiles of 8 inside one of
128) and `i.2` (the 8 inside a tile): factors are nested tile extents, outermost first.
What each primitive means for a given op is in `kernelgen list OP`; an op that cannot honour a step
rejects it with a ScheduleError instead of ignoring it.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .errors import ScheduleError, check
from .frozen import hash_once



def _type_error(prim: str, field: str, value, want: str) -> ScheduleError:
    return ScheduleError(prim, field, value, limit=f"{field} must be {want}, not {_kind(value)}")


def _kind(value) -> str:
    return {bool: "a bool", int: "an int", float: "a float", str: "a str", list: "a list", tuple: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def _int(prim: str, field: str, value) -> int:
    """An int field: ints (and numpy integers) only; no bools, no 256.0, no "256"."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise _type_error(prim, field, value, "an int")
    return int(value)


def _str(prim: str, field: str, value) -> str:
    if not isinstance(value, str):
        raise _type_error(prim, field, value, "a str")
    return value


def _coerce(prim: str, field: str, annotation: str, value):
    """`value` checked against a field's annotation (int, str, tuple[int, ...], tuple[str, ...], Any)."""
    ann = annotation.replace(" ", "")
    if ann == "int":
        return _int(prim, field, value)
    if ann == "str":
        return _str(prim, field, value)
    m = re.fullmatch(r"tuple\[(int|str),\.\.\.\]", ann)
    if m:
        if not isinstance(value, (list, tuple)):
            raise _type_error(prim, field, value, f"a list of {m.group(1)}s")
        one = _int if m.group(1) == "int" else _str
        return tuple(one(prim, field, v) for v in value)
    if ann == "Any":
        if isinstance(value, np.generic):
            value = value.item()
        if not isinstance(value, (str, int, float, bool)):
            raise _type_error(prim, field, value, "a str, number or bool")
        return value
    return value      # an annotation this check does not know: the step's own reader checks it


@dataclass(frozen=True)
class Step:
    """One primitive. Subclasses name themselves with `prim` and list their fields in call order.
    Every field is checked against its annotation when the step is made (from Python or JSON), so a
    factor of 256.0, "256" or true is a ScheduleError naming the primitive and the field."""

    prim: ClassVar[str] = ""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _coerce(self.prim, f.name, str(f.type), getattr(self, f.name)))

    @property
    def target(self) -> str:
        return str(getattr(self, dataclasses.fields(self)[0].name))

    @property
    def setting(self):
        """What the step sets on its target: its last field (bind's axis, vectorize's width, ...)."""
        return getattr(self, dataclasses.fields(self)[-1].name)

    def args(self) -> tuple:
        vals = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            vals.extend(v if isinstance(v, tuple) else (v,))
        return tuple(vals)

    def to_python(self) -> str:
        return f"{self.prim}({', '.join(json.dumps(a) if isinstance(a, str) else repr(a) for a in self.args())})"

    def to_dict(self) -> dict:
        d = {"prim": self.prim}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            d[f.name] = list(v) if isinstance(v, tuple) else v
        return d


@dataclass(frozen=True)
class Split(Step):
    prim: ClassVar[str] = "split"
    loop: str
    factors: tuple[int, ...]


@dataclass(frozen=True)
class Reorder(Step):
    prim: ClassVar[str] = "reorder"
    loops: tuple[str, ...]


@dataclass(frozen=True)
class Fuse(Step):
    prim: ClassVar[str] = "fuse"
    loops: tuple[str, ...]


@dataclass(frozen=True)
class Bind(Step):
    prim: ClassVar[str] = "bind"
    loop: str
    axis: str


@dataclass(frozen=True)
class CacheRead(Step):
    prim: ClassVar[str] = "cache_read"
    buffer: str
    scope: str


@dataclass(frozen=True)
class CacheWrite(Step):
    prim: ClassVar[str] = "cache_write"
    buffer: str
    scope: str


@dataclass(frozen=True)
class StorageAlign(Step):
    prim: ClassVar[str] = "storage_align"
    buffer: str
    pad: int


@dataclass(frozen=True)
class Vectorize(Step):
    prim: ClassVar[str] = "vectorize"
    target_name: str
    width: int

    @property
    def target(self) -> str:
        return self.target_name


@dataclass(frozen=True)
class Unroll(Step):
    prim: ClassVar[str] = "unroll"
    loop: str
    factor: int = 0  # 0: fully


@dataclass(frozen=True)
class DoubleBuffer(Step):
    prim: ClassVar[str] = "double_buffer"
    buffer: str
    stages: int = 2


@dataclass(frozen=True)
class Prefetch(Step):
    """Software prefetching in a grid-stride loop: each thread loads `distance` of its iterations of
    `buffer` ahead, into `scope` registers or shared memory, in batches ("batch": `distance` loads,
    then their `distance` uses) or rolling ("rolling": a ring refilled one iteration at a time).
    The padding of a thread's shared slot against bank conflicts is storage_align(buffer, pad)."""

    prim: ClassVar[str] = "prefetch"
    buffer: str
    distance: int
    scope: str = "registers"
    mode: str = "batch"


@dataclass(frozen=True)
class Reduction(Step):
    prim: ClassVar[str] = "reduction"
    loop: str
    strategy: str


@dataclass(frozen=True)
class Swizzle(Step):
    prim: ClassVar[str] = "swizzle"
    factor: int

    @property
    def target(self) -> str:
        return ""


@dataclass(frozen=True)
class Tensorize(Step):
    """The loop a tensor-core instruction computes (TVM's tensorize), e.g. ("k.1", "mma.m16n8k16")."""

    prim: ClassVar[str] = "tensorize"
    loop: str
    intrinsic: str


@dataclass(frozen=True)
class Annotate(Step):
    """An op-specific switch with no TVM name (the algorithm of conv2d, the finish of a reduction)."""

    prim: ClassVar[str] = "annotate"
    key: str
    value: Any


PRIMITIVES = {cls.prim: cls for cls in (Split, Reorder, Fuse, Bind, CacheRead, CacheWrite, StorageAlign,
                                        Vectorize, Unroll, DoubleBuffer, Prefetch, Reduction, Swizzle, Tensorize,
                                        Annotate)}


def _step_from_dict(d, index: int = 0) -> Step:
    """One step from JSON, checked field by field against its primitive's signature."""
    where = f"step {index + 1}"
    if not isinstance(d, dict):
        raise ScheduleError("schedule", where, d, limit=f"a step is an object such as "
                                                       '{"prim": "split", "loop": "i", "factors": [128]}')
    d = dict(d)
    prim = d.pop("prim", None)
    if prim not in PRIMITIVES:
        raise ScheduleError("schedule", f"{where} prim", prim,
                            limit="missing" if prim is None else "unknown primitive", allowed=", ".join(PRIMITIVES))
    cls = PRIMITIVES[prim]
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    unknown = [k for k in d if k not in names]
    if unknown:
        raise ScheduleError(prim, f"{where} field", unknown[0],
                            limit=f"{prim} has no field {unknown[0]!r}", allowed=", ".join(names))
    kwargs = {}
    for f in fields:
        if f.name in d:
            kwargs[f.name] = d[f.name]
        elif f.default is dataclasses.MISSING:
            raise ScheduleError(prim, f"{where} field", f.name, limit=f"{prim} needs field {f.name!r}",
                                allowed=", ".join(names))
    return cls(**kwargs)


@hash_once
@dataclass(frozen=True)
class Schedule:
    """An op name and the primitives applied to it, in order. Every builder method returns a new Schedule."""

    op: str
    steps: tuple[Step, ...] = ()

    def _add(self, step: Step) -> "Schedule":
        return Schedule(self.op, self.steps + (step,))

    # -- builders (TVM's names) ------------------------------------------------------------------
    def split(self, loop: str, *factors: int) -> "Schedule":
        return self._add(Split(loop, tuple(factors)))

    def tile(self, outer: str, inner: str, fo: int, fi: int) -> "Schedule":
        """Two splits at once: the 2-D tiling of TVM's `tile`."""
        return self.split(outer, fo).split(inner, fi)

    def reorder(self, *loops: str) -> "Schedule":
        return self._add(Reorder(tuple(loops)))

    def fuse(self, *loops: str) -> "Schedule":
        return self._add(Fuse(tuple(loops)))

    def bind(self, loop: str, axis: str) -> "Schedule":
        return self._add(Bind(loop, axis))

    def cache_read(self, buffer: str, scope: str) -> "Schedule":
        return self._add(CacheRead(buffer, scope))

    def cache_write(self, buffer: str, scope: str) -> "Schedule":
        return self._add(CacheWrite(buffer, scope))

    def storage_align(self, buffer: str, pad: int) -> "Schedule":
        return self._add(StorageAlign(buffer, pad))

    def vectorize(self, target: str, width: int) -> "Schedule":
        return self._add(Vectorize(target, width))

    def unroll(self, loop: str, factor: int = 0) -> "Schedule":
        return self._add(Unroll(loop, factor))

    def double_buffer(self, buffer: str, stages: int = 2) -> "Schedule":
        return self._add(DoubleBuffer(buffer, stages))

    def prefetch(self, buffer: str, distance: int, scope: str = "registers", mode: str = "batch") -> "Schedule":
        return self._add(Prefetch(buffer, distance, scope, mode))

    def reduction(self, loop: str, strategy: str) -> "Schedule":
        return self._add(Reduction(loop, strategy))

    def swizzle(self, factor: int) -> "Schedule":
        return self._add(Swizzle(factor))

    def annotate(self, key: str, value) -> "Schedule":
        return self._add(Annotate(key, value))

    def tensorize(self, loop: str, intrinsic: str) -> "Schedule":
        return self._add(Tensorize(loop, intrinsic))

    # -- values ----------------------------------------------------------------------------------
    def to_python(self) -> str:
        return f"schedule({json.dumps(self.op)})" + "".join("." + s.to_python() for s in self.steps)

    def __str__(self) -> str:
        return self.to_python()

    def to_dict(self) -> dict:
        return {"op": self.op, "steps": [s.to_dict() for s in self.steps]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def __post_init__(self):
        if not isinstance(self.op, str):
            raise _type_error("schedule", "op", self.op, "an op name (a str)")
        if not isinstance(self.steps, tuple) or not all(isinstance(s, Step) for s in self.steps):
            raise _type_error("schedule", "steps", self.steps, "a tuple of steps")

    @staticmethod
    def from_dict(d: dict) -> "Schedule":
        shape = '{"op": NAME, "steps": [...]}'
        if not isinstance(d, dict):
            raise ScheduleError("schedule", "json", d, limit=f"a schedule is an object {shape}, not {_kind(d)}")
        if "op" not in d:
            raise ScheduleError("schedule", "json", sorted(d), limit=f"field 'op' is missing", allowed=shape)
        unknown = sorted(set(d) - {"op", "steps"})
        if unknown:
            raise ScheduleError("schedule", "json", unknown[0], limit=f"unknown field {unknown[0]!r}", allowed=shape)
        steps = d.get("steps", [])
        if not isinstance(steps, list):
            raise _type_error("schedule", "steps", steps, "a list of steps")
        return Schedule(d["op"], tuple(_step_from_dict(s, i) for i, s in enumerate(steps)))

    @staticmethod
    def from_json(text: str) -> "Schedule":
        try:
            data = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not JSON")))
        except (json.JSONDecodeError, ValueError, RecursionError) as e:
            msg = e.msg if isinstance(e, json.JSONDecodeError) else str(e) or "nested too deeply"
            where = f" at line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) else ""
            raise ScheduleError("schedule", "json", text[:40], limit=f"not JSON: {msg}{where}") from None
        return Schedule.from_dict(data)


def schedule(op: str) -> Schedule:
    """Start an empty schedule for `op`."""
    return Schedule(op)


class ScheduleReader:
    """How an op reads a schedule: every lookup marks the step as used, and `finish()` rejects steps
    nobody used, so a primitive the template cannot honour is an error, never silently dropped."""

    def __init__(self, sched: Schedule, loops: tuple[str, ...], buffers: tuple[str, ...]):
        self.sched, self.loops, self.buffers = sched, loops, buffers
        self._used: set[int] = set()
        self._check_names()

    # -- names: every loop and buffer a step names exists, and a split comes before its loops' use ----
    def _loop_names(self) -> str:
        bases = [l for l in self.loops if "." not in l]
        return ", ".join(bases) + (f" and their splits ({bases[0]}.0, {bases[0]}.1, ...)" if bases else "")

    def _check_loop(self, i: int, step: Step, name: str) -> None:
        for j, f in enumerate(self.sched.steps):     # a loop that fuse() makes: "i.0.j.0" or "nkpq"
            if isinstance(f, Fuse) and name in (".".join(f.loops), "".join(f.loops)):
                if j > i:
                    raise ScheduleError(step.prim, name, name, limit=f"step {i + 1} uses loop {name!r} before step "
                                                                     f"{j + 1}, {f.to_python()}, makes it")
                return
        base, dot, sub = name.partition(".")
        splits = [(j, s) for j, s in enumerate(self.sched.steps) if isinstance(s, Split) and s.loop == base]
        if dot and splits and sub.isdigit():
            j, split = splits[0]
            made = ", ".join(f"{base}.{k}" for k in range(len(split.factors) + 1))
            if j > i:
                raise ScheduleError(step.prim, name, step.args()[1:] if len(step.args()) > 1 else name,
                                    limit=f"step {i + 1} uses loop {name!r} before step {j + 1}, {split.to_python()}, "
                                          f"makes it: put the split first")
            if int(sub) > len(split.factors):
                raise ScheduleError(step.prim, name, name, limit=f"loop {name!r} does not exist: "
                                                                 f"{split.to_python()} makes {made}")
            return
        if name not in self.loops:
            raise ScheduleError(step.prim, name, name, limit=f"loop {name!r} does not exist in {self.sched.op}",
                                allowed=f"loops {self._loop_names()}")

    def _check_buffer(self, step: Step, name: str) -> None:
        if name not in self.buffers:
            raise ScheduleError(step.prim, name, name, limit=f"buffer {name!r} does not exist in {self.sched.op}",
                                allowed=f"buffers {', '.join(self.buffers)}")

    def _check_names(self) -> None:
        for i, step in enumerate(self.sched.steps):
            if isinstance(step, Split):
                if step.loop not in self.loops or "." in step.loop:
                    raise ScheduleError("split", step.loop, step.loop,
                                        limit=f"loop {step.loop!r} does not exist in {self.sched.op} (split takes "
                                              "an op's loop, not a split one)",
                                        allowed=", ".join(l for l in self.loops if "." not in l))
                if not step.factors:
                    raise ScheduleError("split", step.loop, (), limit="split needs at least one factor")
            elif isinstance(step, (Bind, Unroll, Reduction)):
                self._check_loop(i, step, step.loop)
            elif isinstance(step, (Reorder, Fuse)):
                for name in step.loops:
                    self._check_loop(i, step, name)
            elif isinstance(step, Vectorize):
                if step.target_name not in self.buffers:
                    self._check_loop(i, step, step.target_name)
            elif isinstance(step, (CacheRead, CacheWrite, StorageAlign, DoubleBuffer, Prefetch)):
                self._check_buffer(step, step.buffer)

    def _find(self, cls, target: str | None = None) -> list[tuple[int, Step]]:
        return [(i, s) for i, s in enumerate(self.sched.steps)
                if isinstance(s, cls) and (target is None or s.target == target)]

    def _take(self, cls, target: str | None):
        found = self._find(cls, target)
        if len(found) > 1:
            raise ScheduleError(cls.prim, target or "", "given twice", limit="one per target")
        if not found:
            return None
        self._used.add(found[0][0])
        return found[0][1]

    def split(self, loop: str, n: int | tuple[int, ...], default: tuple[int, ...]) -> tuple[int, ...]:
        """The factors of `split(loop, ...)`, requiring `n` of them (or one of several counts)."""
        step = self._take(Split, loop)
        if step is None:
            return default
        counts = n if isinstance(n, tuple) else (n,)
        if len(step.factors) not in counts:
            raise ScheduleError("split", loop, step.factors,
                                limit=f"{' or '.join(map(str, counts))} factor(s) for this op")
        for f in step.factors:
            if f < 1:
                raise ScheduleError("split", loop, f, limit="factors are >= 1")
        return step.factors

    def vector_split(self, loop: str, default: tuple[int, int, int]) -> tuple[int, int, int]:
        """`split(loop, items*threads*vec, threads*vec, vec)` with `vectorize(loop.3, vec)`: the
        strided, vectorised walk most memory-bound ops use. Returns (items, threads, vec); the
        vector width's choices are the op's `vec` knob's, checked with the other knobs."""
        chunk, row, vec = self.split(loop, 3, default)
        check(row % vec == 0 and chunk % row == 0, "split", loop, (chunk, row, vec),
              limit="each factor must divide the one before it")
        width = self.read("vectorize", f"{loop}.3", 1)
        check(width == vec, "vectorize", f"{loop}.3", width, limit=f"split({loop})'s innermost factor is {vec}")
        return chunk // row, row // vec, vec

    def read(self, prim: str, target: str, default=None, allowed: tuple | None = None):
        """The value of the one `prim(target, value)` step (bind's axis, cache_read's scope, vectorize's
        width, annotate's value, ...; swizzle has no target: ""), or `default` when there is none. The
        step counts as used; a value outside `allowed` is a ScheduleError naming the choices."""
        step = self._take(PRIMITIVES[prim], target if prim != "swizzle" else None)
        if step is None:
            return default
        value = step.setting
        if allowed is not None and not any(value == a and type(value) is type(a) for a in allowed):
            raise ScheduleError(prim, target, value, allowed=", ".join(map(str, allowed)))
        return value

    def step(self, prim: str, target: str) -> Step | None:
        """The one `prim(target, ...)` step whole (for a step of several fields, as prefetch), or None;
        it counts as used."""
        return self._take(PRIMITIVES[prim], target)

    def has(self, prim: str, target: str) -> bool:
        """Whether the schedule holds a `prim(target, ...)` step (without using it)."""
        return bool(self._find(PRIMITIVES[prim], target if prim != "swizzle" else None))

    def expect(self, prim: str, target: str, value) -> None:
        """A step the op's structure fixes (bind(i.0, blockIdx.x)): absent or exactly `value`."""
        self.read(prim, target, value, (value,))

    def fuse(self, loops: tuple[str, ...]) -> bool:
        for i, s in enumerate(self.sched.steps):
            if isinstance(s, Fuse) and s.loops == loops:
                self._used.add(i)
                return True
        return False

    def reorder(self, allowed: dict[tuple[str, ...], str]) -> str | None:
        """The name of the loop order given by `reorder(...)`, from the orders the template supports."""
        step = self._take(Reorder, None) if self._find(Reorder) else None
        if step is None:
            return None
        if step.loops not in allowed:
            raise ScheduleError("reorder", "", step.loops,
                                allowed=" | ".join(", ".join(k) for k in allowed))
        return allowed[step.loops]

    def finish(self) -> None:
        for i, s in enumerate(self.sched.steps):
            if i not in self._used:
                raise ScheduleError(s.prim, s.target, s.args()[1:] if len(s.args()) > 1 else s.args(),
                                    limit=f"op {self.sched.op} has no use for this step",
                                    allowed=f"loops {', '.join(self.loops)}; buffers {', '.join(self.buffers)}"
                                            "; see `kernelgen list " + self.sched.op + "`")
