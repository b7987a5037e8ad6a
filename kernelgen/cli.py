"""The `kernelgen` command: list, emit, inspect, run, profile, tune, tune-db, bench, plot, report.

    kernelgen list sgemm                      # knobs and primitives of an op
    kernelgen emit sgemm -k bm=64 -o out/     # write the .cu of a schedule
    kernelgen inspect sgemm --ladder          # registers, spills, 128-bit loads per ladder step
    kernelgen run sgemm                       # compile + inspect + validate (+ time on a GPU)
    kernelgen profile transpose --step 2      # Nsight Compute: occupancy, stalls, bank conflicts, sectors
    kernelgen tune sgemm --size 4096,4096,4096
    kernelgen tune sgemm --replay sweep.jsonl --compare random,model   # no GPU: a recorded sweep
    kernelgen tune-db export sgemm --format kerneltuner -o sgemm.json
    kernelgen tune-db table --db tuning.jsonl --gpu H100 -o kernelgen/tuned/h100.json   # tuned defaults
    kernelgen bench reduce_sum --ladder       # ladder table against the vendor library
    kernelgen bench softmax --size 8192x128 --timing graph   # CUDA-graph replays: small problems
    kernelgen bench sgemm --ladder --json sgemm.json          # results as JSON, for plot and report
    kernelgen bench transformer --size gpt2-small --dtype bfloat16   # a GPT-2 block vs PyTorch eager, torch.compile
    kernelgen plot sgemm.json -o roofline.png                 # roofline (--chart ladder: the speed-ups)
    kernelgen report sgemm.json -o report.html                # one self-contained page

Exit codes: 0 success, 1 a kernel gave a wrong answer, 2 a usage or schedule error (one line,
no traceback), 3 an internal error (a bug: its traceback and how to report it), 130 interrupted.
"""
from __future__ import annotations

import functools
import json
import os
import runpy
import shlex
import sys
import traceback
from pathlib import Path

import click

from . import config
from .bench import table
from .errors import KernelgenError, UsageError, ValidationError
from .interrupt import exit_interrupted
from .ops import OPS, get_op
from .ops.base import Op, Problem
from .target import DEFAULT_ARCH, Target, parse_arch, target
from .schedule import Schedule
from .sizes import parse_size
from .suites import names as suite_names


# -- argument parsing ----------------------------------------------------------------------------
def parse_knob(op: Op, text: str) -> tuple[str, object]:
    """`NAME=VALUE`, checked against the knob's choices (Op.parse_knob)."""
    return op.parse_knob(text)


def load_schedule(path: str) -> Schedule:
    """A JSON file, or a Python file with a variable (`file.py:NAME`, default `schedule`)."""
    file, _, var = path.rpartition(":") if ".py:" in path else (path, "", "")
    p = Path(file)
    if not p.exists():
        raise UsageError(f"schedule file {file!r} does not exist")
    if p.is_dir():
        raise UsageError(f"schedule file {file!r} is a directory; --schedule takes a .json or .py file")
    if p.suffix == ".py":
        try:
            scope = runpy.run_path(str(p))
        except KernelgenError as e:
            raise UsageError(f"schedule file {file}: {e}") from None
        except (Exception, SystemExit) as e:   # the user's own code: its error is theirs, one line
            where = ""
            tb = e.__traceback__
            while tb is not None:
                if Path(tb.tb_frame.f_code.co_filename).resolve() == p.resolve():
                    where = f" (line {tb.tb_lineno})"
                tb = tb.tb_next
            raise UsageError(f"schedule file {file} raised {type(e).__name__}{where}: {e}") from None
        value = scope.get(var or "schedule")
        if not isinstance(value, Schedule):
            raise UsageError(f"{file} defines no Schedule named {var or 'schedule'!r}")
        return value
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"schedule file {file}: byte {e.start} is not UTF-8; a schedule is JSON text") from None
    except OSError as e:
        raise UsageError(f"schedule file {file} cannot be read: {e.strerror}") from None
    return Schedule.from_json(text)


def open_db(db: str | None, writable: bool = False):
    """The tuning database, checked (readable, every line a record) before any work starts."""
    from .tune.db import TuningDB
    d = TuningDB(db) if db else TuningDB()
    d.check(writable)
    return d


def select(op: Op, knobs: tuple[str, ...], schedule_file: str | None, step: int | None, best: bool,
           problem: Problem | None, db: str | None, on: Target | None = None) -> tuple[Schedule, str]:
    """(the schedule the options name, where it came from); with none, for `problem` on `on`, the default
    tune.defaults.choose_default picks (your tuning database, the GPU's tuned table, else the heuristic),
    and without a problem the op's default knobs."""
    given = sum(bool(x) for x in (knobs, schedule_file, step is not None, best))
    if given > 1:
        raise UsageError("choose one of --knob, --schedule, --step and --best")
    if db and (knobs or schedule_file or step is not None or (problem is None and not best)):
        raise UsageError("--db is read with --best, or by the choice of the default schedule for a size")
    if schedule_file:
        sched = load_schedule(schedule_file)
        if sched.op != op.name:
            raise UsageError(f"schedule file {schedule_file} is a schedule of {sched.op!r}, not of {op.name!r}")
        return sched, f"--schedule {schedule_file}"
    if step is not None:
        ladder = op.ladder()
        if not 1 <= step <= len(ladder):
            raise UsageError(f"--step {step} is out of range; {op.name}'s ladder has steps 1..{len(ladder)}")
        return ladder[step - 1].schedule, f"ladder step {step}"
    if best:
        from .tune import best_schedule
        database = open_db(db)
        return best_schedule(op, problem, database), f"--best ({database.path})"
    if not knobs and problem is not None:
        from .target import default_target
        from .tune.defaults import choose_default
        return choose_default(op, problem, on or default_target(), open_db(db))
    overrides: dict = {}
    for k in knobs:
        name, value = parse_knob(op, k)
        if name in overrides:
            raise UsageError(f"{op.name}: knob {name} is given twice (-k {name}={overrides[name]!r} and -k {k})")
        overrides[name] = value
    return op.schedule(**overrides), f"--knob {', '.join(knobs)}" if knobs else "the default knobs"


