"""The `kernelgen` command: list, emit, inspect, run, tune, bench.

    kernelgen list sgemm                      # knobs and primitives of an op
    kernelgen emit sgemm -k bm=64 -o out/     # write the .cu of a schedule
    kernelgen inspect sgemm --ladder          # registers, spills, 128-bit loads per ladder step
    kernelgen run sgemm                       # compile + inspect + validate (+ time on a GPU)
    kernelgen tune sgemm --size 4096,4096,4096
    kernelgen bench reduce_sum --ladder       # ladder table against the vendor library
    kernelgen bench softmax --size 8192x128 --timing graph   # CUDA-graph replays: small problems

Exit codes: 0 success, 1 a kernel gave a wrong answer, 2 a usage or schedule error (one line,
no traceback).
"""
from __future__ import annotations

import functools
import json
import runpy
import sys
from pathlib import Path

import click

from . import config
from .bench import table
from .errors import KernelgenError, UsageError, ValidationError
from .ops import OPS, get_op
from .ops.base import Op, Problem
from .target import DEFAULT_ARCH, parse_arch, target
from .schedule import Schedule


# -- argument parsing ----------------------------------------------------------------------------
def parse_size(op: Op, text: str | None, small: bool, dtype: str = "float32", out_dtype: str | None = None) -> Problem:
    """`M=127,N=1000,K=1`, or values in the op's dim order (`127,1000,1` or `127x1000x1`)."""
    if not text:
        return op.problem(small=small, dtype=dtype, out_dtype=out_dtype)
    parts = [p for p in text.replace("x", ",").split(",") if p.strip()]
    sizes = {}
    for i, part in enumerate(parts):
        name, _, value = part.rpartition("=")
        if not name:
            if i >= len(op.dims):
                raise UsageError(f"{op.name} takes {len(op.dims)} sizes ({', '.join(d.name for d in op.dims)}); got {text!r}")
            name = op.dims[i].name
        try:
            sizes[name.strip()] = int(value)
        except ValueError:
            raise UsageError(f"size {part!r} is not an integer; write e.g. "
                             + ",".join(f"{d.name}={d.default}" for d in op.dims)) from None
    return op.problem(sizes, small=small, dtype=dtype, out_dtype=out_dtype)


def parse_knob(op: Op, text: str) -> tuple[str, object]:
    name, eq, value = text.partition("=")
    if not eq:
        raise UsageError(f"knob {text!r} must be NAME=VALUE")
    knob = op.knob(name.strip())
    value = value.strip()
    if isinstance(knob.default, bool):
        if value.lower() not in ("1", "0", "true", "false"):
            raise UsageError(f"knob {knob.name}={value!r} must be true or false")
        return knob.name, value.lower() in ("1", "true")
    if isinstance(knob.default, int):
        try:
            return knob.name, int(value)
        except ValueError:
            raise UsageError(f"knob {knob.name}={value!r} must be an integer; choices: {knob.choices}") from None
    if isinstance(knob.default, float):
        return knob.name, float(value)
    return knob.name, value


def load_schedule(path: str) -> Schedule:
    """A JSON file, or a Python file with a variable (`file.py:NAME`, default `schedule`)."""
    file, _, var = path.rpartition(":") if ".py:" in path else (path, "", "")
    p = Path(file)
    if not p.exists():
        raise UsageError(f"schedule file {file!r} does not exist")
    if p.suffix == ".py":
        scope = runpy.run_path(str(p))
        value = scope.get(var or "schedule")
        if not isinstance(value, Schedule):
            raise UsageError(f"{file} defines no Schedule named {var or 'schedule'!r}")
        return value
    return Schedule.from_json(p.read_text())


def select(op: Op, knobs: tuple[str, ...], schedule_file: str | None, step: int | None, best: bool,
           problem: Problem | None, db: str | None) -> Schedule:
    given = sum(bool(x) for x in (knobs, schedule_file, step, best))
    if given > 1:
        raise UsageError("choose one of --knob, --schedule, --step and --best")
    if schedule_file:
        return load_schedule(schedule_file)
    if step:
        ladder = op.ladder()
        if not 1 <= step <= len(ladder):
            raise UsageError(f"--step {step} is out of range; {op.name}'s ladder has steps 1..{len(ladder)}")
        return ladder[step - 1].schedule
    if best:
        from .tune import best_schedule
        from .tune.db import TuningDB
        return best_schedule(op, problem, TuningDB(db) if db else None)
    if not knobs and problem is not None:
        return op.schedule_for(problem)
    return op.schedule(**dict(parse_knob(op, k) for k in knobs))


