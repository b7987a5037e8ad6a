"""fp32 data on tensor cores (`--dtype tf32` / `tf32x3`) on a GPU, in one call: each variant checked (exact
small-integer inputs, C poisoned) and timed against cuBLAS at 4096^3 (and the best few at 8192^3), then the
accuracy on inputs with more bits than TF32 holds, beside cuBLAS's on the same inputs.

    PYTHONPATH=. python3 bench/tf32_probe.py                  # writes $OUT/tf32_probe.{json,md}
    PYTHONPATH=. python3 bench/tf32_probe.py --dtypes tf32 --best 2 --reps 10

Vendor: torch.matmul with TF32 allowed for tf32, with TF32 off (plain fp32) for tf32x3, whose accuracy is
about fp32's. Accuracy: max |C - A @ B| / (|A| @ |B|) over a 2048^3 product of values with 16 significant
bits (float64 reference), for the heuristic's kernel and for cuBLAS with TF32 on and off.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernelgen.ops import get_op                 # noqa: E402
import mma_sync_probe as msp                     # noqa: E402  (check_output, time_size, compilation)

# (label, knobs over the 16-bit default: 128x128 blocks of 64x64 warps, bk 32, 4 cp.async stages, XOR swizzle)
VARIANTS = {
    "tf32": (
        ("128x128, warps 64x64, 4 stages, staged C", dict(epilogue="smem")),
        ("128x128, warps 64x64, 3 stages, staged C", dict(stages=3, epilogue="smem")),
        ("128x128, warps 64x32, 4 stages, staged C", dict(wn=32, epilogue="smem")),
        ("128x256, warps 64x64, 3 stages, staged C", dict(bn=256, stages=3, epilogue="smem")),
        ("256x128, warps 64x64, 3 stages, staged C", dict(bm=256, stages=3, epilogue="smem")),
        ("128x128, warps 64x64, bk 16, 4 stages, staged C", dict(bk=16, epilogue="smem")),
        ("128x128, warps 64x64, 4 stages, staged C, no ldmatrix", dict(epilogue="smem", ldmatrix=False)),
    ),
    "tf32x3": (
        ("128x128, warps 64x32, 4 stages, staged C", dict(wn=32, epilogue="smem")),
        ("128x128, warps 64x32, 3 stages, staged C", dict(wn=32, stages=3, epilogue="smem")),
        ("128x128, warps 32x64, 4 stages, staged C", dict(wm=32, epilogue="smem")),
        ("128x256, warps 64x32, 3 stages, staged C", dict(bn=256, wn=32, stages=3, epilogue="smem")),
        ("64x128, warps 32x64, 4 stages, staged C", dict(bm=64, wm=32, epilogue="smem")),
        ("128x64, warps 64x32, 4 stages, staged C", dict(bn=64, wn=32, epilogue="smem")),
    ),
}


def accuracy(op, dtype: str, n: int = 2048) -> dict:
    """Relative errors of the heuristic's kernel and of cuBLAS (TF32 on, off) on 16-bit-significand inputs."""
    import cupy
    import torch
    from kernelgen.prepared import prepare
    rng = cupy.random.default_rng(5)
    a = (rng.integers(-3, 4, (n, n)) + rng.integers(-2 ** 13, 2 ** 13, (n, n)) * 2.0 ** -14).astype(cupy.float32)
    b = (rng.integers(-3, 4, (n, n)) + rng.integers(-2 ** 13, 2 ** 13, (n, n)) * 2.0 ** -14).astype(cupy.float32)
    a64, b64 = a.astype(cupy.float64), b.astype(cupy.float64)
    ref, scale = a64 @ b64, cupy.abs(a64) @ cupy.abs(b64)
    rel = lambda c: float(cupy.max(cupy.abs(cupy.asarray(c, dtype=cupy.float64) - ref) / scale))
    problem = op.problem({"M": n, "N": n, "K": n}, dtype=dtype)
    prep = prepare(op, op.schedule_for(problem), problem)
    c = cupy.full((n, n), cupy.nan, cupy.float32)
    prep(A=a, B=b, C=c)
    out = dict(dtype=dtype, kernel=prep.kernel.name, kernelgen=rel(c))
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    for flag in (True, False):
        torch.backends.cuda.matmul.allow_tf32 = flag
        out[f"cublas_tf32_{'on' if flag else 'off'}"] = rel(cupy.asarray(torch.matmul(ta, tb)))
    torch.backends.cuda.matmul.allow_tf32 = False
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", type=lambda s: s.split(","), default=["tf32", "tf32x3"])
    ap.add_argument("--best", type=int, default=2, help="variants per dtype timed again at 8192^3")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    a = ap.parse_args()
    from kernelgen import gpu
    from kernelgen.render import render
    op, target = get_op("gemm"), gpu.device()
    out = Path(os.environ.get("OUT", "."))
    rows, acc = [], []
    for dtype in a.dtypes:
        pick = op.knobs_from_schedule(op.schedule_for(op.problem({"M": 4096, "N": 4096, "K": 4096}, dtype=dtype), target))
        variants = [("schedule_for", pick)] + [(label, msp.knobs_of(op, over)) for label, over in VARIANTS[dtype]]
        work = {}
        for _, knobs in variants:
            k = op.kernel(op.schedule_from_knobs(**knobs), target, op.types(dtype))
            work.setdefault(k.name, (render(k), k.arch, k.name))
        errors = dict(map(msp._compile, work.values()))
        msp.time_size(op, target, dtype, 4096, variants, errors, a, rows)
        timed = sorted((r for r in rows if r["dtype"] == dtype and r.get("time_us")), key=lambda r: r["time_us"])
        best = [(r["label"], r["knobs"]) for r in timed[:a.best]]
        msp.time_size(op, target, dtype, 8192, best, errors, a, rows)
        acc.append(accuracy(op, dtype))
        print(acc[-1], flush=True)
    (out / "tf32_probe.json").write_text(json.dumps(dict(rows=rows, accuracy=acc), indent=1, default=str))
    cols = ["size", "dtype", "label", "registers", "spill_bytes", "time_us", "tflops", "cublas_us", "ratio", "valid"]
    lines = [f"# tf32 gemm variants: {target.gpu} ({target.arch}), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
    lines += ["", "accuracy, max |C - A@B| / (|A|@|B|), 2048^3, 16-bit significands:", ""]
    lines += [f"- {r}" for r in acc]
    (out / "tf32_probe.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
