"""The emulator's shared-memory wavefronts and global sectors per warp request (kernelgen.emulate.traffic)
beside Nsight Compute's counters, on every step of the transpose, staged-load and SGEMM ladders.

    PYTHONPATH=. python3 bench/banks_ncu.py emulate        # no GPU: $OUT/banks_emulator.json
    PYTHONPATH=. python3 bench/banks_ncu.py gpu            # GPU + ncu: $OUT/banks_ncu.json and .md
    PYTHONPATH=. python3 bench/banks_ncu.py launch OP STEP # one launch of a ladder step (what ncu profiles)

`gpu` runs the emulator on each step, then `ncu` on one launch of the same kernel at the same size (the
inputs differ, the addresses do not), and tabulates both. Equal columns are the target: conflicts =
wavefronts beyond one per request phase (Nsight's l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st).
"""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen.ops import get_op                                          # noqa: E402

SIZES = {"transpose": {"M": 256, "N": 256}, "staged_load": {"n": 4096}, "sgemm": {"M": 256, "N": 256, "K": 64}}
METRICS = {   # ours -> Nsight Compute's
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


def steps():
    for name in SIZES:
        op = get_op(name)
        for i, step in enumerate(op.ladder(), 1):
            yield op, i, step


def emulator_counts(op, step) -> dict[str, int]:
    """Our side, summed over the arrays of each space and direction, keyed like METRICS."""
    from kernelgen.emulate.traffic import profile
    t = profile(op, step.schedule, op.problem(SIZES[op.name]))
    out: dict[str, int] = {}
    for (space, access, what), metric in METRICS.items():
        out[metric] = sum(getattr(s, what) for s in t.stats if (s.space, s.access) == (space, access))
    return out


def ncu_counts(op, index: int) -> dict[str, float]:
    kernel = op.kernel(op.ladder()[index - 1].schedule)
    plan = op.plan(kernel, op.problem(SIZES[op.name]))
    cmd = ["ncu", "--csv", "--page", "raw", "--metrics", ",".join(METRICS.values()), "-k", f"regex:{kernel.name}",
           "--launch-count", str(len(plan.launches)), sys.executable, __file__, "launch", op.name, str(index)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = list(csv.reader(io.StringIO(out[out.index('"ID"'):])))
    header, data = rows[0], [r for r in rows[1:] if r and r[0].strip().isdigit()]   # not the units row
    sums = {m: 0.0 for m in METRICS.values()}
    for row in data:
        for m in sums:
            if m in header:
                sums[m] += float(row[header.index(m)].replace(",", "") or 0)
    return sums


def launch(name: str, index: int) -> None:
    import cupy
    from kernelgen.timing import prepared
    op = get_op(name)
    kernel, run, _ = prepared(op, op.ladder()[index - 1].schedule, op.problem(SIZES[name]))
    run()
    cupy.cuda.Device().synchronize()
    print(kernel.name)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "emulate"
    if mode == "launch":
        return launch(sys.argv[2], int(sys.argv[3]))
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for op, i, step in steps():
        row = {"op": op.name, "step": i, "title": step.title, "size": SIZES[op.name],
               "emulator": emulator_counts(op, step)}
        if mode == "gpu":
            row["ncu"] = ncu_counts(op, i)
        results.append(row)
        print(op.name, i, step.title, json.dumps(row.get("ncu", row["emulator"])), flush=True)
    name = "banks_ncu" if mode == "gpu" else "banks_emulator"
    (out_dir / f"{name}.json").write_text(json.dumps(results, indent=1))
    if mode == "gpu":
        lines = ["| op | step | metric | emulator | ncu |", "|---|---|---|---|---|"]
        for r in results:
            for m in METRICS.values():
                lines.append(f"| {r['op']} | {r['step']} | {m} | {r['emulator'][m]} | {r['ncu'][m]:.0f} |")
        (out_dir / f"{name}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
