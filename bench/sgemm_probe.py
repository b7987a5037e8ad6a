"""A focused SGEMM search around the default: the knobs the main sweep held fixed (warp shape,
padding, K unroll, swizzle, bk) for the large-tile family. Appends to a tuning database.

    PYTHONPATH=. python3 bench/sgemm_probe.py DB.jsonl [M,N,K] [wide|default|interior|split|all]
"""
import sys

from kernelgen.ops.sgemm import Sgemm
from kernelgen.tune import GpuRunner, tune
from kernelgen.tune.db import TuningDB


class Probe(Sgemm):
    family = "all"

    def space(self, problem, limits):
        if self.family in ("wide", "all"):
            yield from self.wide_blocks()
        if self.family in ("default", "all"):
            yield from self.around_default()
        if self.family in ("interior", "all"):
            yield from self.interior()
        if self.family in ("split", "all"):
            yield from self.split_k()

    def split_k(self):
        """Slices of K (blockIdx.z, atomics into a zeroed C) for the default tile and the 128x128 one
        that fits two blocks an SM: more, shorter blocks against a ragged last wave."""
        base = self.default_knobs()
        for over in (dict(), dict(bm=128, bn=128)):
            for split_k in (1, 2, 3, 4):
                yield dict(base, **over, split_k=split_k)

    def interior(self):
        """Around the 256x128 default that blocks wholly inside C (no bounds tests) made fastest:
        warp shapes, bk, padding of A's rows, block order."""
        base = self.default_knobs()
        tiles = ((256, 128, 64, 64, 16, 8), (128, 128, 64, 64, 16, 8), (256, 128, 128, 32, 16, 8),
                 (256, 128, 32, 128, 8, 16))
        for bm, bn, wm, wn, tm, tn in tiles:
            for bk in (8, 16):
                for pad_a in (4, 8):
                    for swizzle in (4, 8, 16):
                        yield dict(base, bm=bm, bn=bn, wm=wm, wn=wn, tm=tm, tn=tn, bk=bk, pad_a=pad_a,
                                   swizzle=swizzle)

    def wide_blocks(self):
        """512-thread blocks: 16 warps of 8x8 threads, about 128 registers, so four warps per scheduler."""
        base = self.default_knobs()
        for bm, bn, wm, wn in ((128, 256, 64, 32), (128, 256, 32, 64), (256, 128, 32, 64), (256, 128, 64, 32)):
            for bk in (8, 16):
                for min_blocks in (1,):
                    for stages, copy in ((2, "sync"), (3, "cp_async")):
                        a_layout, vec_a = ("km", 4) if copy == "sync" else ("km", 1)
                        yield dict(base, bm=bm, bn=bn, wm=wm, wn=wn, tm=8, tn=8, bk=bk, stages=stages, copy=copy,
                                   a_layout=a_layout, vec_a=vec_a, min_blocks=min_blocks)

    def around_default(self):
        base = self.default_knobs()
        tiles = ((128, 256, 64, 64, 8, 16), (256, 128, 64, 64, 16, 8), (128, 256, 32, 128, 8, 16),
                 (256, 128, 128, 32, 16, 8))
        for bm, bn, wm, wn, tm, tn in tiles:
            for bk in (8, 16):
                for pad_a in (4, 1):
                    for unroll_k in (0, 4):
                        for swizzle in (8, 16):
                            yield dict(base, bm=bm, bn=bn, wm=wm, wn=wn, tm=tm, tn=tn, bk=bk, pad_a=pad_a,
                                       unroll_k=unroll_k, swizzle=swizzle)


if __name__ == "__main__":
    op = Probe()
    op.family = sys.argv[3] if len(sys.argv) > 3 else "all"
    size = sys.argv[2] if len(sys.argv) > 2 else "4096,4096,4096"
    problem = op.problem(dict(zip("MNK", map(int, size.split(",")))))
    res = tune(op, problem, runner=GpuRunner(reps=10), db=TuningDB(sys.argv[1]), resume=True, progress=False)
    print(f"measured {res.measured} pruned {res.pruned} failures {res.failures}")
    for r in sorted((r for r in TuningDB(sys.argv[1]).records() if r.status == "ok" and r.problem == str(problem)),
                    key=lambda r: r.time_us)[:8]:
        print(f"{r.time_us:9.1f} us  {r.kernel}")