def check_out_dir(out_dir: str | os.PathLike, option: str = "--out") -> Path:
    """UsageError before any work unless `out_dir` is (or can be made) a writable folder."""
    p = Path(out_dir)
    probe = p
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {str(out_dir)!r} is a file, not a folder")
    if not probe.is_dir():
        raise UsageError(f"{option} {str(out_dir)!r}: {str(probe)!r} is a file, not a folder")
    try:   # a real write: os.access says yes to root even on a read-only file system
        import tempfile
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".kernelgen-probe-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise UsageError(f"{option} {str(out_dir)!r}: folder {str(probe)!r} is not writable ({e.strerror})") from None
    return p


def check_out_file(path: str | os.PathLike, option: str = "-o") -> Path:
    """UsageError before any work unless `path` can be written: its folder exists and it is not a folder."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{option} {str(path)!r} is a folder; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{option} {str(path)!r}: folder {str(parent)!r} does not exist")
    return p


def timing_option(fn):
    def checked(ctx, param, value):  # a bad method is a usage error before any GPU work
        from .timing import parse_method
        return parse_method(value)
    return click.option("--timing", default="auto", show_default=True, metavar="events|graph|auto", callback=checked,
                        help="GPU timing: events around one launch (L2 flushed), or CUDA-graph replays over "
                             "rotating input sets; auto = graph below 64 MB moved, or 8 L2s where memory-bound.")(fn)


def dtype_options(fn):
    """--dtype and --out-dtype: the problem's element types (inputs, and outputs where they differ); --layout:
    its operand layout (GEMM-like ops)."""
    fn = click.option("--layout", metavar="NN|NT|TN|TT", help="Operand layout of a GEMM-like op (default NN): letter "
                      "1 is A, letter 2 is B; N as in C = A.B (A M x K, B K x N), T stored transposed (A K x M, "
                      "B N x K); every buffer row-major. attention: bhsd|bshd|packed, how Q, K, V and O lie in "
                      "memory (default bhsd; `kernelgen list attention`).")(fn)
    fn = click.option("--out-dtype", metavar="TYPE", help="Output element type (default: the input type).")(fn)
    return click.option("--dtype", metavar="TYPE", help="Input element type: float32, float16, bfloat16; for fp32 data on "
                        "tensor cores (gemm) tf32, tf32x3 or dmma (the fp64 tensor cores); transformer: float32 (its "
                        "GEMMs where kernelgen.torch.linear's default puts them), tf32x3, dmma, float16, bfloat16. "
                        "Default: the op's first; `kernelgen list OP` lists them.")(fn)


def selection_options(fn):
    options = [
        click.option("--knob", "-k", "knobs", multiple=True, metavar="NAME=VALUE", help="Set a knob of the default schedule."),
        click.option("--schedule", "schedule_file", metavar="FILE", help="A schedule as JSON, or a .py file[:NAME]."),
        click.option("--step", type=click.IntRange(min=1), metavar="N", help="Step N (1-based) of the op's ladder."),
        click.option("--best", is_flag=True, help="The fastest schedule in the tuning database."),
        click.option("--db", metavar="PATH", help=f"Tuning database read by --best and by the default's choice "
                                                   f"(default {config.tuning_db()})."),
    ]
    return functools.reduce(lambda f, o: o(f), reversed(options), fn)


class Group(click.Group):
    """One rule for every command: a user's mistake (a KernelgenError, a bad option, a path that cannot
    be read or written) is one line on stderr and exit 2 (1: a kernel gave a wrong answer); Ctrl-C
    stops, removes temporary files and exits 130; anything else is a bug in kernelgen and keeps its
    traceback, followed by one line saying so (exit 3)."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:        # click would turn Ctrl-C while it parses the arguments into "Aborted!" and exit 1
            return super().make_context(info_name, args, parent, **extra)
        except KeyboardInterrupt:
            exit_interrupted()

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KernelgenError as e:
            click.echo(f"error: {_one_line(e)}", err=True)
            if getattr(e, "details", None) and ctx.params.get("verbose"):
                click.echo(e.details(), err=True)
            sys.exit(e.exit_code)
        except click.exceptions.Exit:
            raise
        except click.ClickException as e:       # bad option values, unknown options and commands
            name = getattr(getattr(e, "ctx", None), "command_path", None) or "kernelgen"
            click.echo(f"error: {_one_line(e.format_message())} (see `{name} --help`)", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            _cleanup()
            exit_interrupted("; temporary files removed")
        except OSError as e:                    # a path the user named, a full disk: not a bug
            if e.filename is None:
                raise _bug(e) from None
            click.echo(f"error: {e.filename}: {e.strerror or e}", err=True)
            sys.exit(2)
        except MemoryError:
            click.echo("error: out of memory: choose smaller sizes", err=True)
            sys.exit(2)
        except Exception as e:
            if type(e).__name__ == "OutOfMemoryError":      # CuPy's device allocation
                click.echo(f"error: out of GPU memory: {_one_line(e)}; choose smaller sizes", err=True)
                sys.exit(2)
            raise _bug(e) from None


def _one_line(e) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _cleanup() -> None:
    """Remove this process's temporary files (the emulator's build folders)."""
    try:
        from .emulate.build import cleanup
        cleanup()
    except Exception:
        pass


def _bug(e: BaseException) -> SystemExit:
    _cleanup()
    traceback.print_exception(type(e), e, e.__traceback__)
    click.echo(f"error: internal error in kernelgen {config.VERSION} ({type(e).__name__}): this is a bug, not your "
               f"mistake; please report it with the command line and the traceback above ({config.ISSUES})", err=True)
    return SystemExit(3)


@click.group(cls=Group)
@click.version_option(config.VERSION, prog_name="kernelgen")
def main():
    """Schedules in Python -> specialised CUDA kernels -> NVRTC -> validated, timed, tuned."""


# -- list ----------------------------------------------------------------------------------------
@main.command("list")
@click.argument("op_name", required=False)
@click.option("--markdown", is_flag=True, help="Every op's knob table as Markdown (docs/knobs.md).")
def list_cmd(op_name, markdown):
    """List the ops, or one op's sizes, knobs, primitives and ladder."""
    if markdown:
        from .ops.knobs import markdown as knob_markdown
        click.echo(knob_markdown([get_op(op_name)] if op_name else OPS.values()), nl=False)
        return
    if not op_name:
        click.echo(table([{"op": o.name, "sizes": ",".join(f"{d.name}={d.default}" for d in o.dims),
                           "dtypes": ",".join(o.dtypes), "what": o.summary} for o in OPS.values()],
                         ["op", "sizes", "dtypes", "what"]))
        return
    op = get_op(op_name)
    click.echo(f"{op.name}: {op.summary}")
    click.echo("sizes: " + ", ".join(f"{d.name} (benchmark {d.default}, small {d.small})" for d in op.dims))
    for sh in op.shorthands:
        if sh.dims != (sh.name,):         # a dim that is its own shorthand only prints quietly (causal=0)
            click.echo(f"  {sh.name}=V sets {' and '.join(sh.dims)} to V")
    click.echo(f"loops: {', '.join(op.loops)}   inputs: {', '.join(op.inputs)}   outputs: {', '.join(op.outputs)}")
    click.echo("dtypes: " + ", ".join(f"{d} (outputs {'|'.join(op.out_dtypes(d))})" for d in op.dtypes))
    if op.layouts:
        click.echo(f"layouts: {', '.join(op.layouts)} (--layout, default {op.layouts[0]}): letter 1 is A, letter 2 is B; "
                   "N stored as in the product, T stored transposed; every buffer row-major")
    elif op.name == "attention":
        from .ops.attention_layout import LAYOUTS
        click.echo(f"layouts: {', '.join(LAYOUTS)} (--layout or layout= in --size, default bhsd): bhsd each of Q, K, V, O "
                   "(batch, heads, seq, head_dim); bshd each (batch, seq, heads, head_dim); packed Q, K, V the thirds "
                   "of one (batch, seq, 3, heads, head_dim) projection, O bshd. Strides are kernel arguments: one "
                   "kernel serves all three")
    click.echo("knobs:")
    from .ops.knobs import knob_rows
    click.echo(table(knob_rows(op), ["knob", "default", "choices", "step", "meaning"]))
    click.echo(f"primitives: {op.primitives_help}")
    click.echo(f"default schedule: {op.default_schedule()}")
    for i, s in enumerate(op.ladder(), 1):
        click.echo(f"ladder {i}: {s.title}{'  (' + s.note + ')' if s.note else ''}")


# -- emit ----------------------------------------------------------------------------------------
@main.command()
@click.argument("op_name", required=False)
@selection_options
@click.option("--size", help="Problem size, M=..,N=.. or values in dim order: the schedule chosen for it (your tuning "
              "database, the GPU's tuned table, else the heuristic), or with --best the database's best.")
@click.option("--all", "all_ops", is_flag=True, help="Every op's default and ladder kernels (what generated/ holds).")
@click.option("--ladder", is_flag=True, help="Every step of the op's ladder.")
@click.option("--arch", default=DEFAULT_ARCH, show_default=True, callback=lambda c, p, v: parse_arch(v),
              help="Target arch: its limits and features decide legality; it is in the kernel's name.")
@click.option("--out", "-o", "out_dir", default="generated", show_default=True, help="Output folder.")
@click.option("--header", is_flag=True, help="Also write a .h beside each .cu declaring its host launcher.")
@dtype_options
def emit(op_name, knobs, schedule_file, step, best, db, size, all_ops, ladder, arch, out_dir, header, dtype, out_dtype,
         layout):
    """Write the .cu file(s) of a schedule (only when the content changed)."""
    from .emit import generated_kernels, write_all, write_kernels
    check_out_dir(out_dir)
    if all_ops:
        if op_name or knobs or schedule_file or step is not None or best or db or size or ladder or header or layout:
            raise UsageError("--all writes every op's default and ladder kernels; it takes no op, knob, schedule, "
                             "step, --best, --db, --size, --layout, --ladder or --header")
        changed, removed = write_all(out_dir, arch)
        click.echo(f"{len(changed)} file(s) written, {len(removed)} stale file(s) removed under {out_dir}/")
        return
    if not op_name:
        raise UsageError("name an op (see `kernelgen list`) or pass --all")
    op = get_op(op_name)
    limits = target(arch)
    if ladder:
        if knobs or schedule_file or step is not None or best:
            raise UsageError("--ladder writes every ladder step; it takes no --knob, --schedule, --step or --best")
        kernels = [k for _, k in generated_kernels(op, limits, op.types(dtype, out_dtype), op.check_layout(layout))]
    else:
        types = op.types(dtype, out_dtype)
        problem = parse_size(op, size, False, dtype, out_dtype, layout) if size else None
        if size and (knobs or schedule_file or step is not None):
            raise UsageError("--size picks the schedule for that size (the default, or --best's); it takes no "
                             "--knob, --schedule or --step")
        layout = problem.layout if problem else op.check_layout(layout)
        sched, source = select(op, knobs, schedule_file, step, best, problem, db, limits)
        kernels = [op.kernel(sched, limits, types, layout)]
        if problem is not None:
            click.echo(f"schedule for {problem} from {source}", err=True)
    for path, changed in write_kernels(kernels, Path(out_dir), headers=header):
        click.echo(f"{path}{'' if changed else ' (unchanged)'}")


# -- inspect -------------------------------------------------------------------------------------
@main.command()
@click.argument("op_name")
@selection_options
@click.option("--ladder", is_flag=True, help="Every step of the op's ladder.")
@click.option("--arch", default=DEFAULT_ARCH, show_default=True, callback=lambda c, p, v: parse_arch(v),
              help="Compile target.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per kernel.")
@click.option("--banks", is_flag=True, help="Also run each kernel on the CPU emulator and count, per array, "
              "shared-memory wavefronts per warp request (bank conflicts) and global sectors per request.")
@click.option("--size", help="With --banks: the problem to count on (default: the op's small size; sizes that are "
              "whole tiles give exact counts).")
@dtype_options
def inspect(op_name, knobs, schedule_file, step, best, db, ladder, arch, as_json, banks, size, dtype, out_dtype,
            layout):
    """Registers, shared/local memory, spills and SASS facts of each kernel (no GPU needed)."""
    from .emit import generated_kernels
    from .inspect import inspect_kernel, traffic
    op = get_op(op_name)
    limits = target(arch)
    layout = op.check_layout(layout)
    if size and not banks:
        raise UsageError("--size is read only with --banks (the problem the emulator counts on)")
    problem = parse_size(op, size, True, dtype, out_dtype, layout) if banks else None
    kernels = (generated_kernels(op, limits, op.types(dtype, out_dtype), layout) if ladder
               else [("selected", op.kernel(select(op, knobs, schedule_file, step, best, None, db)[0], limits,
                                            op.types(dtype, out_dtype), layout))])
    from .inspect import sass_note
    rows, counts = [], {}
    for label, kernel in kernels:
        step_name = label.split(":")[0]
        if banks:
            counts[step_name] = traffic(op, kernel, problem)
        for f in inspect_kernel(kernel, kernel.arch):  # a ladder step may name its own arch
            rows.append(dict(f.row(), step=step_name, **({"traffic": counts[step_name][1]} if banks else {})))
    notes = sorted({n for _, k in kernels if (n := sass_note(k.arch))})
    if as_json:
        for r in rows:
            click.echo(json.dumps(r))
    else:
        click.echo(table([{k: "n/a" if v is None else v for k, v in r.items()} for r in rows],
                         ["step", "symbol", "registers", "shared_bytes", "local_bytes", "spill_bytes",
                          "ldg128", "stg128", "lds128", "ffma", "hmma", "dmma", "hgmma", "ldsm", "tma"]))
        if banks:
            click.echo(f"traffic on the emulator, {problem} (per array: shared wavefronts, global sectors per request):")
        for name, (lines, _) in counts.items():
            click.echo("\n".join(f"  {name}: {line}" for line in lines))
    for n in notes:
        click.echo(f"note: {n}", err=True)


# -- run -----------------------------------------------------------------------------------------
@main.command()
@click.argument("op_name")
@selection_options
@click.option("--size", help="Problem size; default: the benchmark size on a GPU, the small one on the emulator.")
@click.option("--backend", type=click.Choice(["auto", "gpu", "emulate"]), default="auto", show_default=True)
@click.option("--arch", default=None, help="Compile target when there is no GPU (default sm_90).")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), help="Input seed, 0..2^31-1 (default: fresh each run; printed "
              "for reproduction).")
