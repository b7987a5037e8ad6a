"""Write kernels as `.cu` files: the file name and the `extern "C"` symbols both come from the knobs.

>>> import tempfile
>>> from kernelgen.ops import get_op
>>> from kernelgen.emit import write_kernel
>>> op = get_op("reduce_sum")
>>> path, changed = write_kernel(op.kernel(op.default_schedule()), tempfile.mkdtemp())
>>> path.name == op.kernel(op.default_schedule()).name + ".cu", changed
(True, True)

A file is written only when its content changed (so `generated/` diffs show what a change did to
the kernels), and always through a temporary file and a rename, so it is never half-written. Writing
several (`write_kernels`, `write_all`) renders everything first, then writes every changed file under
a temporary name and renames them all at the end: a failure part-way writes nothing.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .ops import OPS
from .ops.base import Kernel, Op
from .render import declarations, render
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


def write_files(files: dict[Path, str]) -> list[Path]:
    """Write every file whose content changed, all or none: each goes to a temporary name beside its
    destination, and only when all of them are written are they renamed into place. Returns the
    changed paths; on any error, the temporary files and the folders made for them are removed."""
    changed = {}
    for path, text in files.items():
        if path.exists() and not path.is_file():
            from .errors import UsageError
            raise UsageError(f"{path} is in the way: it is a folder, not a .cu file")
        if not (path.exists() and path.read_text(errors="replace") == text):
            changed[path] = text
    made: list[Path] = []
    temps: list[tuple[str, Path]] = []
    try:
        for path, text in changed.items():
            missing = [p for p in [path.parent, *path.parent.parents] if not p.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            made += reversed(missing)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            temps.append((tmp, path))
            with os.fdopen(fd, "w") as f:
                f.write(text)
        for tmp, path in temps:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:
                pass
        raise
    return list(changed)


def write_kernels(kernels: list[Kernel], out_dir: str | os.PathLike, headers: bool = False) -> list[tuple[Path, bool]]:
    """Write several kernels' files, all or none; (path, changed) for each. With `headers`, each .cu
    gets a .h beside it declaring its host launcher."""
    files = {Path(out_dir) / f"{k.name}.cu": render(k) for k in kernels}
    if headers:
        files.update({Path(out_dir) / f"{k.name}.h": declarations(k) for k in kernels})
    changed = set(write_files(files))
    return [(p, p in changed) for p in files]


def generated_kernels(op: Op, default: Target, types=None, layout: str | None = None) -> list[tuple[str, Kernel]]:
    """(label, kernel) for the op's default schedule and each step of its ladder in `types` (default
    the op's first type) and operand layout (GEMM-like ops; default NN), without repeats; a step that
    names its own arch (a tensor-core instruction of a later GPU) is built for that arch, and a step that
    runs only in other input types in its own first type (Op.step_types)."""
    out, seen, ladder = [], set(), op.ladder()
    for label, sched, arch, t in [("default", op.default_schedule(), "", types)] + [
            (f"ladder {i}: {s.title}", s.schedule, s.arch, op.step_types(s, types)) for i, s in enumerate(ladder, 1)]:
        if label == "default" and not _default_runs_in(op, ladder, types):
            continue
        kernel = op.kernel(sched, target(arch) if arch else default, t, layout)
        if kernel.name not in seen:
            seen.add(kernel.name)
            out.append((label, kernel))
    return out


def _default_runs_in(op: Op, ladder, types) -> bool:
    """Whether the default schedule runs in `types`: an op whose steps split by type (attention: fp32 on
    CUDA cores, 16 bits on tensor cores) has a default that is one of its typed steps; in the other types
    those steps stand in for it. Any other default must build (a ScheduleError is a real error)."""
    default = op.default_schedule()
    step = next((s for s in ladder if s.schedule == default), None)
    return step is None or not step.dtypes or (types or op.types()).input.name in step.dtypes


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
    changed = write_files({out_dir / rel: text for rel, text in files.items()})
    removed = []
    for path in sorted(out_dir.glob("*/*.cu")) + sorted(out_dir.glob("*/*/*.cu")):
        if str(path.relative_to(out_dir)) not in files:
            path.unlink()
            removed.append(path)
    return changed, removed
