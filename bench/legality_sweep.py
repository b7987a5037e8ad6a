"""Compile a sample of every op's legal schedule space for several archs: any compile error is a hole
in the legality rules (a schedule `op.kernel` accepts that NVRTC refuses).

    PYTHONPATH=. python3 bench/legality_sweep.py                       # 60 points an op, sm_80 and sm_90a
    PYTHONPATH=. python3 bench/legality_sweep.py --per-op 200 --archs sm_80,sm_90 --jobs 16 --ops sgemm,conv2d

No GPU is needed: the points are pruned by `tune.space.legal_space` (what the tuner measures) and
compiled by the tuner's builder pool (`--jobs` processes, NVRTC, the disk cache shared). Each op is
swept at its default problem in each of its element types, so the half-precision kernels are
compiled too. Writes `$OUT/legality_sweep.md` (or ./) and exits 1 when anything failed to compile.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen.ops import OPS, get_op              # noqa: E402
from kernelgen.target import target                # noqa: E402
from kernelgen.tune.builder import Builders        # noqa: E402
from kernelgen.tune.space import legal_space       # noqa: E402


def problems(op):
    """The op's default problem in each element type it takes."""
    for dtype in op.dtypes:
        try:
            yield op.problem(dtype=dtype)
        except Exception as e:          # an op whose default size a type refuses: say so, go on
            print(f"{op.name} {dtype}: no default problem ({e})", flush=True)


def sweep(args) -> list[dict]:
    rows = []
    with Builders(args.jobs) as pool:
        for name in args.ops:
            op = get_op(name)
            for problem in problems(op):
                for arch in args.archs:
                    tgt = target(arch)
                    space, pruned = legal_space(op, problem, tgt)
                    sample = random.Random(args.seed).sample(space, min(args.per_op, len(space)))
                    t0 = time.time()
                    jobs = [(c, pool.submit(op, c.schedule, problem, tgt)) for c in sample]
                    built = [(c, j.result(args.timeout)) for c, j in jobs]
                    failed = [(c, b) for c, b in built if b.status != "ok"]
                    rows.append(dict(op=name, dtype=problem.types.input.name, arch=arch, legal=len(space),
                                     pruned=pruned, compiled=len(built), failed=len(failed),
                                     seconds=round(time.time() - t0, 1),
                                     failures=[f"{b.name}: {b.detail.splitlines()[0][:160] if b.detail else ''}"
                                               for _, b in failed[:5]]))
                    r = rows[-1]
                    print(f"{name:12s} {r['dtype']:9s} {arch:7s} legal {r['legal']:5d} (pruned {pruned:5d}) "
                          f"compiled {r['compiled']:4d} failed {r['failed']:3d} in {r['seconds']} s", flush=True)
                    for line in r["failures"]:
                        print(f"    {line}", flush=True)
    return rows


def write(rows, args) -> Path:
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# Legality sweep, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             f"`bench/legality_sweep.py --per-op {args.per_op} --archs {','.join(args.archs)} --seed {args.seed}`: a "
             "random sample of each op's legal space (after pruning) compiled with NVRTC.", "",
             "| op | dtype | arch | legal points | pruned | compiled | compile errors |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['op']} | {r['dtype']} | {r['arch']} | {r['legal']} | {r['pruned']} | {r['compiled']} | {r['failed']} |"
              for r in rows]
    for r in rows:
        lines += [f"- {r['op']} {r['dtype']} {r['arch']}: {f}" for f in r["failures"]]
    path = out / "legality_sweep.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated op names (default: every op)")
    ap.add_argument("--archs", default="sm_80,sm_90a")
    ap.add_argument("--per-op", type=int, default=60, help="points compiled per op, type and arch")
    ap.add_argument("--jobs", type=int, default=None, help="builder processes (default: every core)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one build")
    args = ap.parse_args()
    args.ops, args.archs = args.ops.split(","), args.archs.split(",")
    rows = sweep(args)
    print(f"wrote {write(rows, args)}")
    return 1 if any(r["failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
