"""The emulator's shared-memory wavefronts and global sectors per warp request (kernelgen.emulate.traffic)
beside Nsight Compute's counters, on every step of the transpose, staged-load and SGEMM ladders.

    PYTHONPATH=. python3 bench/banks_ncu.py emulate        # no GPU: $OUT/banks_emulator.json
    PYTHONPATH=. python3 bench/banks_ncu.py gpu            # GPU + ncu: $OUT/banks_ncu.json and .md (exit 1: a mismatch)
    PYTHONPATH=. python3 bench/banks_ncu.py compare bench_results/2026-11-23-s4/banks_ncu.json
                                   # no GPU: today's emulator against a saved gpu run: $OUT/banks_compare.{json,md}

`gpu` runs the emulator on each step, then `ncu` on one launch of the same kernel at the same size
(kernelgen.ncu: the inputs differ, the addresses do not), and tabulates both. The target is equal
columns: wavefronts (and sectors) per request and bank conflicts = wavefronts beyond one per request
phase (Nsight's l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st). The sizes are whole tiles,
where the emulator's grouping of lanes into requests is exact. `compare` re-runs the emulator and reads
ncu's side from a saved `gpu` run (the addresses, hence the counters, do not depend on the inputs), so a
change to the emulator's rules is checked against the GPU without one.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen import ncu                                                 # noqa: E402
from kernelgen.ops import get_op                                          # noqa: E402

SIZES = {"transpose": {"M": 256, "N": 256}, "staged_load": {"n": 4096}, "sgemm": {"M": 256, "N": 256, "K": 64}}
TOLERANCE = 0.02      # per-request figures within 2% agree


def steps():
    for name in SIZES:
        op = get_op(name)
        for i, step in enumerate(op.ladder(), 1):
            yield op, i, step


def emulator_counts(op, step) -> dict[str, int]:
    """Our side, keyed by ncu's metric names (ncu.TRAFFIC)."""
    from kernelgen.emulate.traffic import profile
    return ncu.traffic_metrics(profile(op, step.schedule, op.problem(SIZES[op.name])))


def ncu_counts(op, step) -> dict[str, float | None]:
    from kernelgen import gpu
    _, launches = ncu.profile(op, step.schedule, op.problem(SIZES[op.name]), gpu.device(), ncu.TRAFFIC.values())
    return ncu.sum_launches(launches)


def per_request(counts: dict) -> dict[str, float | None]:
    """Wavefronts (shared) or sectors (global) per request, per space and direction: "shared load" -> 32.0."""
    f = ncu.figures(counts)
    return {f"{space} {access}": f[space][access]["per_request"] for space in ("shared", "global")
            for access in ("load", "store")}


def agree(ours: dict, theirs: dict) -> bool:
    """Every per-request figure within TOLERANCE (a space neither side uses counts as 0), and each bank-conflict
    count within TOLERANCE of the wavefronts it is part of."""
    a, b = per_request(ours), per_request(theirs)
    if not all(abs((a[k] or 0.0) - (b[k] or 0.0)) <= TOLERANCE * max(a[k] or 0.0, b[k] or 0.0) for k in a):
        return False
    for (space, access, what), m in ncu.TRAFFIC.items():
        waves = ncu.TRAFFIC[(space, access, "units")]
        if what == "conflicts" and abs((ours[m] or 0) - (theirs[m] or 0)) > TOLERANCE * max(ours[waves] or 0,
                                                                                             theirs[waves] or 0):
            return False
    return True


def table(results: list[dict]) -> str:
    lines = ["| op | step | figure | emulator | ncu |", "|---|---|---|---|---|"]
    for r in results:
        ours, theirs = per_request(r["emulator"]), per_request(r["ncu"])
        for k in ours:
            lines.append(f"| {r['op']} | {r['step']} | {k} per request | {ours[k]} | {theirs[k]} |")
        for (space, access, what), m in ncu.TRAFFIC.items():
            if what == "conflicts":
                lines.append(f"| {r['op']} | {r['step']} | {space} {access} bank conflicts | {r['emulator'][m]} | "
                             f"{r['ncu'][m]} |")
    return "\n".join(lines) + "\n"


def saved_ncu(path: str) -> dict[tuple[str, int], dict]:
    """ncu's counters of each (op, step) in a saved `gpu` run's banks_ncu.json."""
    return {(r["op"], r["step"]): r["ncu"] for r in json.loads(Path(path).read_text())}


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "emulate"
    if mode not in ("emulate", "gpu", "compare") or (mode == "compare") != (len(sys.argv) == 3):
        print(f"usage: {sys.argv[0]} emulate | gpu | compare SAVED_BANKS_NCU_JSON", file=sys.stderr)
        return 2
    saved = saved_ncu(sys.argv[2]) if mode == "compare" else {}
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for op, i, step in steps():
        row = {"op": op.name, "step": i, "title": step.title, "size": SIZES[op.name],
               "emulator": emulator_counts(op, step)}
        if mode != "emulate":
            row["ncu"] = ncu_counts(op, step) if mode == "gpu" else saved.get((op.name, i))
            row["agree"] = row["ncu"] is not None and agree(row["emulator"], row["ncu"])
        results.append(row)
        theirs = "" if mode == "emulate" else f"ncu {json.dumps(row['ncu'] and per_request(row['ncu']))} " \
                                              f"agree={row['agree']}"
        print(op.name, i, step.title, json.dumps(per_request(row["emulator"])), theirs, flush=True)
    name = {"gpu": "banks_ncu", "emulate": "banks_emulator", "compare": "banks_compare"}[mode]
    (out_dir / f"{name}.json").write_text(json.dumps(results, indent=1))
    if mode == "emulate":
        return 0
    (out_dir / f"{name}.md").write_text(table([r for r in results if r["ncu"] is not None]))
    bad = [f"{r['op']} {r['step']}" for r in results if not r["agree"]]
    print(f"{len(results) - len(bad)} of {len(results)} steps agree" + (f"; not: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
