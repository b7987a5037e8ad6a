"""Where should an fp32 product run: the CUDA cores (sgemm) or the fp64 tensor cores (gemm dtype dmma)? Times both
ops' schedule_for picks against cuBLAS SGEMM (TF32 off) over a shape suite, and scores the decision
kernelgen.torch.linear takes (gemm_cost.fp32_on_dmma, the two cost models) against the faster of the two measured.

    PYTHONPATH=. python3 bench/fp32_choice_probe.py [--suite deepbench-gemm-train] [--shard I/N] [--reps 10]

Per shape: random normal inputs stored as the layout says; each kernel's output checked against the float64 product
(max |C - ref| / (|A| |B|) <= 2^-10, a gross-error check: dmma's is ~1e-8, sgemm's ~1e-7); events around one launch,
L2 flushed, median of `reps`. Prints a Markdown row a shape as it goes, then the geometric means (each kernel, the
decision's, the faster's, against cuBLAS) and the wrong decisions with what they cost.
"""
from __future__ import annotations

import argparse
import datetime
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dmma_probe import errors, operands              # noqa: E402  (the same inputs, references and errors)
from kernelgen import get_op, gpu                    # noqa: E402
from kernelgen.ops.gemm_cost import fp32_on_dmma     # noqa: E402
from kernelgen.prepared import prepare               # noqa: E402
from kernelgen.sizes import parse_size               # noqa: E402
from kernelgen.suites import load                    # noqa: E402
from kernelgen.timing import time_callable           # noqa: E402


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default="deepbench-gemm-train")
    ap.add_argument("--shard", default="1/1")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    import cupy
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = gpu.device()
    sgemm, gemm = get_op("sgemm"), get_op("gemm")
    index, count = (int(v) for v in args.shard.split("/"))
    entries = [e for e in load(args.suite).shard(index, count) if e.op == "sgemm"]
    print(f"# fp32 products: sgemm (CUDA cores) and gemm dmma (fp64 tensor cores) against cuBLAS SGEMM, {args.suite} "
          f"shard {args.shard} ({len(entries)} shapes), {dev.gpu} ({dev.arch}), "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; events, L2 flushed, median of {args.reps}\n")
    print("| shape | cuBLAS us | sgemm us | dmma us | sgemm/cuBLAS | dmma/cuBLAS | decision | right |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for e in entries:
        p32 = parse_size(sgemm, e.size, False)
        M, N, K, layout = p32["M"], p32["N"], p32["K"], p32.layout or "NN"
        pdm = gemm.problem({"M": M, "N": N, "K": K}, dtype="dmma", layout=layout)
        a_st, b_st, ref, bound, ta, tb = operands(M, N, K, layout, M + 3 * N + 7 * K)
        times = {"cuBLAS": time_callable(lambda: torch.matmul(ta, tb), reps=args.reps).median_us}
        for label, op, p in (("sgemm", sgemm, p32), ("dmma", gemm, pdm)):
            prep = prepare(op, op.schedule_for(p, dev), p)
            c = cupy.full((M, N), cupy.nan, cupy.float32)
            run = lambda: prep(A=a_st, B=b_st, C=c)      # noqa: E731
            run()
            err = errors(c, ref, bound)[1]
            if not err <= 2.0 ** -10:
                raise SystemExit(f"{label} at {e.size}: error {err:.2e} of |A||B|")
            times[label] = time_callable(run, reps=args.reps).median_us
        on_dmma = fp32_on_dmma(M, N, K, layout, dev)
        chosen = times["dmma" if on_dmma else "sgemm"]
        right = chosen <= min(times["sgemm"], times["dmma"]) * 1.02      # within 2% of the faster: right
        rows.append(dict(shape=e.size, **times, on_dmma=on_dmma, chosen=chosen, right=right))
        print(f"| {e.size} | {times['cuBLAS']:.1f} | {times['sgemm']:.1f} | {times['dmma']:.1f} | "
              f"{times['cuBLAS'] / times['sgemm']:.3f} | {times['cuBLAS'] / times['dmma']:.3f} | "
              f"{'dmma' if on_dmma else 'sgemm'} | {'yes' if right else 'NO'} |", flush=True)
    ratio = {k: geomean([r["cuBLAS"] / r[k] for r in rows]) for k in ("sgemm", "dmma", "chosen")}
    best = geomean([r["cuBLAS"] / min(r["sgemm"], r["dmma"]) for r in rows])
    wrong = [r for r in rows if not r["right"]]
    print(f"\ngeometric mean against cuBLAS over {len(rows)} shapes: sgemm {ratio['sgemm']:.3f}x, dmma {ratio['dmma']:.3f}x, "
          f"the decision's {ratio['chosen']:.3f}x, the faster of the two {best:.3f}x; under 0.8x: decision "
          f"{sum(r['cuBLAS'] / r['chosen'] < 0.8 for r in rows)}; on dmma {sum(r['on_dmma'] for r in rows)}")
    print(f"wrong decisions (more than 2% slower than the other kernel): {len(wrong)}" +
          "".join(f"\n- {r['shape']}: took {'dmma' if r['on_dmma'] else 'sgemm'} {r['chosen']:.1f} us, the other "
                  f"{r['sgemm'] if r['on_dmma'] else r['dmma']:.1f}" for r in wrong))


if __name__ == "__main__":
    main()
