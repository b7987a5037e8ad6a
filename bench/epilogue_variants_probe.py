"""Where a fused GEMM epilogue's time goes on the tensor-core gemm: one size, a few epilogues (none, a
scale, a bias, bias + GELU, bias + GELU + residual) under a few schedules (the persistent cooperative
block staging C in passes, the asynchronous epilogue whose spare warps store C, the one-tile block
staging C in its stages, and schedule_for's pick), each validated then timed with kernelgen.timing (events, L2 flushed).

    PYTHONPATH=. python3 bench/epilogue_variants_probe.py [M,N,K] [reps]    # writes $OUT/epilogue_variants.md
"""
import os
import sys

from kernelgen import gpu
from kernelgen.ops import get_op
from kernelgen.ops.gemm import WGMMA_HEURISTIC
from kernelgen.target import target
from kernelgen.timing import measure
from kernelgen.validate import validate

EPILOGUES = (None, "acc * 2", "acc + bias", "gelu(acc + bias)", "gelu(acc + bias) + res")
SCHEDULES = {
    "coop 128x256, 3 stages, C staged in passes": dict(WGMMA_HEURISTIC, stages=3, persistent="coop"),
    "coop 128x192, 3 stages, async store": dict(WGMMA_HEURISTIC, bn=192, wn=192, stages=3, persistent="coop",
                                                epilogue="async"),
    "one tile a block 128x256, 4 stages, C staged in the stages": dict(WGMMA_HEURISTIC),
}


def main():
    gpu.require()
    size = sys.argv[1] if len(sys.argv) > 1 else "4096,4096,4096"
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    sizes = dict(zip("MNK", map(int, size.split(","))))
    op = get_op("gemm")
    lines = [f"fused GEMM epilogues by schedule, {size} fp16, {gpu.device().gpu}; ratio = time / the schedule's plain time", "",
             "| schedule | epilogue | time_us | ratio | valid |", "|---|---|---|---|---|"]
    for label, knobs in dict(SCHEDULES, **{"schedule_for's pick for each epilogue": None}).items():
        plain = None
        for ep in EPILOGUES:
            p = op.problem(sizes, dtype="float16", epilogue=ep)
            o = op.for_problem(p)
            sched = o.schedule_for(p, target("sm_90a")) if knobs is None else o.schedule_from_knobs(**knobs)
            try:
                v = validate(o, sched, p, backend="gpu")
                t = measure(o, sched, p, reps=reps).time_us
            except Exception as e:   # a schedule that cannot take this epilogue is a row too
                lines.append(f"| {label} | `{ep}` | - | - | {type(e).__name__}: {str(e)[:120]} |")
                print(lines[-1], flush=True)
                continue
            plain = plain or t
            lines.append(f"| {label} | `{ep or 'none'}` | {t:.1f} | {t / plain:.3f} | {'ok' if v.ok else 'WRONG'} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "epilogue_variants.md"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