@click.option("--reps", type=click.IntRange(1, 100000), default=30, show_default=True, help="Timed repetitions (GPU).")
@click.option("--check", is_flag=True, help="Emulator: report out-of-bounds accesses and shared-memory races.")
@click.option("--order", type=click.Choice(["forward", "reverse", "random"]), default="forward", show_default=True,
              help="Emulator: order of threads between barriers.")
@click.option("--emit", "emit_dir", metavar="DIR", help="Also write the .cu file to DIR.")
@click.option("--banks", is_flag=True, help="Emulator: count shared-memory bank conflicts (ways per warp request) "
              "and global sectors per request, per array (one more, checked, run).")
@timing_option
@dtype_options
def run(op_name, knobs, schedule_file, step, best, db, size, backend, arch, seed, reps, check, order, emit_dir,
        timing, dtype, out_dtype, layout, banks=False):
    """Compile, inspect, validate against float64 numpy, and (on a GPU) time one schedule."""
    from . import gpu
    from .inspect import inspect_kernel
    from .validate import check_memory, validate
    op = get_op(op_name)
    if arch is not None:
        parse_arch(arch)
    if emit_dir:
        check_out_dir(emit_dir, "--emit")
    if backend == "auto":
        backend = "gpu" if gpu.available() else "emulate"
    if backend == "gpu":
        gpu.require()
        for given, flag in ((arch is not None, "--arch"), (check, "--check"), (order != "forward", "--order"),
                            (banks, "--banks")):
            if given:
                raise UsageError(f"{flag} is for --backend emulate; on the GPU kernels are compiled for and run on "
                                 "the GPU itself")
    problem = parse_size(op, size, backend == "emulate", dtype, out_dtype, layout)
    check_memory(op, problem, backend)
    limits = gpu.device() if backend == "gpu" else target(arch or DEFAULT_ARCH)
    sched, source = select(op, knobs, schedule_file, step, best, problem, db, limits)
    arch = limits.arch
    from .prepared import prepare
    kernel = prepare(op, sched, problem, limits).kernel   # validate below finds it in the cache
    click.echo(f"kernel   {kernel.name}\nschedule {sched}\nsource   {source}\n"
               f"problem  {problem}   backend {backend}   arch {arch}")
    if emit_dir:
        from .emit import write_kernel
        click.echo(f"emitted  {write_kernel(kernel, emit_dir)[0]}")
    from .inspect import sass_note
    facts = inspect_kernel(kernel, arch)
    click.echo(table([{k: "n/a" if v is None else v for k, v in f.row().items()} for f in facts],
                     ["symbol", "registers", "shared_bytes", "spill_bytes", "ldg128", "stg128"]))
    if sass_note(arch):
        click.echo(f"note: {sass_note(arch)}", err=True)
    opts = {"check": check, "order": order} if backend == "emulate" else {}
    v = validate(op, sched, problem, backend=backend, seed=seed, arch=arch, **opts)
    click.echo(f"validate {v.summary()}")
    if not v.ok:
        raise ValidationError(f"{kernel.name} gave a wrong answer on {problem}: {v.summary()}")
    if banks:
        from .emulate.traffic import profile
        for line in profile(op, sched, problem, seed=v.seed, arch=arch).lines():
            click.echo(f"traffic  {line}")
    if backend == "gpu":
        from .timing import describe, measure
        m = measure(op, sched, problem, reps=reps, timing=timing)
        dev = gpu.device()
        click.echo(f"time     {m.time_us:.2f} us (spread {m.spread:.1%})  {m.gbps:.0f} GB/s  "
                   f"{m.tflops:.2f} TFLOP/s  {m.roofline:.0%} of the {m.bound} roof of {dev.gpu}\n"
                   f"         {describe(m.method, op.instance(sched, problem), problem, reps)}")