def timing_option(fn):
    def checked(ctx, param, value):  # a bad method is a usage error before any GPU work
        from .timing import parse_method
        return parse_method(value)
    return click.option("--timing", default="auto", show_default=True, metavar="events|graph|auto", callback=checked,
                        help="GPU timing: events around one launch (L2 flushed), or CUDA-graph replays over "
                             "rotating input sets; auto = graph below 64 MB moved.")(fn)


def dtype_options(fn):
    """--dtype and --out-dtype: the problem's element types (inputs, and outputs where they differ)."""
    fn = click.option("--out-dtype", metavar="TYPE", help="Output element type (default: the input type).")(fn)
    return click.option("--dtype", default="float32", show_default=True, metavar="float32|float16|bfloat16",
                        help="Input element type (ops list theirs in `kernelgen list OP`).")(fn)


def selection_options(fn):
    options = [
        click.option("--knob", "-k", "knobs", multiple=True, metavar="NAME=VALUE", help="Set a knob of the default schedule."),
        click.option("--schedule", "schedule_file", metavar="FILE", help="A schedule as JSON, or a .py file[:NAME]."),
        click.option("--step", type=int, metavar="N", help="Step N (1-based) of the op's ladder."),
        click.option("--best", is_flag=True, help="The fastest schedule in the tuning database."),
        click.option("--db", metavar="PATH", help=f"Tuning database (default {config.tuning_db()})."),
    ]
    return functools.reduce(lambda f, o: o(f), reversed(options), fn)


class Group(click.Group):
    """Turns every KernelgenError into one line on stderr and its exit code, with no traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KernelgenError as e:
            click.echo(f"error: {e}", err=True)
            if getattr(e, "details", None) and ctx.params.get("verbose"):
                click.echo(e.details(), err=True)
            sys.exit(e.exit_code)


@click.group(cls=Group)
@click.version_option(config.VERSION, prog_name="kernelgen")
def main():
    """Schedules in Python -> specialised CUDA kernels -> NVRTC -> validated, timed, tuned."""


# -- list ----------------------------------------------------------------------------------------
@main.command("list")
@click.argument("op_name", required=False)
def list_cmd(op_name):
    """List the ops, or one op's sizes, knobs, primitives and ladder."""
    if not op_name:
        click.echo(table([{"op": o.name, "sizes": ",".join(f"{d.name}={d.default}" for d in o.dims),
                           "what": o.summary} for o in OPS.values()], ["op", "sizes", "what"]))
        return
    op = get_op(op_name)
    click.echo(f"{op.name}: {op.summary}")
    click.echo("sizes: " + ", ".join(f"{d.name} (benchmark {d.default}, small {d.small})" for d in op.dims))
    click.echo(f"loops: {', '.join(op.loops)}   inputs: {', '.join(op.inputs)}   outputs: {', '.join(op.outputs)}")
    click.echo("knobs:")
    click.echo(table([{"knob": k.name, "default": k.default, "choices": ",".join(map(str, k.choices)), "meaning": k.help}
                      for k in op.knobs], ["knob", "default", "choices", "meaning"]))
    click.echo(f"primitives: {op.primitives_help}")
    click.echo(f"default schedule: {op.default_schedule()}")
    for i, s in enumerate(op.ladder(), 1):
        click.echo(f"ladder {i}: {s.title}{'  (' + s.note + ')' if s.note else ''}")


# -- emit ----------------------------------------------------------------------------------------
@main.command()
@click.argument("op_name", required=False)
@selection_options
@click.option("--size", help="Problem size (for --best): M=..,N=.. or values in dim order.")
@click.option("--all", "all_ops", is_flag=True, help="Every op's default and ladder kernels (what generated/ holds).")
@click.option("--ladder", is_flag=True, help="Every step of the op's ladder.")
@click.option("--arch", default=DEFAULT_ARCH, show_default=True, callback=lambda c, p, v: parse_arch(v),
              help="Target arch: its limits and features decide legality; it is in the kernel's name.")
