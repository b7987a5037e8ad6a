"""One error family for everything a user can get wrong, each message on one line with the numbers.

>>> from kernelgen.errors import ScheduleError
>>> str(ScheduleError("vectorize", "A", 8, limit="16 bytes per access", allowed="1, 2, 4"))
'vectorize(A): 8 is illegal (limit: 16 bytes per access; allowed: 1, 2, 4)'

The CLI turns any KernelgenError into a one-line message and exit code 2 (usage and schedule
errors) or 1 (a kernel that gave a wrong answer); everything else is a bug and keeps its traceback.
"""
from __future__ import annotations


class KernelgenError(Exception):
    """Base of every error a user can cause; `exit_code` is what the CLI returns for it."""

    exit_code = 2


class UsageError(KernelgenError):
    """Unknown op, knob or size, bad arrays, missing GPU or compiler."""


class ScheduleError(KernelgenError):
    """An illegal schedule. Names the primitive, its target, the value, the limit and the legal choices."""

    def __init__(self, primitive: str, target: str, value, *, limit: str = "", allowed: str = ""):
        self.primitive, self.target, self.value = primitive, target, value
        self.limit, self.allowed = limit, allowed
        extra = "; ".join(p for p in (f"limit: {limit}" if limit else "", f"allowed: {allowed}" if allowed else "") if p)
        where = f"{primitive}({target})" if target else primitive
        super().__init__(f"{where}: {value!r} is illegal" + (f" ({extra})" if extra else ""))


class KnobError(ScheduleError, UsageError):
    """A knob value that is of the wrong type, not one of a named knob's choices, or outside the
    choices and illegal: names the knob, the value and the choices (and the rule it breaks)."""

    def __init__(self, message: str, knob: str = "", value=None):
        self.primitive, self.target, self.value, self.limit, self.allowed = "knob", knob, value, "", ""
        KernelgenError.__init__(self, message)


def check(cond: bool, primitive: str, target: str, value, *, limit: str = "", allowed: str = "") -> None:
    """Raise ScheduleError unless `cond` holds (tinygrad's `check`, with the numbers in the message)."""
    if not cond:
        raise ScheduleError(primitive, target, value, limit=limit, allowed=allowed)


class CompileError(KernelgenError):
    """NVRTC (or the emulator's C++ compiler) rejected a kernel. Carries the full log and source."""

    def __init__(self, symbol: str, log: str, source: str):
        self.symbol, self.log, self.source = symbol, log, source
        first = next((ln for ln in log.splitlines() if "error" in ln), log.strip().splitlines()[0] if log.strip() else "")
        super().__init__(f"compiling {symbol} failed: {first.strip()}")

    def details(self) -> str:
        """The log followed by the offending source lines with numbers (for --verbose and tracebacks)."""
        import re
        lines = self.source.splitlines()
        out = [self.log.rstrip()]
        for num in sorted({int(n) for n in re.findall(r"\((\d+)\): (?:error|warning)", self.log)}):
            lo, hi = max(1, num - 2), min(len(lines), num + 2)
            out.append(f"--- source lines {lo}-{hi}:")
            out += [f"{'>' if i == num else ' '}{i:5d}| {lines[i - 1]}" for i in range(lo, hi + 1)]
        return "\n".join(out)


class LaunchError(KernelgenError):
    """The kernel failed at launch or while running (bad configuration, illegal address)."""


class ValidationError(KernelgenError):
    """The kernel ran but its output differs from the float64 reference."""

    exit_code = 1