# -- profile -------------------------------------------------------------------------------------
@main.command()
@click.argument("op_name")
@selection_options
@click.option("--size", help="Problem size (default: the op's benchmark size).")
@click.option("--ladder", is_flag=True, help="Every step of the op's ladder.")
@click.option("--json", "json_file", metavar="FILE", help="Also write the figures as JSON (kernelgen-results/1, "
              "kind profile) for `kernelgen report`.")
@dtype_options
def profile(op_name, knobs, schedule_file, step, best, db, size, ladder, json_file, dtype, out_dtype, layout):
    """One launch under Nsight Compute (ncu): occupancy, issue slots, DRAM and L2 throughput, top stall
    reasons, shared-memory wavefronts and bank conflicts, global sectors per request."""
    from . import gpu, ncu, results
    op = get_op(op_name)
    if ladder and (knobs or schedule_file or step is not None or best):
        raise UsageError("--ladder profiles every ladder step; it takes no --knob, --schedule, --step or --best")
    if json_file:
        check_out_file(json_file, "--json")
    problem = parse_size(op, size, False, dtype, out_dtype, layout)
    ncu.executable()                      # said before the GPU is asked for
    dev = gpu.device()
    steps = ([(f"{i}. {s.title}", s.schedule) for i, s in enumerate(op.ladder(), 1)] if ladder
             else [("selected", *select(op, knobs, schedule_file, step, best, problem, db, dev))])
    click.echo(f"problem  {problem}   device {dev.gpu} ({dev.arch})   Nsight Compute: one launch, caches flushed, "
               "clocks as they run")
    if not ladder:
        click.echo(f"source   {steps[0][2]}")
    rows = []
    for label, sched, *_ in steps:
        kernel, launches = ncu.profile(op, sched, problem, dev)
        rows.append(ncu.result_row(op, problem, label, sched, kernel, launches, dev))
        click.echo("\n".join(ncu.row_lines(rows[-1], None if ladder else sched)))
    if json_file:
        run = results.run_dict(op, problem, dev, rows, ladder=ladder, timing="Nsight Compute, one launch")
        results.write(results.document("profile", device=results.device_dict(dev), runs=[run]), json_file)
        click.echo(f"wrote {json_file}")