@click.option("--out", "-o", "out_dir", default="generated", show_default=True, help="Output folder.")
@dtype_options
def emit(op_name, knobs, schedule_file, step, best, db, size, all_ops, ladder, arch, out_dir, dtype, out_dtype):
    """Write the .cu file(s) of a schedule (only when the content changed)."""
    from .emit import generated_kernels, write_all, write_kernel
    if all_ops:
        changed, removed = write_all(out_dir, arch)
        click.echo(f"{len(changed)} file(s) written, {len(removed)} stale file(s) removed under {out_dir}/")
        return
    if not op_name:
        raise UsageError("name an op (see `kernelgen list`) or pass --all")
    op = get_op(op_name)
    limits = target(arch)
    if ladder:
        kernels = [k for _, k in generated_kernels(op, limits)]
    else:
        types = op.types(dtype, out_dtype)
        problem = parse_size(op, size, False, dtype, out_dtype) if size else None
        kernels = [op.kernel(select(op, knobs, schedule_file, step, best, problem, db), limits, types)]
    for kernel in kernels:
        path, changed = write_kernel(kernel, Path(out_dir))
        click.echo(f"{path}{'' if changed else ' (unchanged)'}")


# -- inspect -------------------------------------------------------------------------------------
@main.command()
@click.argument("op_name")
@selection_options
@click.option("--ladder", is_flag=True, help="Every step of the op's ladder.")
@click.option("--arch", default=DEFAULT_ARCH, show_default=True, callback=lambda c, p, v: parse_arch(v),
              help="Compile target.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per kernel.")
@dtype_options
def inspect(op_name, knobs, schedule_file, step, best, db, ladder, arch, as_json, dtype, out_dtype):
    """Registers, shared/local memory, spills and SASS facts of each kernel (no GPU needed)."""
    from .emit import generated_kernels
    from .inspect import inspect_kernel
    op = get_op(op_name)
    limits = target(arch)
    kernels = (generated_kernels(op, limits) if ladder
               else [("selected", op.kernel(select(op, knobs, schedule_file, step, best, None, db), limits,
                                            op.types(dtype, out_dtype)))])
    rows = []
    for label, kernel in kernels:
        for f in inspect_kernel(kernel, kernel.arch):  # a ladder step may name its own arch
            rows.append(dict(f.row(), step=label.split(":")[0]))
    if as_json:
        for r in rows:
            click.echo(json.dumps(r))
        return
    click.echo(table(rows, ["step", "symbol", "registers", "shared_bytes", "local_bytes", "spill_bytes",
                            "ldg128", "stg128", "lds128", "ffma"]))


# -- run -----------------------------------------------------------------------------------------
@main.command()
@click.argument("op_name")
@selection_options
@click.option("--size", help="Problem size; default: the benchmark size on a GPU, the small one on the emulator.")
@click.option("--backend", type=click.Choice(["auto", "gpu", "emulate"]), default="auto", show_default=True)
@click.option("--arch", default=None, help="Compile target when there is no GPU (default sm_90).")
@click.option("--seed", type=int, help="Input seed (default: fresh each run; printed for reproduction).")
@click.option("--reps", type=int, default=30, show_default=True, help="Timed repetitions (GPU).")
@click.option("--check", is_flag=True, help="Emulator: report out-of-bounds accesses and shared-memory races.")
@click.option("--order", type=click.Choice(["forward", "reverse", "random"]), default="forward", show_default=True,
              help="Emulator: order of threads between barriers.")
@click.option("--emit", "emit_dir", metavar="DIR", help="Also write the .cu file to DIR.")
@timing_option
@dtype_options
def run(op_name, knobs, schedule_file, step, best, db, size, backend, arch, seed, reps, check, order, emit_dir,
        timing, dtype, out_dtype):
    """Compile, inspect, validate against float64 numpy, and (on a GPU) time one schedule."""
    from . import gpu
    from .inspect import inspect_kernel
    from .validate import validate
    op = get_op(op_name)
    if backend == "auto":
        backend = "gpu" if gpu.available() else "emulate"
    problem = parse_size(op, size, backend == "emulate", dtype, out_dtype)
    sched = select(op, knobs, schedule_file, step, best, problem, db)
    limits = gpu.device() if backend == "gpu" else target(parse_arch(arch or DEFAULT_ARCH))
    arch = limits.arch
    kernel = op.for_schedule(sched).kernel(sched, limits, problem.types)
    click.echo(f"kernel   {kernel.name}\nschedule {sched}\nproblem  {problem}   backend {backend}   arch {arch}")
    if emit_dir:
        from .emit import write_kernel
        click.echo(f"emitted  {write_kernel(kernel, emit_dir)[0]}")
    facts = inspect_kernel(kernel, arch)
    click.echo(table([f.row() for f in facts], ["symbol", "registers", "shared_bytes", "spill_bytes", "ldg128", "stg128"]))
    opts = {"check": check, "order": order} if backend == "emulate" else {}
    v = validate(op, sched, problem, backend=backend, seed=seed, arch=arch, **opts)
    click.echo(f"validate {v.summary()}")
    if not v.ok:
        raise ValidationError(f"{kernel.name} gave a wrong answer on {problem}: {v.summary()}")
    if backend == "gpu":
        from .timing import describe, measure
        m = measure(op, sched, problem, reps=reps, timing=timing)
        dev = gpu.device()
        click.echo(f"time     {m.time_us:.2f} us (spread {m.spread:.1%})  {m.gbps:.0f} GB/s  "
                   f"{m.tflops:.2f} TFLOP/s  {m.roofline:.0%} of the {m.bound} roof of {dev.gpu}\n"
                   f"         {describe(m.method, op.for_schedule(sched), problem, reps)}")


