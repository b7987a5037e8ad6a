"""bench/mutations.py's main loop over every entry, an entry that no longer applies to the working tree's
templates (another engineer's uncommitted gemm.cu.j2 rewrite) reported as such instead of stopping the run."""
import sys, time
sys.path.insert(0, ".")
import bench.mutations as bm
from kernelgen import get_op
caught = open_ = na = 0
for name, opname, knobs, mutation in bm.MUTATIONS:
    t0 = time.perf_counter()
    try:
        how = bm.isolated(bm.verdict, opname, knobs, mutation, list(get_op(opname).test_problems()))
    except RuntimeError as e:
        na += 1
        print(f"N/A      {name}: {str(e)[:160]}", flush=True)
        continue
    caught += bool(how)
    open_ += not how and name in bm.OPEN
    print(f"{'caught ' if how else 'OPEN   ' if name in bm.OPEN else 'ESCAPED'}  {name}: {how or 'every validation passed'} "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)
n = len(bm.MUTATIONS) - na
print(f"score: {caught}/{n} mutations caught ({100 * caught / max(1, n):.1f}%); {open_} escape(s) known and open; "
      f"{na} not applicable to the working tree's templates")