# -- tune ----------------------------------------------------------------------------------------
from .tune import STRATEGIES  # noqa: E402  (here, beside the one command that reads it)
from .tune.space import SPACES, check_space  # noqa: E402


@main.command()
@click.argument("op_name")
@click.option("--size", help="Problem size (default: the op's benchmark size; with --replay, the file's only one).")
@click.option("--strategy", type=click.Choice(list(STRATEGIES)), default="exhaustive", show_default=True,
              help="model needs scikit-learn: pip install 'kernelgen[model]'.")
@click.option("--budget", type=click.IntRange(min=1), help="Measure at most this many schedules.")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=0, show_default=True,
              help="Seed of the strategies that draw at random (0..2^31-1).")
@click.option("--db", metavar="PATH", help=f"Tuning database (default {config.tuning_db()}); with --replay, "
                                            "only read, for the records of other problems.")
@click.option("--resume", is_flag=True, help="Skip schedules the database already holds for this problem and GPU.")
@click.option("--jobs", type=click.IntRange(min=0), help="Processes that compile candidates ahead of the GPU "
                                                         "(default: every core; 0: the runner compiles each itself).")
@click.option("--batch", type=click.IntRange(min=1), help="Candidates asked of the strategy at a time "
                                                          "(default: --jobs, at least 4; 4 with --replay).")
@click.option("--transfer/--no-transfer", default=True, show_default=True,
              help="A strategy that learns (model) starts from the database's records of the op on other problems.")
@click.option("--replay", "replay_file", metavar="FILE", help="No GPU: run the strategy against a recorded sweep "
              "(a tuning database or a Kernel Tuner cache) and print the evaluations it needed to reach 95% of "
              "the best there.")
@click.option("--compare", metavar="A,B,..", help="With --replay: these strategies, each over --seeds seeds.")
@click.option("--seeds", type=click.IntRange(1, 1000), default=5, show_default=True, help="Seeds of --compare.")
@click.option("--reps", type=click.IntRange(1, 100000), default=20, show_default=True)
@click.option("--max-ms", type=click.FloatRange(0, 3.6e6, min_open=True), default=1000.0, show_default=True,
              help="A schedule whose single run takes longer is recorded as 'timeout' and not repeated.")
@click.option("--limit-s", type=float, default=120.0, show_default=True,
              help="Stop a schedule's compile, validation and timing (a kernel that hangs) after this many "
                   "seconds and record it as 'timeout'.")
@click.option("--json", "json_file", metavar="FILE", help="Also write the measured schedules and best-so-far as JSON "
              "(kernelgen-results/1) for `kernelgen plot` and `kernelgen report`.")
@click.option("--gpus", default="1", show_default=True, metavar="N|LIST|all",
              help="GPUs of this host that measure candidates at once, one runner each, fed by one builder pool: "
                   "a count (the first N), indices such as 0,2, or all. They must be alike.")
@click.option("--ray", "ray_address", metavar="ADDRESS", help="Measure on the GPUs of a Ray cluster instead, one actor "
              "each (auto, ray://HOST:PORT, or local; needs the ray extra); the actors compile what they run unless "
              "--jobs is given.")
@click.option("--space", "space_name", type=click.Choice(SPACES), default="default", show_default=True,
              help="The op's curated space, or wide: knobs crossed onto each of its points for a sweep "
                   "(sgemm, conv2d, softmax, layernorm; thousands of candidates).")
