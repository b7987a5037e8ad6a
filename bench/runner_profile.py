"""Where a tuning runner call goes for one SGEMM candidate: each validation size, the timing (GPU)."""
import time
from kernelgen.ops import get_op
from kernelgen.tune.runners import GpuRunner, validation_problems
from kernelgen.validate import validate
from kernelgen.timing import measure
op = get_op("sgemm"); p = op.problem({"M": 2047, "N": 2049, "K": 1023})
r = GpuRunner()
s = op.default_schedule()
r(op, s, p)  # warm compile
for entries in ("timed", "other"):
    for q in validation_problems(op, s, p, r.limits, entries):
        t = time.perf_counter(); v = validate(op, s, q, backend="gpu"); print(entries, q, f"{(time.perf_counter()-t)*1e3:.1f} ms", v.ok)
t = time.perf_counter(); m = measure(op, s, p, reps=20); print("measure", f"{(time.perf_counter()-t)*1e3:.1f} ms", m.method)
t = time.perf_counter(); r(op, s, p); print("runner call", f"{(time.perf_counter()-t)*1e3:.1f} ms")
import cProfile, pstats
pr = cProfile.Profile(); pr.enable(); r(op, s, p); pr.disable()
pstats.Stats(pr).sort_stats("cumulative").print_stats(25)
