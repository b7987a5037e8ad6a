"""Elementwise chains: unfused (one kernel per operator) -> fused -> fused float4 + grid-stride.

    python3 examples/elementwise_ladder.py                       # relu(a * b + c)
    python3 examples/elementwise_ladder.py "gelu(x + bias) * 2.0"  # any expression; bias* = per column

The expression is part of the schedule (annotate("expr", ...)); the op instance for it comes from
`with_expr`, since the inputs are the names the expression uses.
"""
import sys

import kernelgen as kg
from kernelgen import gpu
from kernelgen.emit import write_kernel
from kernelgen.validate import validate



def ladder(expr: str) -> dict:
    def flat(threads=256, items=1, vec=1):
        """i = ((chunk * items + item) * threads + thread) * vec + lane."""
        return (kg.schedule("elementwise").annotate("expr", expr)
                .split("i", items * threads * vec, threads * vec, vec)
                .bind("i.0", "blockIdx.x").bind("i.2", "threadIdx.x").unroll("i.1").vectorize("i.3", vec))

    return {
        "1 unfused, one kernel per op": flat().annotate("fusion", "none"),
        "2 unfused, float4": flat(vec=4).annotate("fusion", "none"),
        "3 fused (one pass)": flat(),
        "4 fused, float4 + scalar tail": flat(vec=4),
        "5 fused, float4, grid-stride": flat(items=2, vec=4).annotate("grid_stride", 8),
    }


LADDER = ladder("relu(a * b + c)")

if __name__ == "__main__":
    op = kg.get_op("elementwise").with_expr(sys.argv[1] if len(sys.argv) > 1 else "relu(a * b + c)")
    LADDER = ladder(op.expr)
    backend = "gpu" if gpu.available() else "emulate"
    problem = op.problem({"M": 1000, "N": 1001} if backend == "gpu" else {"M": 37, "N": 1001})
    print(f"{op.expr}: inputs {', '.join(op.inputs)}")
    for title, sched in LADDER.items():
        kernel = op.kernel(sched)
        path, _ = write_kernel(kernel, "out/elementwise")
        v = validate(op, sched, problem, backend=backend)
        launches = len(op.plan(kernel, problem).launches)
        print(f"{title:32s} {launches} launch(es) {v.summary():60s} {path}")