@timing_option
@dtype_options
def tune(op_name, size, strategy, budget, seed, db, resume, jobs, batch, transfer, replay_file, compare, seeds, reps,
         max_ms, limit_s, json_file, gpus, ray_address, space_name, timing, dtype, out_dtype, layout):
    """Search the op's schedule space on the GPU; every measurement goes to the tuning database."""
    op = get_op(op_name)
    if json_file:
        if replay_file:
            raise UsageError("--json records a GPU tune; a --replay measures nothing")
        check_out_file(json_file, "--json")
    if replay_file:
        if resume:
            raise UsageError("--resume resumes a GPU tune; a --replay records nothing")
        if space_name != "default":
            raise UsageError("--space picks what a GPU tune measures; a --replay's space is the sweep it replays")
        return _replay(op, replay_file, size and str(parse_size(op, size, False, dtype, out_dtype, layout)), strategy,
                       compare, seeds, seed, budget, batch or 4, transfer, db)
    if compare:
        raise UsageError("--compare compares strategies on a recorded sweep: give it with --replay FILE")
    check_space(op, space_name)                  # before the GPU starts, not after
    from .tune import GpuRunner, tune as run_tune
    from .tune.builder import Builders, default_jobs
    from .tune.worker import ProcessRunner
    problem = parse_size(op, size, False, dtype, out_dtype, layout)
    database = open_db(db, writable=True)
    if strategy == "model":
        from .tune import model
        model.require()                           # the missing extra is said now, not after the GPU started
    from . import gpu
    from .tune.pool import RunnerPool
    make = functools.partial(GpuRunner, reps, max_ms, timing)
    if ray_address:
        if gpus != "1":
            raise UsageError("--gpus picks GPUs of this host; with --ray the cluster's GPUs measure (give one of the two)")
        from .tune import ray_pool
        cluster = ray_pool.connect(ray_address)
        runners = RunnerPool([ray_pool.RayRunner(make, limit_s) for _ in range(ray_pool.cluster_gpus(cluster))])
        jobs = jobs or 0
    else:
        from .tune.pool import gpu_indices, pinned, visible_gpus
        gpu.require()
        indices = [0] if gpus == "1" else gpu_indices(gpus, visible_gpus())   # one GPU: the one gpu.require found
        runners = (ProcessRunner(make, limit_s) if indices == [0] else
                   RunnerPool([ProcessRunner(pinned(i, make), limit_s) for i in indices]))
        jobs = default_jobs() if jobs is None else jobs
    with runners as runner, Builders(jobs) as builders:
        result = run_tune(op, problem, runner=runner, strategy=strategy, budget=budget, seed=seed, db=database,
                          resume=resume, batch=batch or max(4, jobs, getattr(runner, "width", 1)),
                          builders=builders if jobs else None,
                          history=None if transfer else [], space=space_name)
    if json_file:
        from . import results
        dev = runner.limits if ray_address else gpu.device()   # with --ray the actors' GPU (maybe none here)
        run = results.tune_run(op, problem, dev, result.records, strategy)
        results.write(results.document("tune", device=results.device_dict(dev), runs=[run]), json_file)
        click.echo(f"wrote {json_file}")
    fails = ", ".join(f"{n} {k}" for k, n in sorted(result.failures.items())) or "none"
    click.echo(f"measured {result.measured}, skipped {result.skipped} (already measured), "
               f"pruned {result.pruned} illegal; failures: {fails}")
    if result.best is None:
        raise UsageError(f"no schedule of {op.name} ran correctly on {problem}")
    click.echo(f"best {result.best.time_us:.2f} us  {result.best.kernel}\n"
               f"     {Schedule.from_dict(result.best.schedule)}\n"
               f"emit it with: kernelgen emit {op.name} --best --size {problem}")


def _replay(op, path, problem, strategy, compare, seeds, seed, budget, batch, transfer, db):
    from .tune import replay as rp
    extra = open_db(db).records() if db else []
    sweep = rp.load_sweep(op, rp.read_records(path, op), problem)
    n = len(sweep.space)
    if not n:
        raise UsageError(f"{path}: none of its {sweep.left_out} records of {op.name} is a schedule the op accepts now")
    left = f" ({sweep.left_out} records left out: schedules the op no longer accepts)" if sweep.left_out else ""
    click.echo(f"replaying {op.name} {sweep.problem} from {path}: {n} candidates on {sweep.gpu} ({sweep.arch}){left}; "
               f"best {sweep.best_us:.2f} us, 95% of it is <= {sweep.best_us / rp.GOAL:.2f} us")
    names = [s.strip() for s in compare.split(",")] if compare else [strategy]
    unknown = [s for s in names if s not in STRATEGIES]
    if unknown:
        raise UsageError(f"--compare: strategy {unknown[0]!r} is unknown; choose among {', '.join(STRATEGIES)}")
    rows = rp.comparison_rows(sweep, names, range(seed, seed + (seeds if compare else 1)), batch=batch, budget=budget,
                              transfer=transfer, extra_history=extra)
    click.echo(table(rows, ["strategy", "evaluations to 95%", "of the sweep", "per seed"]))
    if compare:
        click.echo(f"(median over seeds {seed}..{seed + seeds - 1}; '-': not reached within "
                   f"{budget or 'the sweep'}; history: {'on' if transfer else 'off'})")


@main.group("tune-db")
def tune_db():
    """Export the tuning database to other tools' formats, import theirs, and build tuned-defaults tables."""


@tune_db.command("export")
@click.argument("op_name")
@click.option("--format", "fmt", type=click.Choice(["kerneltuner"]), default="kerneltuner", show_default=True)
@click.option("--size", help="The problem whose records to export (default: the only one in the database).")
@click.option("--gpu", help="The GPU whose records to export, where the database holds several.")
@click.option("--db", metavar="PATH", help=f"Tuning database (default {config.tuning_db()}).")
@click.option("--out", "-o", "out_file", required=True, metavar="FILE", help="The cache file to write.")
@dtype_options
def tune_db_export(op_name, fmt, size, gpu, db, out_file, dtype, out_dtype, layout):
    """Write one op's records on one problem and GPU as a Kernel Tuner cache file."""
    from .tune.kerneltuner import write_cache
    op = get_op(op_name)
    problem = str(parse_size(op, size, False, dtype, out_dtype, layout)) if size else None
    records = [r for r in open_db(db).records() if r.op == op.name and (problem is None or r.problem == problem)
               and (gpu is None or r.gpu == gpu)]
    if not records:
        raise UsageError(f"no records of {op.name}{' on ' + problem if problem else ''}{' on ' + gpu if gpu else ''} "
                         f"in {db or config.tuning_db()}")
    write_cache(records, out_file)
    click.echo(f"wrote {len(records)} records of {op.name} {records[0].problem} on {records[0].gpu} to {out_file}")


@tune_db.command("import")
@click.argument("cache_file")
@click.option("--format", "fmt", type=click.Choice(["kerneltuner"]), default="kerneltuner", show_default=True)
@click.option("--op", "op_name", help="The op the cache tunes (read from the file where kernelgen wrote it).")
@click.option("--size", help="Its problem (where the file's problem_size does not give every size of the op).")
@click.option("--arch", default=DEFAULT_ARCH, show_default=True, callback=lambda c, p, v: parse_arch(v),
              help="The arch it was measured on (where the file does not say).")
