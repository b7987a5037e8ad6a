r"""Nsight Compute (`ncu`) on one launch of a kernel: the metrics asked for, the command line, the
CSV it prints, and the few figures that say why a kernel is slow.

    kernelgen profile transpose --size M=1024,N=1024 --step 2      # the CLI's way to this module

>>> rows = ['"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
...         '"Device","CC","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",'
...         '"smsp__inst_executed_op_shared_ld.sum"',
...         '"","","","","","","","","","","","","inst"',                        # units
...         '"0","4242","python3","h","transpose_f32","1","7","(32, 8, 1)","(1024, 1, 1)","0","9.0",'
...         '"1,048,576","32,768"']
>>> (launch,) = parse_csv("==PROF== Disconnected from process 4242\n" + "\n".join(rows))   # `ncu --csv --page raw`
>>> figures(launch.metrics)["shared"]["load"]
{'requests': 32768.0, 'wavefronts': 1048576.0, 'conflicts': None, 'per_request': 32.0}

`ncu` profiles a process: `profile` prepares the kernel here (compiling it into the disk cache), then
runs ncu on `python -m kernelgen.ncu OP SIZE DTYPE OUT_DTYPE SCHEDULE_JSON`, a process that launches
the plan's kernels once on fresh inputs, and reads the metrics of those launches from ncu's raw page
(`--print-units base`: bytes per second, nanoseconds). Clocks are left as they run (`--clock-control
none`, as `kernelgen bench` times them); caches are flushed before each launch (ncu's default).

Stall reasons are Nsight Compute's warp-state statistics: per reason, the cycles warps spent stalled
on it per instruction issued (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio).
Shared memory counts wavefronts per request (1 = conflict-free for 4-byte accesses; 128-bit accesses
need 4) and ncu's bank-conflict counts, global memory 32-byte sectors per request, both as the
emulator counts them (kernelgen.emulate.traffic; bench/banks_ncu.py compares the two).
"""
from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

from . import config
from .errors import UsageError
from .timing import roofline

