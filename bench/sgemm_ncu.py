"""One launch of an SGEMM schedule and one of cuBLAS (torch, TF32 off) on the same inputs, for
Nsight Compute to compare: run it under ncu, e.g.

    ncu --clock-control none -k regex:gemm --set full --csv --page details \
        python3 bench/sgemm_ncu.py 4096,4096,4096 [knob=value ...] > ncu.csv
"""
import sys

import cupy
import torch

from kernelgen.ops import get_op
from kernelgen.timing import prepared

op = get_op("sgemm")
size = sys.argv[1] if len(sys.argv) > 1 else "4096,4096,4096"
problem = op.problem(dict(zip("MNK", map(int, size.split(",")))))
knobs = dict(op.default_knobs())
for kv in sys.argv[2:]:
    k, v = kv.split("=")
    knobs[k] = type(knobs[k])(v) if not isinstance(knobs[k], bool) else v == "True"
kernel, launch, arrays = prepared(op, op.schedule_from_knobs(**knobs), problem)
launch()
torch.backends.cuda.matmul.allow_tf32 = False
a, b = torch.as_tensor(arrays["A"], device="cuda"), torch.as_tensor(arrays["B"], device="cuda")
torch.matmul(a, b)
cupy.cuda.Device().synchronize()
print(kernel.name)
