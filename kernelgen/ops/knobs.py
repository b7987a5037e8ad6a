"""Each op's knob menu, stated once: one `Knob` per knob, with the step that expresses it.

An op's `knobs` tuple is the only place a knob's values are listed. The builder
(`Op.schedule_from_knobs`), the reader (`Op.knobs_from_schedule`), the checks of `-k NAME=VALUE`,
`kernelgen list OP`, the default tuning space and docs/knobs.md all read it:

>>> from kernelgen.schedule import ScheduleReader, schedule
>>> k = Knob("grid_stride", 4, (0, 1, 2, 4, 8), "blocks per SM", "g", Prim("annotate", "grid_stride", absent=0))
>>> k.step.build(schedule("reduce_sum"), 8).to_python()
'schedule("reduce_sum").annotate("grid_stride", 8)'
>>> k.step.build(schedule("reduce_sum"), 0).to_python()     # the value a missing step means: no step
'schedule("reduce_sum")'
>>> k.step.describe(k)
'annotate(grid_stride, 0|1|2|4|8)'
>>> k.step.read(ScheduleReader(schedule("reduce_sum").annotate("grid_stride", 3), ("i",), ("x",)), k, "reduce_sum")
Traceback (most recent call last):
...
kernelgen.errors.ScheduleError: annotate(grid_stride): 3 is illegal (limit: knob grid_stride of reduce_sum; allowed: 0, 1, 2, 4, 8)

A knob's values are a closed list (anything else is refused, the list named) or a `Range` with a
rule (the rule named). `Prim` says which primitive carries the knob: for most knobs the builder and
the reader follow from it (`prim(target, value)`, left out where the value is what a missing step
means); a knob that is a factor of a split (`Prim("split", "i", args=...)`) is built and read by
the op's own code, and `Prim` then only names it. `when=(knob, values)` makes a knob apply only
with another knob's values (its steps are then neither written nor accepted; its value is `unused`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..errors import KnobError, ScheduleError

class _Missing:
    """The sentinel of a field left unset. Pickled by name, so that in a process that unpickles a Knob (the
    tuner's builders) `is _MISSING` still holds: a bare object() came back as another object, read as a
    knob's value."""

    def __repr__(self) -> str:
        return "_MISSING"

    def __reduce__(self) -> str:
        return "_MISSING"


_MISSING = _Missing()


@dataclass(frozen=True)
class Range:
    """Integer values by a rule: lo..hi, every `step`-th from lo, or only powers of two."""

    lo: int
    hi: int
    step: int = 1
    pow2: bool = False

    def __contains__(self, v) -> bool:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            return False
        return self.lo <= v <= self.hi and (v - self.lo) % self.step == 0 and (not self.pow2 or v & (v - 1) == 0)

    def __iter__(self) -> Iterator[int]:
        return (v for v in range(self.lo, self.hi + 1, self.step) if v in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def describe(self) -> str:
        if self.pow2:
            return f"a power of two in {self.lo}..{self.hi}"
        if self.step > 1:
            return (f"a multiple of {self.step} in {self.lo}..{self.hi}" if self.lo % self.step == 0 else
                    f"{self.lo}, {self.lo + self.step}, ... up to {self.hi}")
        return f"an integer in {self.lo}..{self.hi}"

    def short(self) -> str:
        return f"{self.lo}..{self.hi}" + (" (powers of two)" if self.pow2 else f" by {self.step}" if self.step > 1 else "")

    def __str__(self) -> str:
        return self.short()


@dataclass(frozen=True)
class Prim:
    """The step that carries a knob: `prim(target, value)` on each of `targets` (several buffers take
    the same value, e.g. double_buffer(A) and double_buffer(B)). `absent` is the knob's value when the
    step is missing, and the builder leaves the step out for it unless `always`; `values` maps knob
    values to step values where they differ (a bool knob to cache_read's scope). A split, fuse, bind
    or prefetch (steps the op builds and reads itself) only names the knob. `args`, where given, is what
    `kernelgen list` shows for the step's arguments (a split's factors in words) instead of the values."""

    prim: str
    target: str | tuple[str, ...] = ""
    absent: Any = _MISSING
    always: bool = False
    values: tuple[tuple[Any, Any], ...] = ()
    args: str = ""

    @property
    def targets(self) -> tuple[str, ...]:
        return self.target if isinstance(self.target, tuple) else (self.target,)

    @property
    def generic(self) -> bool:
        """Whether the builder and reader follow from this declaration (else the op's own code)."""
        return self.prim not in ("split", "fuse", "bind", "prefetch")

    def to_step(self, value):
        return dict(self.values).get(value, value) if self.values else value

    def from_step(self, raw, knob, op: str):
        if not self.values:
            return raw
        for v, s in self.values:
            if s == raw and type(s) is type(raw):
                return v
        raise ScheduleError(self.prim, self.targets[0], raw, limit=f"knob {knob.name} of {op}",
                            allowed=", ".join(str(s) for _, s in self.values))

    def build(self, s, value):
        """`s` with this knob's step(s) for `value` (none where `value` is what a missing step means)."""
        if not self.generic or (value == self.absent and type(value) is type(self.absent) and not self.always):
            return s
        v = self.to_step(value)
        for t in self.targets:
            s = s.swizzle(v) if self.prim == "swizzle" else getattr(s, self.prim)(t, v)
        return s

    def read(self, r, knob, op: str):
        """The knob's value as the schedule read by `r` gives it (the targets must agree), checked."""
        raws = [r.read(self.prim, t) for t in self.targets]
        for t, raw in zip(self.targets[1:], raws[1:]):
            if raw != raws[0]:
                first = "missing" if raws[0] is None else repr(raws[0])
                raise ScheduleError(self.prim, t, raw, limit=f"knob {knob.name} sets {' and '.join(self.targets)} "
                                                             f"alike; {self.prim}({self.targets[0]}) is {first}")
        if raws[0] is None:
            return knob.default if self.absent is _MISSING else self.absent
        return knob.checked(self.from_step(raws[0], knob, op), op, self)

    def where(self) -> str:
        """The primitive and its target(s): annotate(grid_stride), double_buffer(A|B), split(i)."""
        return f"{self.prim}({'|'.join(self.targets)})"

    def describe(self, knob) -> str:
        """The step as `kernelgen list` shows it: annotate(grid_stride, 0|1|2|4), split(i, ...)."""
        if self.prim == "fuse":
            return f"fuse({', '.join(self.targets)})"
        if self.args:
            return f"{self.prim}({'|'.join(self.targets)}, {self.args})"
        target = "|".join(self.targets)
        shown = knob.choices.short() if isinstance(knob.choices, Range) else \
            "|".join(str(self.to_step(c)) for c in knob.choices if not (c == self.absent and type(c) is type(self.absent)
                                                                        and not self.always and self.values))
        return f"{self.prim}({target + ', ' if target else ''}{shown})"


@dataclass(frozen=True)
class Knob:
    """One knob: its default, its values (a closed tuple or a Range), what it means, the short name it
    has in kernel names, the step that expresses it, the values the default tuning space tries (all
    of them unless `tune` says), and `when=(knob, values)`: it applies only with those values of an
    earlier knob (else it is `unused`, by default its default)."""

    name: str
    default: Any
    choices: tuple | Range
    help: str
    abbr: str = ""
    step: Prim | None = None
    tune: tuple = ()
    when: tuple = ()
    unused: Any = _MISSING

    def encode(self, value) -> str:
        v = {True: "1", False: "0"}.get(value, value) if isinstance(value, bool) else value
        return f"{self.abbr or self.name}{re.sub(r'[^A-Za-z0-9]', '', str(v))}"

    def kind(self) -> type:
        """The type of the knob's values: bool, int, float or str (from its default)."""
        for t in (bool, int, float, str):
            if isinstance(self.default, t):
                return t
        return type(self.default)

    def describe_choices(self) -> str:
        if isinstance(self.choices, Range):
            return self.choices.describe()
        return ", ".join(("true" if c else "false") if isinstance(c, bool) else str(c) for c in self.choices)

    def show_choices(self) -> str:
        """The choices as `kernelgen list` shows them: 1,2,4 or 1..16."""
        return str(self.choices) if isinstance(self.choices, Range) else ",".join(map(str, self.choices))

    @property
    def conditions(self) -> tuple[tuple[str, Any], ...]:
        """`when` as (knob, values) pairs, any of which makes the knob apply: `when` is one pair, or a
        tuple of them (stages applies with shared True or with layout dot)."""
        if not self.when:
            return ()
        return (self.when,) if isinstance(self.when[0], str) else tuple(self.when)

    def state(self, knobs: dict, quote: bool = True) -> str:
        """The values of the knobs this one's conditions read: "shared=False, layout='warp'" (quote=False:
        "shared=False, layout=warp", as a schedule's step states them)."""
        return ", ".join(f"{on}={knobs[on]!r}" if quote else f"{on}={knobs[on]}" for on, _ in self.conditions)

    def condition(self) -> str:
        """When the knob applies: "with shared True", "with algo im2col or implicit", "with shared True or
        with layout dot" ("" always)."""
        return " or ".join(f"with {on} " + (v.short() if isinstance(v, Range) else " or ".join(map(str, v)))
                           for on, v in self.conditions)

    def meaning(self) -> str:
        """The help text, with the condition under which the knob applies."""
        return f"{self.help} [{self.condition()}]" if self.when else self.help

    def tune_values(self) -> tuple:
        return self.tune or tuple(self.choices)

    def applies(self, knobs: dict) -> bool:
        return not self.when or any(knobs[on] in values for on, values in self.conditions)

    def off_value(self):
        return self.default if self.unused is _MISSING else self.unused

    def allows(self, value) -> bool:
        """Whether `value` has the knob's type and is one of its values (or keeps its range's rule)."""
        kind = self.kind()
        if kind in (int, float) and isinstance(value, (bool, np.bool_)):
            return False
        if kind is int and not isinstance(value, (int, np.integer)):
            return False
        if kind is bool and not isinstance(value, (bool, np.bool_)):
            return False
        if kind is str and not isinstance(value, str):
            return False
        return value in self.choices

    def checked(self, value, op: str, step: Prim | None = None):
        """`value` as read from a schedule, or a ScheduleError naming the step, the value and the choices."""
        if not self.allows(value):
            step = step or self.step
            prim, target = (step.prim, step.targets[0]) if step else ("knob", self.name)
            raise ScheduleError(prim, target, value, limit=f"knob {self.name} of {op}", allowed=self.describe_choices())
        return self.kind()(value) if self.kind() in (bool, int, float) else value

    def parse(self, text: str, op: str = ""):
        """A value from the command line's text (`-k NAME=TEXT`), checked by `check`."""
        text, kind = text.strip(), self.kind()
        value: Any = text
        if kind is bool:
            if text.lower() not in ("1", "0", "true", "false"):
                raise KnobError(f"{op + ': ' if op else ''}knob {self.name}={text!r} must be true or false")
            value = text.lower() in ("1", "true")
        elif kind in (int, float):
            try:
                value = int(text) if kind is int else float(text)
            except ValueError:
                raise KnobError(f"{op + ': ' if op else ''}knob {self.name}={text!r} is not "
                                f"{'an integer' if kind is int else 'a number'}; choices: {self.describe_choices()}") from None
        return self.check(value, op)

    def check(self, value, op: str = ""):
        """`value` if it has the knob's type and is one of its choices (or keeps its range's rule); else a
        KnobError naming the knob, the value and what is allowed."""
        kind, where = self.kind(), f"{op + ': ' if op else ''}knob {self.name}={value!r}"
        if kind is bool and not isinstance(value, (bool, np.bool_)):
            raise KnobError(f"{where} is a {type(value).__name__}; it must be true or false", self.name, value)
        if kind is int and (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer))):
            raise KnobError(f"{where} is a {type(value).__name__}; it must be an integer (choices: "
                            f"{self.describe_choices()})", self.name, value)
        if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float, np.number))):
            raise KnobError(f"{where} is a {type(value).__name__}; it must be a number (choices: "
                            f"{self.describe_choices()})", self.name, value)
        if kind is str and not isinstance(value, str):
            raise KnobError(f"{where} is a {type(value).__name__}; it must be one of {self.describe_choices()}",
                            self.name, value)
        if value not in self.choices:
            if isinstance(self.choices, Range):
                raise KnobError(f"{where} is outside its range (allowed: {self.describe_choices()})", self.name, value)
            raise KnobError(f"{where} is not one of its choices (allowed: {self.describe_choices()})", self.name, value)
        return kind(value) if kind in (bool, int, float) else value


def knob_rows(op) -> list[dict]:
    """One row per knob of `op`, as `kernelgen list OP` and docs/knobs.md show them."""
    return [{"knob": k.name, "default": k.default, "choices": k.show_choices(), "step": k.step.where() if k.step else "",
             "meaning": k.meaning()} for k in op.knobs]


def markdown(ops) -> str:
    """docs/knobs.md: every op's knob table and primitives (`kernelgen list --markdown`)."""
    cols = ["knob", "default", "choices", "step", "meaning"]
    out = ["# The knobs of every op", "",
           "Generated from each op's knob table (`knobs` in kernelgen/ops/*.py) by "
           "`kernelgen list --markdown > docs/knobs.md`; do not edit. `kernelgen list OP` prints the same.", ""]
    for op in ops:
        out += [f"## {op.name}", "", op.summary, "",
                "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        out += ["| " + " | ".join(str(r[c]).replace("|", "\\|") for c in cols) + " |" for r in knob_rows(op)]
        out += ["", f"Primitives: {op.primitives_help}", "", f"Default schedule: `{op.default_schedule()}`", ""]
    return "\n".join(out)
