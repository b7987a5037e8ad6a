"""A GEMM with a fused bias + GELU epilogue against the same schedule's plain GEMM (issue 15's target:
the fused one costs <= 1.05x the plain one), on the GPU: sgemm fp32 and the tensor-core gemm in fp16
and bf16 (wgmma on sm_90a) and on fp32 data on the fp64 tensor cores (dmma), each validated first, then timed with
the suite's method.

    PYTHONPATH=. python3 bench/epilogue_probe.py [M,N,K[:LAYOUT]] [reps] [OPS]   # OPS: sgemm,gemm or op:dtype
                                                                                  # (gemm:dmma); default all

Writes a markdown table to stdout and to $OUT/epilogue_probe.md (when OUT is set).
"""
import os
import sys

from kernelgen import gpu
from kernelgen.ops import get_op
from kernelgen.timing import measure
from kernelgen.validate import validate

CASES = (("sgemm", None), ("gemm", "float16"), ("gemm", "bfloat16"), ("gemm", "dmma"))
EPILOGUES = ("gelu(acc + bias)", "gelu_erf(acc + bias) + res")


def row(name, dtype, sizes, epilogue, reps, layout="NN"):
    op = get_op(name)
    plain = op.problem(sizes, dtype=dtype, layout=layout)
    fused = op.problem(sizes, dtype=dtype, epilogue=epilogue, layout=layout)
    # The fused problem's pick runs the plain one too (the other way round it may not: a fused epilogue
    # stages C as fp32, which a persistent block's 4 stages leave no room for).
    sched = op.for_problem(fused).schedule_for(fused, gpu.device())
    out = []
    for p in (plain, fused):
        v = validate(op, sched, p, backend="gpu")
        if not v.ok:
            raise SystemExit(f"{p}: {v.summary()}")
        out.append(measure(op, sched, p, reps=reps))
    ratio = out[1].time_us / out[0].time_us
    return (f"| {name} | {dtype or 'float32'} | `{epilogue}` | {out[0].time_us:.1f} | {out[1].time_us:.1f} | "
            f"{ratio:.3f} | {'yes' if ratio <= 1.05 else 'NO'} | `{out[1].kernel}` |")


def main():
    gpu.require()
    size, _, layout = (sys.argv[1] if len(sys.argv) > 1 else "4096,4096,4096").partition(":")
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    ops = sys.argv[3].split(",") if len(sys.argv) > 3 else ("sgemm", "gemm")
    wanted = [c for c in CASES if c[0] in ops or f"{c[0]}:{c[1]}" in ops]
    sizes = dict(zip("MNK", map(int, size.split(","))))
    lines = [f"GEMM + fused epilogue vs plain GEMM, same schedule (schedule_for of the fused problem), {size} {layout or 'NN'}, {gpu.device().gpu}", "",
             "| op | dtype | epilogue | plain us | fused us | fused/plain | <= 1.05 | fused kernel |",
             "|---|---|---|---|---|---|---|---|"]
    for name, dtype in wanted:
        for ep in EPILOGUES:
            lines.append(row(name, dtype, sizes, ep, reps, layout or "NN"))
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "epilogue_probe.md"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