@click.option("--db", metavar="PATH", help=f"Tuning database to append to (default {config.tuning_db()}).")
@dtype_options
def tune_db_import(cache_file, fmt, op_name, size, arch, db, dtype, out_dtype, layout):
    """Append the records of a Kernel Tuner cache file to the tuning database (those it lacks)."""
    from .tune.kerneltuner import read_cache
    op = get_op(op_name) if op_name else None
    if size and op is None:
        raise UsageError("--size needs --op")
    problem = str(parse_size(op, size, False, dtype, out_dtype, layout)) if size else None
    database = open_db(db, writable=True)
    have = database.measured_keys()
    records = read_cache(cache_file, op, problem, arch)
    new = [r for r in records if r.key() not in have]
    for r in new:
        database.append(r)
    click.echo(f"imported {len(new)} records into {database.path} ({len(records) - len(new)} were there already)")


@tune_db.command("table")
@click.option("--db", "dbs", multiple=True, required=True, metavar="PATH",
              help="A tuning database to read (.jsonl, or a shipped .jsonl.gz sweep); give it again for more.")
@click.option("--gpu", required=True, help="The GPU whose records make the table, by name (H100: every record on "
              "a GPU whose name starts so, e.g. H100 80GB HBM3).")
@click.option("--op", "ops", multiple=True, metavar="OP", help="Only this op's records (repeatable; default: all).")
@click.option("--out", "-o", "out_file", required=True, metavar="FILE.json",
              help="The table to write (kernelgen/tuned/<gpu>.json ships with the package).")
def tune_db_table(dbs, gpu, ops, out_file):
    """Build a tuned-defaults table: per (op, problem, arch) of one GPU the fastest recorded schedule the op
    still accepts, which `run`, `emit`, `bench` and the PyTorch ops take for the nearest problem."""
    from .tune.defaults import build_table, gpu_key, write_table
    for name in ops:
        get_op(name)
    check_out_file(out_file, "--out")
    records = [r for d in dbs for r in open_db(d).records() if not ops or r.op in ops]
    doc = build_table(records, gpu, shlex.join(["kernelgen", *sys.argv[1:]]))
    if not doc["entries"]:
        raise UsageError(f"no successful record of {', '.join(ops) or 'any op'} on a GPU named {gpu!r} "
                         f"(key {gpu_key(gpu)}) in {', '.join(dbs)}")
    write_table(doc, out_file)
    counts = {}
    for e in doc["entries"]:
        counts[e["op"]] = counts.get(e["op"], 0) + 1
    click.echo(f"wrote {out_file}: {len(doc['entries'])} entries for {doc['key']} ({doc['gpu']}): "
               + ", ".join(f"{op} {n}" for op, n in counts.items()))


# -- bench ---------------------------------------------------------------------------------------
@main.command()
@click.argument("op_name", required=False)
@click.option("--size", help="Problem size (default: the op's benchmark size); for `bench transformer` a config: "
              "gpt2-small (default), 7b, or d_model=D,heads=H,seq=S,batch=B.")
@click.option("--ladder", is_flag=True, help="Every ladder step, not only the default schedule.")
@click.option("--knob", "-k", "knobs", multiple=True, metavar="NAME=VALUE",
              help="Bench the default schedule with these knobs set, instead of the default and the heuristic.")
@click.option("--schedule", "schedule_file", metavar="FILE", help="Bench this schedule (JSON, or a .py file[:NAME]).")
@click.option("--suite", metavar="NAME|FILE.txt", help="Bench every shape of a suite on its default schedule, against "
              f"the vendor: {', '.join(suite_names())}, or a file of `OP SIZE [DTYPE]` lines.")
@click.option("--shard", metavar="I/N", help="With --suite: only the I-th of N interleaved parts of the suite.")
@click.option("--best", is_flag=True, help="Add the tuning database's best schedule for this size.")
@click.option("--db", metavar="PATH", help="Tuning database read by --best and by the default's choice.")
@click.option("--reps", type=click.IntRange(1, 100000), default=30, show_default=True)
@click.option("--markdown", is_flag=True, help="Print a Markdown table for BENCHMARKS.md.")
@click.option("--json", "json_file", metavar="FILE", help="Also write the results as JSON (kernelgen-results/1) for "
              "`kernelgen plot` and `kernelgen report`.")
@click.option("--plot", "plot_file", metavar="FILE.png|FILE.svg", help="Also draw the results: the ladder's "
              "speed-ups with --ladder, else the roofline (needs kernelgen[plot]).")
@click.option("--breakdown", is_flag=True, help="bench transformer: also time each stage of both blocks (layer "
              "norms, GEMMs, attention, residual adds; CUDA events between stages).")
@timing_option
@dtype_options
def bench(op_name, size, ladder, knobs, schedule_file, suite, shard, best, db, reps, markdown, json_file, plot_file,
          breakdown, timing, dtype, out_dtype, layout):
    """Validate and time schedules against the vendor library in the same run, the same way. `bench
    transformer` times a GPT-2-style block of kernelgen ops against PyTorch eager and torch.compile."""
    from .bench import bench_rows, format_rows
    if op_name == "transformer":
        given = [o for o, v in (("--ladder", ladder), ("--knob", knobs), ("--schedule", schedule_file), ("--suite", suite),
                                ("--shard", shard), ("--best", best), ("--db", db), ("--plot", plot_file),
                                ("--out-dtype", out_dtype), ("--layout", layout)) if v]
        if given:
            raise UsageError(f"bench transformer times a whole block; it takes no {given[0]} (only --size CONFIG, "
                             "--dtype, --reps, --markdown, --json, --breakdown)")
        passes = reps if click.get_current_context().get_parameter_source("reps").name != "DEFAULT" else 100
        return bench_transformer(size or "gpt2-small", dtype or "float32", passes, markdown, json_file, breakdown)
    if breakdown:
        raise UsageError("--breakdown times the stages of `bench transformer`; an op's bench takes no --breakdown")
    if suite is not None or shard is not None:
        given = [o for o, v in (("OP", op_name), ("--size", size), ("--ladder", ladder), ("--knob", knobs),
                                ("--schedule", schedule_file), ("--best", best), ("--dtype", dtype),
                                ("--out-dtype", out_dtype), ("--layout", layout), ("--plot", plot_file)) if v]
        if suite is None:
            raise UsageError("--shard splits a suite; give --suite NAME too")
        if given:
            raise UsageError(f"--suite runs each shape of its file on its own default; it takes no {given[0]} "
                             "(the suite's lines give op, size and type)")
        return bench_suite(suite, shard, reps, markdown, json_file, timing, open_db(db) if db else None)
    if op_name is None:
        raise UsageError("bench needs an OP (`kernelgen list` names them) or --suite NAME")
    op = get_op(op_name)
    if ladder and (knobs or schedule_file):
        raise UsageError("--ladder benches the ladder's steps; it takes no --knob or --schedule")
    if json_file:
        check_out_file(json_file, "--json")
    if plot_file:
        from . import plot as charts
        chart_format(plot_file, "--plot")
        check_out_file(plot_file, "--plot")
        charts.require()                    # the missing extra is said now, not after the GPU ran
    problem = parse_size(op, size, False, dtype, out_dtype, layout)
    if db and (knobs or schedule_file) and not best:
        raise UsageError("--db is read with --best, or by the choice of the default schedule; not with --knob or "
                         "--schedule alone")
    database = open_db(db)
    given = select(op, knobs, schedule_file, None, False, None, None)[0] if knobs or schedule_file else None
    rows = bench_rows(op, problem, ladder=ladder, best_db=str(database.path) if best else None, reps=reps,
                      timing=timing, given=given, db=database)
    click.echo(format_rows(op, problem, rows, markdown, timing=timing, reps=reps))
    if json_file or plot_file:
        from . import gpu, results
        from .timing import describe, method_for
        dev = gpu.device()
        how = describe(method_for(timing, op, problem), op, problem, reps).removeprefix("timing: ")
        run = results.run_dict(op, problem, dev, results.add_inspect(op, problem, rows, dev), ladder=ladder,
                               timing=how)
        doc = results.document("bench", device=results.device_dict(dev), runs=[run])
        if json_file:
            results.write(doc, json_file)
            click.echo(f"wrote {json_file}")
        if plot_file:
            from . import plot as charts
            fig = charts.ladder(doc, run) if ladder else charts.roofline(doc)
            results.write_text(charts.render(fig, chart_format(plot_file, "--plot")), plot_file)
            click.echo(f"wrote {plot_file}")
    if any(r["valid"] == "WRONG" for r in rows):
        raise ValidationError("a benchmarked kernel gave a wrong answer (see the table)")