FIGURES = {   # ours -> Nsight Compute's
    "duration_ns": "gpu__time_duration.sum",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "occupancy_limit_pct": "sm__maximum_warps_per_active_cycle_pct",
    "issue_active_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_bytes_per_s": "dram__bytes.sum.per_second",
    "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_bytes_per_s": "lts__t_bytes.sum.per_second",
}
TRAFFIC = {   # (space, access, what) -> Nsight Compute's; `what` as kernelgen.emulate.traffic.AccessStat names it
    ("shared", "load", "conflicts"): "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    ("shared", "store", "conflicts"): "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    ("shared", "load", "units"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    ("shared", "store", "units"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    ("shared", "load", "requests"): "smsp__inst_executed_op_shared_ld.sum",
    ("shared", "store", "requests"): "smsp__inst_executed_op_shared_st.sum",
    ("global", "load", "units"): "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    ("global", "store", "units"): "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    ("global", "load", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    ("global", "store", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
}
STALLS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
          "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected",
          "short_scoreboard", "sleeping", "tex_throttle", "wait")


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


METRICS = (*FIGURES.values(), *TRAFFIC.values(), *map(stall_metric, STALLS))
# Units ncu may print (base units with --print-units base; the scaled ones where a CSV was made without it).
_SCALE = {"": 1.0, "%": 1.0, "nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "ns": 1.0, "us": 1e3,
          "ms": 1e6, "s": 1e9}
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


# -- the command line ----------------------------------------------------------------------------
def executable() -> str:
    """The ncu to run (KERNELGEN_NCU, else `ncu` on PATH); a UsageError where there is none."""
    name = config.ncu()
    found = shutil.which(name)
    if not found:
        raise UsageError(f"Nsight Compute's `{name}` is not installed here (not on PATH): install Nsight Compute "
                         "(it comes with the CUDA toolkit) or set KERNELGEN_NCU to its path")
    return found


def command(ncu: str, symbols: list[str], launches: int, argv: list[str], metrics=METRICS) -> list[str]:
    """ncu's command line: `metrics` of the first `launches` launches of kernels named `symbols`, of
    the process `argv`, as the raw page's CSV in base units."""
    names = "|".join(re.escape(s) for s in sorted(set(symbols)))
    return [ncu, "--csv", "--page", "raw", "--print-units", "base", "--target-processes", "all",
            "--clock-control", "none", "--metrics", ",".join(metrics), "-k", f"regex:^({names})$",
            "--launch-count", str(launches), *argv]


def launch_argv(op, sched, problem) -> list[str]:
    """The process ncu profiles: this module's `main`, one launch of the plan on fresh inputs."""
    types = problem.types
    size = str(problem).partition(":")[0]
    dtype = types.input.name if types else "float32"
    out = types.output.name if types else dtype
    return [sys.executable, "-m", "kernelgen.ncu", op.name, size, dtype, out, sched.to_json()]


# -- the CSV -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Launch:
    """One profiled launch: the kernel's name, its block and grid as ncu prints them, its metrics."""
    kernel: str
    block: str
    grid: str
    metrics: dict


def _value(text: str, unit: str) -> float | None:
    text = text.strip().replace(",", "")     # ncu writes 5,980,223
    if text in ("", "n/a"):
        return None
    try:
        v = float(text)
    except ValueError:
        return None
    if unit in _SCALE:
        return v * _SCALE[unit]
    prefix, rest = (unit[0], unit[1:]) if unit[:1] in _PREFIX and unit[1:] else ("", unit)
    return v * _PREFIX[prefix] if rest.split("/")[0] in ("byte", "sector", "request", "inst", "cycle") else v


def parse_csv(text: str) -> list[Launch]:
    """Every launch in `ncu --csv --page raw` output: a header row ("ID", "Process ID", ..., "Kernel Name",
    ..., one column per metric), a row of units, a row per launch; ==PROF== lines and the profiled
    program's own output around it are skipped."""
    start = text.find('"ID",')
    if start < 0:
        raise UsageError("ncu printed no metrics table (no kernel launch matched, or ncu failed)")
    rows = [r for r in csv.reader(io.StringIO(text[start:])) if r]
    header = rows[0]
    units = rows[1] if len(rows) > 1 and not rows[1][0].strip() else [""] * len(header)
    col = {name: i for i, name in enumerate(header)}
    if "Kernel Name" not in col:
        raise UsageError("ncu's CSV has no 'Kernel Name' column; is it `--page raw` output?")
    out = []
    for r in rows[1:]:
        if not r[0].strip().isdigit() or len(r) != len(header):
            continue   # the units row, a line of the program's output
        metrics = {h: _value(r[i], units[i]) for i, h in enumerate(header) if "__" in h}
        out.append(Launch(r[col["Kernel Name"]], r[col.get("Block Size", 0)], r[col.get("Grid Size", 0)], metrics))
    return out


# -- the figures ---------------------------------------------------------------------------------
def figures(metrics: dict) -> dict:
    """The figures `kernelgen profile` prints, from one launch's metrics (None where ncu gave none)."""
    out = {k: metrics.get(m) for k, m in FIGURES.items()}
    stalls = {r: metrics.get(stall_metric(r)) for r in STALLS}
    out["stalls"] = dict(sorted(((r, v) for r, v in stalls.items() if v), key=lambda kv: -kv[1]))
    for space, unit in (("shared", "wavefronts"), ("global", "sectors")):
        out[space] = {}
        for access in ("load", "store"):
            d = {"requests": metrics.get(TRAFFIC[(space, access, "requests")]),
                 unit: metrics.get(TRAFFIC[(space, access, "units")])}
            if space == "shared":
                d["conflicts"] = metrics.get(TRAFFIC[(space, access, "conflicts")])
            d["per_request"] = round(d[unit] / d["requests"], 3) if d["requests"] and d[unit] is not None else None
            out[space][access] = d
    return out


def _pct(v) -> str:
    return "n/a" if v is None else f"{v:.1f}%"


def _rate(v) -> str:
    return "n/a" if v is None else f"{v / 1e9:.0f} GB/s"


def lines(f: dict, top: int = 4) -> list[str]:
    """The figures as the CLI prints them, one line per topic."""
    dur = f.get("duration_ns")
    out = [f"duration     {'n/a' if dur is None else f'{dur / 1e3:.2f} us'}",
           f"occupancy    {_pct(f.get('occupancy_pct'))} achieved (theoretical {_pct(f.get('occupancy_limit_pct'))})",
           f"issue slots  {_pct(f.get('issue_active_pct'))} busy (SM issue active)",
           f"DRAM         {_pct(f.get('dram_pct'))} of peak, {_rate(f.get('dram_bytes_per_s'))}",
           f"L2           {_pct(f.get('l2_pct'))} of peak, {_rate(f.get('l2_bytes_per_s'))}"]
    stalls = list(f.get("stalls", {}).items())[:top]
    out.append("stalls       " + (", ".join(f"{r} {v:.2f}" for r, v in stalls) + " (cycles per issued instruction)"
                                  if stalls else "n/a"))
    for space, unit in (("shared", "wavefronts"), ("global", "sectors")):
        parts = []
        for access, d in f.get(space, {}).items():
            if d.get("per_request") is None:
                continue
            extra = f", {d['conflicts']:.0f} bank conflicts" if d.get("conflicts") is not None else ""
            parts.append(f"{access}s {d['per_request']:.2f} {unit}/request ({d['requests']:.0f} requests{extra})")
        out.append(f"{space:<13}{'; '.join(parts) or 'no requests'}")
    return out


def row_lines(row: dict, sched=None) -> list[str]:
    """A profiled row (result_row) as the CLI prints it: the step and kernel (the schedule where given),
    then each launch's figures."""
    out = [f"kernel   {row['kernel']}\nschedule {sched}" if sched is not None else f"\n{row['step']}: {row['kernel']}"]
    for f in row["profile"]:
        if len(row["profile"]) > 1:
            out.append(f"launch   {f['symbol']} block {f['block']} grid {f['grid']}")
        out += [f"  {line}" for line in lines(f)]
    return out


# -- running it ----------------------------------------------------------------------------------
def _unknown(metrics: list[str], errors: list[str]) -> list[str]:
    """The metrics ncu's errors name as unknown ("==ERROR== Failed to find metric regex:^name\\.(sum|...)$")."""
    said = " ".join(e.replace("\\", "") for e in errors if "metric" in e.lower())
    return [m for m in metrics if re.search(rf"(?<!\w){re.escape(m.split('.')[0])}(?!\w)", said)]


def run(cmd: list[str], expect: int) -> list[Launch]:
    """Run ncu and parse its CSV; a UsageError with ncu's (or the program's) one line where it fails.
    Metrics this ncu or GPU does not know are left out on a second try (and come back as None)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # this kernelgen, from any folder
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    text = proc.stdout + "\n" + proc.stderr
    errors = [ln.strip() for ln in text.splitlines() if ln.startswith("==ERROR==")]
    if any("ERR_NVGPUCTRPERM" in e for e in errors):
        raise UsageError("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): run as root, or "
                         "allow it (NVreg_RestrictProfilingToAdminUsers=0, see NVIDIA's ERR_NVGPUCTRPERM page)")
    at = cmd.index("--metrics") + 1
    unknown = _unknown(cmd[at].split(","), errors)
    if unknown and len(unknown) < len(cmd[at].split(",")):
        return run(cmd[:at] + [",".join(m for m in cmd[at].split(",") if m not in unknown)] + cmd[at + 1:], expect)
    launches = parse_csv(proc.stdout) if '"ID",' in proc.stdout else []
    if proc.returncode != 0 or len(launches) != expect:
        said = ([ln.strip() for ln in text.splitlines() if ln.startswith("error:")] or errors
                or [ln.strip() for ln in text.splitlines() if ln.startswith("==WARNING==")])
        why = said[-1] if said else (text.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise UsageError(f"ncu profiled {len(launches)} of {expect} launches (exit status {proc.returncode}): "
                         f"{' '.join(why.split())[:300]}")
    return launches


def profile(op, sched, problem, on, metrics=METRICS) -> tuple[object, list[Launch]]:
    """(the kernel, each of its plan's launches under ncu), compiled and run for the Target `on` (the GPU)."""
    from .prepared import prepare
    prep = prepare(op, sched, problem, on)
    prep.binary                              # compiled here, into the disk cache the profiled process reads
    symbols = [launch.symbol for launch in prep.plan.launches]
    cmd = command(executable(), symbols, len(symbols), launch_argv(op, sched, problem), metrics)
    return prep.kernel, run(cmd, len(symbols))


def traffic_metrics(traffic) -> dict[str, int]:
    """The emulator's counts (kernelgen.emulate.traffic.Traffic) as ncu's TRAFFIC metrics, summed over
    the arrays of each space and direction, for comparing the two."""
    return {metric: sum(getattr(s, what) for s in traffic.stats if (s.space, s.access) == (space, access))
            for (space, access, what), metric in TRAFFIC.items()}


def sum_launches(launches: list[Launch], metrics=TRAFFIC.values()) -> dict[str, float | None]:
    """`metrics` summed over the launches of a plan (None where ncu gave none)."""
    vals = {m: [l.metrics.get(m) for l in launches] for m in metrics}
    return {m: None if all(x is None for x in v) else sum(x or 0.0 for x in v) for m, v in vals.items()}


def result_row(op, problem, label: str, sched, kernel, launches: list[Launch], on) -> dict:
    """A row of a results document (kernelgen.results) for one profiled schedule: its time is the sum of
    ncu's durations of its launches, and "profile" holds each launch's figures."""
    secs = sum(l.metrics.get(FIGURES["duration_ns"]) or 0.0 for l in launches) * 1e-9
    if secs <= 0:
        raise UsageError(f"ncu measured no duration for {kernel.name}")
    gbs, tflops, roof, _ = roofline(op.for_schedule(sched), problem, secs * 1e6, on)
    return {"step": label, "kernel": kernel.name, "schedule": sched.to_dict(), "time_us": secs * 1e6,
            "GB/s": gbs, "TFLOP/s": tflops, "roofline": roof or None,
            "valid": None, "profile": [dict(symbol=l.kernel, block=l.block, grid=l.grid, **figures(l.metrics))
                                       for l in launches]}


def main(argv: list[str]) -> int:
    """The profiled process: OP SIZE DTYPE OUT_DTYPE SCHEDULE_JSON -> one launch of the plan, synchronised."""
    from .errors import KernelgenError
    from .ops import get_op
    from .schedule import Schedule
    from .sizes import parse_size
    from .timing import prepared
    try:
        name, size, dtype, out, sched = argv
        op = get_op(name)
        _, launch, _ = prepared(op, Schedule.from_json(sched), parse_size(op, size, False, dtype, out))
        launch()
        import cupy
        cupy.cuda.Device().synchronize()
    except KernelgenError as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
