"""The tuner's progress line: candidates built, measured and failed, the best so far, the time left.

>>> from kernelgen.tune.progress import Progress
>>> p = Progress(total=200, label="tuning sgemm", clock=iter([0.0, 40.0]).__next__)
>>> p.built, p.measured, p.failed, p.best_us = 24, 20, 1, 812.25
>>> p.line()
'tuning sgemm [##------------------] 20/200 measured, 24 built, 1 failed, best 812.25 us, 6m00s left'

`total` is the number of measurements the run will make (the budget, or the space less what the
database already holds when resuming); outcomes taken from the database are counted apart. The
time left is the time per measurement so far times the measurements still to come. On a terminal the line is redrawn in place on stderr; elsewhere (a
log, CI) a line is written at most every `every_s` seconds and once at the end, so a log shows the
run's pace without thousands of lines.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

WIDTH = 20


class Progress:
    def __init__(self, total: int, label: str = "tuning", stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, every_s: float = 10.0):
        self.total, self.label, self.stream, self.clock, self.every_s = total, label, stream, clock, every_s
        self.built = self.measured = self.failed = self.skipped = 0
        self.best_us: float | None = None
        self.start = clock()
        self._last_shown = -1e18
        self._tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def line(self) -> str:
        filled = min(WIDTH, int(WIDTH * self.measured / self.total)) if self.total else WIDTH
        bar = "#" * filled + "-" * (WIDTH - filled)
        parts = [f"{self.measured}/{self.total} measured", f"{self.built} built",
                 f"{self.failed} failed"]
        if self.skipped:
            parts.append(f"{self.skipped} from the database")
        parts.append(f"best {self.best_us:.2f} us" if self.best_us is not None else "no best yet")
        left = self.seconds_left()
        if left is not None:
            parts.append(f"{_duration(left)} left")
        return f"{self.label} [{bar}] " + ", ".join(parts)

    def seconds_left(self) -> float | None:
        if not self.measured:
            return None
        per = (self.clock() - self.start) / self.measured
        return per * max(0, self.total - self.measured)

    def show(self, final: bool = False) -> None:
        if self.stream is None:
            return
        now = self.clock()
        if self._tty:
            self.stream.write("\r\x1b[K" + self.line() + ("\n" if final else ""))
        elif final or now - self._last_shown >= self.every_s:
            self.stream.write(self.line() + "\n")
            self._last_shown = now
        self.stream.flush()


def _duration(s: float) -> str:
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s"


def stream_of(progress) -> TextIO | None:
    """`progress` as tune() takes it: True for stderr, False/None for nothing, or a stream."""
    if progress is True:
        return sys.stderr
    return progress or None