def bench_transformer(size: str, dtype: str, passes: int, markdown: bool, json_file: str | None,
                      breakdown: bool = False):
    """The config and type checked, then torch and the GPU, then the runs (default 100 passes each)."""
    from . import results, transformer
    cfg = transformer.config(size)
    transformer.check_dtype(dtype)
    if json_file:
        check_out_file(json_file, "--json")
    transformer.require_cuda()
    doc = transformer.bench(cfg, dtype, reps=passes, breakdown=breakdown)
    click.echo(transformer.format_bench(doc, markdown))
    if json_file:
        results.write(doc, json_file)
        click.echo(f"wrote {json_file}")
    if not doc["check"]["ok"]:
        raise ValidationError("the kernelgen transformer block is outside its tolerance of the float64 reference")


def bench_suite(name: str, shard_text: str | None, reps: int, markdown: bool, json_file: str | None, timing: str,
                db=None):
    """Every entry of the suite parsed and checked first (a typo on line 90 stops the run before the GPU
    starts), then each shape benched on the GPU with a progress line, then the table and the summary; `db`,
    the tuning database the defaults are chosen from (None: the default one)."""
    from . import gpu, suites
    from .bench import format_suite, run_suite
    suite = suites.load(name)
    index, count = suites.parse_shard(shard_text)
    if json_file:
        check_out_file(json_file, "--json")
    work = []
    for e in suite.shard(index, count):
        try:
            op = get_op(e.op)
            work.append((e, op, parse_size(op, e.size, False, e.dtype, None)))
        except UsageError as err:
            raise UsageError(f"{suite.path.name} line {e.line}: {err}") from None
    gpu.require()
    rows = run_suite(suite.name, work, reps=reps, timing=timing, json_file=json_file, db=db)
    part = "" if count == 1 else f" (part {index}/{count})"
    click.echo(format_suite(suite.name, rows, markdown, timing=timing, reps=reps, shard=part))
    if json_file:
        click.echo(f"wrote {json_file}")
    if any(r["valid"] == "WRONG" for r in rows):
        raise ValidationError("a kernel of the suite gave a wrong answer (see the table)")


def chart_format(path: str, option: str) -> str:
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise UsageError(f"{option} {path!r}: write a .png or a .svg")
    return fmt


# -- plot, report --------------------------------------------------------------------------------
@main.command()
@click.argument("results_file", metavar="RESULTS.json")
@click.option("--out", "-o", "out_file", required=True, metavar="FILE.png|FILE.svg", help="The chart to write.")
@click.option("--chart", type=click.Choice(["auto", "roofline", "ladder", "shapes", "tune"]), default="auto",
              show_default=True, help="auto: a tune's best-so-far for a tune file, else the roofline; shapes: the best "
              "kernel against the vendor per problem of one op.")
@click.option("--run", "run_name", metavar="INDEX|'OP PROBLEM'", help="The run to chart (a ladder or a tune needs "
              "one where the file holds several; the roofline draws every run without it); for shapes, an op name.")
def plot(results_file, out_file, chart, run_name):
    """Draw a results file (`bench --json`, `tune --json`): the roofline, a ladder's speed-ups, a tune."""
    from . import plot as charts, results
    fmt = chart_format(out_file, "-o")
    check_out_file(out_file)
    doc = results.load(results_file)
    charts.require()
    if chart == "auto":
        chart = "tune" if doc["kind"] == "tune" else "roofline"
    if chart == "shapes":
        run = run_name
    elif chart != "roofline" or run_name:
        run = results.select_run(doc, run_name, ladder=chart == "ladder")
    else:
        run = None
    fig = charts.chart(doc, chart, run)
    results.write_text(charts.render(fig, fmt), out_file)
    click.echo(f"wrote {out_file} ({chart}: {', '.join(f'{n} {k}' for k, n in charts.points(fig).items())})")


@main.command()
@click.argument("results_file", metavar="RESULTS.json")
@click.option("--out", "-o", "out_file", required=True, metavar="FILE.html", help="The page to write.")
def report(results_file, out_file):
    """One self-contained HTML page of a results file: device, date, tables and charts inline."""
    from . import plot as charts, results
    from .report import html_page
    check_out_file(out_file)
    doc = results.load(results_file)
    charts.require()
    results.write_text(html_page(doc), out_file)
    click.echo(f"wrote {out_file} ({len(doc['runs'])} runs)")


if __name__ == "__main__":
    main()