# -- tune ----------------------------------------------------------------------------------------
from .tune import STRATEGIES  # noqa: E402  (here, beside the one command that reads it)


@main.command()
@click.argument("op_name")
@click.option("--size", help="Problem size (default: the op's benchmark size).")
@click.option("--strategy", type=click.Choice(list(STRATEGIES)), default="exhaustive", show_default=True)
@click.option("--budget", type=int, help="Measure at most this many schedules.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random and anneal strategies.")
@click.option("--db", metavar="PATH", help=f"Tuning database (default {config.tuning_db()}).")
@click.option("--resume", is_flag=True, help="Skip schedules the database already holds for this problem and GPU.")
@click.option("--reps", type=int, default=20, show_default=True)
@click.option("--max-ms", type=float, default=1000.0, show_default=True,
              help="A schedule whose single run takes longer is recorded as 'timeout' and not repeated.")
@click.option("--limit-s", type=float, default=120.0, show_default=True,
              help="Stop a schedule's compile, validation and timing (a kernel that hangs) after this many "
                   "seconds and record it as 'timeout'.")
@timing_option
@dtype_options
def tune(op_name, size, strategy, budget, seed, db, resume, reps, max_ms, limit_s, timing, dtype, out_dtype):
    """Search the op's schedule space on the GPU; every measurement goes to the tuning database."""
    from .tune import GpuRunner, tune as run_tune
    from .tune.db import TuningDB
    from .tune.worker import ProcessRunner
    op = get_op(op_name)
    problem = parse_size(op, size, False, dtype, out_dtype)
    from . import gpu
    gpu.require()
    with ProcessRunner(functools.partial(GpuRunner, reps, max_ms, timing), limit_s) as runner:
        result = run_tune(op, problem, runner=runner, strategy=strategy, budget=budget, seed=seed,
                          db=TuningDB(db) if db else TuningDB(), resume=resume)
    fails = ", ".join(f"{n} {k}" for k, n in sorted(result.failures.items())) or "none"
    click.echo(f"measured {result.measured}, skipped {result.skipped} (already measured), "
               f"pruned {result.pruned} illegal; failures: {fails}")
    if result.best is None:
        raise UsageError(f"no schedule of {op.name} ran correctly on {problem}")
    click.echo(f"best {result.best.time_us:.2f} us  {result.best.kernel}\n"
               f"     {Schedule.from_dict(result.best.schedule)}\n"
               f"emit it with: kernelgen emit {op.name} --best --size {problem}")


# -- bench ---------------------------------------------------------------------------------------
@main.command()
@click.argument("op_name")
@click.option("--size", help="Problem size (default: the op's benchmark size).")
@click.option("--ladder", is_flag=True, help="Every ladder step, not only the default schedule.")
@click.option("--best", is_flag=True, help="Add the tuning database's best schedule for this size.")
@click.option("--db", metavar="PATH")
@click.option("--reps", type=int, default=30, show_default=True)
@click.option("--markdown", is_flag=True, help="Print a Markdown table for BENCHMARKS.md.")
@timing_option
@dtype_options
def bench(op_name, size, ladder, best, db, reps, markdown, timing, dtype, out_dtype):
    """Validate and time schedules against the vendor library in the same run, the same way."""
    from .bench import bench_rows, format_rows
    op = get_op(op_name)
    problem = parse_size(op, size, False, dtype, out_dtype)
    rows = bench_rows(op, problem, ladder=ladder, best_db=(db or str(config.tuning_db())) if best else None, reps=reps,
                      timing=timing)
    click.echo(format_rows(op, problem, rows, markdown, timing=timing, reps=reps))
    if any(r["valid"] == "WRONG" for r in rows):
        raise ValidationError("a benchmarked kernel gave a wrong answer (see the table)")


if __name__ == "__main__":
    main()
