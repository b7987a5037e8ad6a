"""The Hopper attention kernel (algo flash_wgmma) against the mma.sync kernel and torch's SDPA flash (issue 15).

    PYTHONPATH=. python3 bench/attention_wgmma_probe.py          # GPU (sm_90), ~3 minutes; writes
                                                                 # $OUT/attention_wgmma_probe.json and .md
    PYTHONPATH=. python3 bench/attention_wgmma_probe.py --variants "bq=128,bk=128;bq=192,bk=64" --shapes "..."

Per shape (b8 h16 s2048, d64 and d128, causal and not; fp16, and bf16 at d64): schedule_for's pick, the
flash_wgmma variants (--variants: knob changes of the default BASE, each at the shape's dmax) and the
mma.sync kernel's pick (algo flash_mma), each validated on the GPU first at awkward sizes of the shape's
head_dim and causal setting (seq_q != seq_k, neither a tile multiple, a bshd and a packed layout, seq 1)
and then timed (kernelgen.timing, `auto`); then torch SDPA's flash backend in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen import gpu                                  # noqa: E402
from kernelgen.ops import attention_mma, get_op            # noqa: E402
from kernelgen.ops.attention import widths_for             # noqa: E402
from kernelgen.sizes import parse_size                     # noqa: E402
from kernelgen.timing import measure                        # noqa: E402
from kernelgen.validate import validate                    # noqa: E402
from attention_probe import torch_rows, write_shape         # noqa: E402  (bench/, beside this file)

SHAPES = (("batch=8,heads=16,seq=2048,head_dim=64", ("float16", "bfloat16")),
          ("batch=8,heads=16,seq=2048,head_dim=64,causal=1", ("float16",)),
          ("batch=8,heads=16,seq=2048,head_dim=128", ("float16",)),
          ("batch=8,heads=16,seq=2048,head_dim=128,causal=1", ("float16",)))
BASE = dict(algo="flash_wgmma", bq=128, bk=128, stages=2, overlap=True, pingpong=True)
VARIANTS = ("pingpong=False;overlap=False;overlap=False,pingpong=False;bk=64;stages=3;bq=192,bk=64;"
            "bq=192,bk=64,pingpong=False;bq=192,bk=64,overlap=False;bq=192,bk=128,overlap=False;bq=192,bk=64,stages=3;"
            "bq=64,bk=128,pingpong=False")
CHECKS = ("batch=2,heads=3,seq_q=777,seq_k=1000,head_dim={d},causal={c}",
          "batch=1,heads=2,seq_q=150,seq_k=77,head_dim={d},causal={c},layout=bshd",
          "batch=2,heads=2,seq=333,head_dim={d},causal={c},layout=packed",
          "batch=1,heads=1,seq=1,head_dim={d},causal={c}",
          "batch=1,heads=2,seq_q=70,seq_k=300,head_dim={d2},causal={c}")


def knobs_of(text: str) -> dict:
    out = {}
    for part in filter(None, text.split(",")):
        k, v = part.split("=")
        out[k] = {"True": True, "False": False}.get(v, int(v) if v.isdigit() else v)
    return out


def sdpa_flash(problem, dt: str, reps: int) -> float | None:
    """torch SDPA's flash kernel on `problem` in `dt`: median microseconds (attention_probe's timing)."""
    return torch_rows(problem, reps, flash_only=(dt,))[0].get("time_us")


def row_for(op, what: str, knobs: dict, problem, dt: str, reps: int) -> dict:
    sched = op.schedule_from_knobs(**knobs)
    row = {"what": what, "dtype": dt, "schedule": sched.to_python()}
    try:
        checks = []
        d, c = problem["head_dim"], problem["causal"]
        for text in CHECKS:
            small = parse_size(op, text.format(d=d, c=c, d2=d - 24), False, dt)
            v = validate(op, sched, small, backend="gpu")
            checks.append(f"{v.max_rel_err:.1e}" if hasattr(v, "max_rel_err") else v.summary())
            if not v.ok:
                row["note"] = f"INVALID at {small}: {v.summary()}"
                return row
        m = measure(op, sched, problem, reps=reps, timing="auto")
        row.update(kernel=m.kernel, time_us=m.time_us, tflops=m.tflops, valid=f"{len(CHECKS)} sizes ok")
    except Exception as e:  # an illegal variant, or a failure to report
        row["note"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default=VARIANTS, help="knob changes of BASE, K=V,K=V;K=V;...")
    ap.add_argument("--shapes", help="SIZE@TYPE,TYPE;... in place of the issue's shapes")
    args = ap.parse_args()
    gpu.require()
    out = Path(os.environ.get("OUT", "bench_out"))
    out.mkdir(parents=True, exist_ok=True)
    op, reps = get_op("attention"), int(os.environ.get("KG_REPS", "20"))
    shapes = SHAPES if not args.shapes else tuple((s.split("@")[0], tuple(s.split("@")[1].split(",")))
                                                  for s in args.shapes.split(";"))
    doc, md = {"device": gpu.device().gpu, "shapes": []}, [f"# flash_wgmma probe on {gpu.device().gpu}", ""]
    for text, dts in shapes:
        t0, rows = time.time(), []
        for dt in dts:
            problem = parse_size(op, text, False, dt)
            dmax = 64 if problem["head_dim"] <= 64 else 128
            here = gpu.device()
            rows.append(row_for(op, f"schedule_for ({dt})", op.knobs_from_schedule(op.schedule_for(problem, here)), problem,
                                dt, reps))
            mma = attention_mma.pick(problem, here, widths_for(problem["head_dim"])[0])
            rows.append(row_for(op, f"flash_mma pick ({dt})", dict(op.default_knobs(), **mma), problem, dt, reps))
            for change in [""] + args.variants.split(";"):
                knobs = {**op.default_knobs(), **BASE, "dmax": dmax, **knobs_of(change)}
                rows.append(row_for(op, f"wgmma {change or 'base'} ({dt})", knobs, problem, dt, reps))
            flash = sdpa_flash(problem, dt, reps)
            rows.append({"what": f"torch SDPA flash ({dt})", "dtype": dt, "time_us": flash})
            for r in rows:
                if r.get("dtype") == dt and "time_us" in r:
                    r["vs_sdpa_flash"] = flash / r["time_us"]
        write_shape(out, "attention_wgmma_probe", doc, md, text, rows, "vs_sdpa_flash", "vs SDPA flash", time.time() - t0)


if __name__ == "__main__":
    main()
