"""Write kernels as `.cu` files: the file name and the `extern "C"` symbols both come from the knobs.

>>> import tempfile
>>> from kernelgen.ops import get_op
>>> from kernelgen.emit import write_kernel
>>> op = get_op("reduce_sum")
>>> path, changed = write_kernel(op.kernel(op.default_schedule()), tempfile.mkdtemp())
>>> path.name == op.kernel(op.default_schedule()).name + ".cu", changed
(True, True)

A file is written only when its content changed (so `generated/` diffs show what a change did to
the kernels), and always through a temporary file and a rename, so it is never half-written.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .ops import OPS
from .ops.base import Kernel, Op
from .render import render
from .target import DEFAULT_ARCH, Target, target


def write_text(path: Path, text: str) -> bool:
    """Atomically write `text` to `path` unless it already holds it; True if the file changed."""
    path = Path(path)
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return True


def write_kernel(kernel: Kernel, out_dir: str | os.PathLike) -> tuple[Path, bool]:
    path = Path(out_dir) / f"{kernel.name}.cu"
    return path, write_text(path, render(kernel))


def generated_kernels(op: Op, default: Target) -> list[tuple[str, Kernel]]:
    """(label, kernel) for the op's default schedule and each step of its ladder, without repeats; a
    step that names its own arch (a tensor-core instruction of a later GPU) is built for that arch."""
    out, seen = [], set()
    for label, sched, arch in [("default", op.default_schedule(), "")] + [
            (f"ladder {i}: {s.title}", s.schedule, s.arch) for i, s in enumerate(op.ladder(), 1)]:
        kernel = op.kernel(sched, target(arch) if arch else default)
        if kernel.name not in seen:
            seen.add(kernel.name)
            out.append((label, kernel))
    return out


def expected_files(arch: str = DEFAULT_ARCH) -> dict[str, str]:
    """Relative path under generated/ (op/arch/name.cu) -> content, for every op: what `kernelgen emit
    --all` writes."""
    files = {}
    for name, op in sorted(OPS.items()):
        for _, kernel in generated_kernels(op, target(arch)):
            files[f"{name}/{kernel.arch}/{kernel.name}.cu"] = render(kernel)
    return files


def write_all(out_dir: str | os.PathLike, arch: str = DEFAULT_ARCH) -> tuple[list[Path], list[Path]]:
    """Write every op's default and ladder kernels; remove stale ones. Returns (changed, removed)."""
    out_dir = Path(out_dir)
    files = expected_files(arch)
    changed = [out_dir / rel for rel, text in files.items() if write_text(out_dir / rel, text)]
    removed = []
    for path in sorted(out_dir.glob("*/*.cu")) + sorted(out_dir.glob("*/*/*.cu")):
        if str(path.relative_to(out_dir)) not in files:
            path.unlink()
            removed.append(path)
    return changed, removed
