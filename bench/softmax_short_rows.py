"""Softmax on short rows (8192x128 by default): register-row schedules with different threads per
row, rows per block and vectors per thread, each validated and timed under both methods, with
torch.softmax in the same run. Is the kernel (not the launch) the limit, and which shape wins?

    PYTHONPATH=. python3 bench/softmax_short_rows.py [ROWS COLS]
"""
import sys

import kernelgen as kg
from kernelgen import gpu
from kernelgen.bench import table
from kernelgen.timing import measure, measure_vendor
from kernelgen.validate import validate

rows, cols = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (8192, 128)
op = kg.get_op("softmax")
p = op.problem({"rows": rows, "cols": cols})
heuristic = op.schedule_for(p)
shapes = [(8, 32, 4), (8, 8, 4), (8, 16, 4), (8, 64, 4), (4, 16, 8), (4, 64, 8), (16, 16, 2), (16, 4, 2),
          (32, 8, 1), (32, 4, 1), (32, 2, 1)]
scheds = [("heuristic", heuristic)] + [
    (f"t{t} r{r} i{i}", op.schedule(threads=t, rows_per_block=r, items=i, vec=4, algo="registers"))
    for t, r, i in shapes if t * i * 4 >= cols]
out = []
for method in ("events", "graph"):
    label, v = measure_vendor(op, p, timing=method)
    out.append({"method": method, "schedule": f"vendor: {label}", "us": f"{v.time_us:.2f}",
                "GB/s": f"{v.gbps:.0f}", "spread": f"{v.spread:.0%}", "valid": "-", "timed by": v.method})
    for name, s in scheds:
        ok = validate(op, s, p, backend="gpu").ok
        m = measure(op, s, p, timing=method)
        out.append({"method": method, "schedule": name, "us": f"{m.time_us:.2f}", "GB/s": f"{m.gbps:.0f}",
                    "spread": f"{m.spread:.0%}", "valid": "ok" if ok else "WRONG", "timed by": m.method,
                    "kernel": m.kernel})
dev = gpu.device()
print(f"softmax {p} on {dev.gpu}; heuristic = {op.knobs_from_schedule(heuristic)}")
print(table(out, ["method", "schedule", "us", "GB/s", "spread", "valid", "timed by", "kernel"]))
