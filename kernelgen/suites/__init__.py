"""Shape suites: named lists of problems that `kernelgen bench --suite NAME` runs, each on its op's
heuristic schedule, validated and timed against the vendor library in the same run.

A suite is a text file, one problem a line: `OP SIZE [DTYPE]`, with SIZE as `--size` takes it and
`#` starting a comment. The shipped suites live beside this module; `--suite FILE.txt` runs a file
of your own.

>>> from kernelgen.suites import load, names
>>> "deepbench-gemm-train" in names()
True
>>> s = load("deepbench-gemm-train")
>>> len(s.entries), s.entries[0]
(160, Entry(op='sgemm', size='M=16,N=1760,K=1760', dtype=None, line=8))
>>> [e.line for e in s.shard(1, 40)][:2]
[8, 48]
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

HERE = Path(__file__).resolve().parent
DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Entry:
    op: str
    size: str
    dtype: str | None    # None: the op's first type
    line: int            # 1-based line in the suite's file, for messages


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    entries: tuple[Entry, ...]

    def shard(self, index: int, count: int) -> tuple[Entry, ...]:
        """Entries index, index + count, ... (1-based index): one of `count` near-equal parts, so a long
        suite splits over several runs or GPUs and the parts together are the whole suite."""
        return self.entries[index - 1::count]

    def ops(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.op for e in self.entries))


def names() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.txt"))


def load(name_or_path: str) -> Suite:
    """A shipped suite by name, or a suite file by path; UsageError naming the line of a malformed entry."""
    path = Path(name_or_path)
    if not (path.suffix == ".txt" and path.is_file()):
        if name_or_path not in names():
            raise UsageError(f"--suite {name_or_path!r} is neither a shipped suite ({', '.join(names())}) nor a "
                             "suite file (FILE.txt: one `OP SIZE [DTYPE]` a line)")
        path = HERE / f"{name_or_path}.txt"
    entries = tuple(_entry(path, i, text) for i, text in enumerate(path.read_text().splitlines(), 1)
                    if text.split("#", 1)[0].strip())
    if not entries:
        raise UsageError(f"suite {str(path)!r} lists no problems (one `OP SIZE [DTYPE]` a line)")
    return Suite(path.stem, path, entries)


def _entry(path: Path, line: int, text: str) -> Entry:
    words = text.split("#", 1)[0].split()
    where = f"{path.name} line {line}"
    if len(words) not in (2, 3) or "=" in words[-1] and len(words) == 3:
        raise UsageError(f"{where}: {text.strip()!r} is not `OP SIZE [DTYPE]` (sizes without spaces, "
                         "e.g. `sgemm M=16,N=1760,K=1760`)")
    dtype = words[2] if len(words) == 3 else None
    if dtype is not None and dtype not in DTYPES:
        raise UsageError(f"{where}: type {dtype!r} is not one of {', '.join(DTYPES)}")
    if not re.fullmatch(r"[a-z0-9_]+", words[0]):
        raise UsageError(f"{where}: {words[0]!r} is not an op name")
    return Entry(words[0], words[1], dtype, line)


def parse_shard(text: str | None) -> tuple[int, int]:
    """`I/N` (1 <= I <= N): the I-th of N parts; None: the whole suite (1/1)."""
    if text is None:
        return 1, 1
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m[1]) <= int(m[2]):
        raise UsageError(f"--shard {text!r} must be I/N with 1 <= I <= N, e.g. 1/3 for the first of three parts")
    return int(m[1]), int(m[2])
