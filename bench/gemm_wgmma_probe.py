"""The wgmma family of the gemm space (sm_90a): block tiles, consumer warpgroups, TMA stages, block
order, warp specialisation; every candidate validated on the GPU, measured, appended to a database.

    PYTHONPATH=. python3 bench/gemm_wgmma_probe.py DB.jsonl [M,N,K] [float16|bfloat16] [all|staged]

`staged`: only the candidates with C staged through shared memory or clusters of 2.
"""
import sys

from kernelgen.ops.gemm import Gemm
from kernelgen.tune import GpuRunner, tune
from kernelgen.tune.db import TuningDB


class Probe(Gemm):
    family = "all"

    def space(self, problem, target):
        for k in super().space(problem, target):
            if k["instr"] == "wgmma" and (self.family == "all" or k["epilogue"] == "smem" or k["cluster"] > 1):
                yield k


if __name__ == "__main__":
    op = Probe()
    op.family = sys.argv[4] if len(sys.argv) > 4 else "all"
    size = sys.argv[2] if len(sys.argv) > 2 else "4096,4096,4096"
    dtype = sys.argv[3] if len(sys.argv) > 3 else "float16"
    problem = op.problem(dict(zip("MNK", map(int, size.split(",")))), dtype=dtype)
    res = tune(op, problem, runner=GpuRunner(reps=10), db=TuningDB(sys.argv[1]), resume=True, progress=False)
    print(f"measured {res.measured} pruned {res.pruned} failures {res.failures}")
    for r in sorted((r for r in TuningDB(sys.argv[1]).records() if r.status == "ok" and r.problem == str(problem)),
                    key=lambda r: r.time_us)[:10]:
        print(f"{r.time_us:9.1f} us  {2 * problem['M'] * problem['N'] * problem['K'] / r.time_us / 1e6:6.1f} TFLOP/s  {r.kernel}")
