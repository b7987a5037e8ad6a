"""Time the attention kernels against torch's SDPA backends on the issue's shapes (issue 15).

    PYTHONPATH=. python3 bench/attention_probe.py            # GPU, ~3-5 minutes: every type; writes
                                                             # $OUT/attention_probe.json and .md
    PYTHONPATH=. python3 bench/attention_probe.py --types float16,bfloat16   # the tensor-core step only

Per shape (b8 h16 s2048 d64 non-causal and causal, d128 both; a d80 shape for the unaligned twins)
and input type: the ladder steps that run in it, schedule_for's pick and a few neighbouring tilings,
each validated against the float64 reference on the GPU and timed the same way (kernelgen.timing,
`auto`); then torch's SDPA in fp32 with the math backend (the unfused products: the issue's fp32
target is >= 2x it) and the memory-efficient backend, and in fp16 / bf16 with the flash backend
(FlashAttention-2: the half-precision target is >= 0.8x it, column `vs SDPA flash`). TF32 is off.
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
from kernelgen.ops import get_op                           # noqa: E402
from kernelgen.timing import measure, time_callable        # noqa: E402
from kernelgen.validate import validate                    # noqa: E402

SHAPES = ("batch=8,heads=16,seq=2048,head_dim=64", "batch=8,heads=16,seq=2048,head_dim=64,causal=1",
          "batch=8,heads=16,seq=2048,head_dim=128", "batch=8,heads=16,seq=2048,head_dim=128,causal=1",
          "batch=4,heads=8,seq=1000,head_dim=80,causal=1")
NEIGHBOURS = (dict(bq=32, rq=4), dict(bq=64, rq=4), dict(bq=128, rq=8), dict(bk=32, rk=2), dict(stages=3),
              dict(bk=128, rk=8))
MMA_NEIGHBOURS = (dict(bq=64, wq=16), dict(bq=128, wq=16), dict(bq=128, wq=32), dict(bk=32), dict(bk=128),
                  dict(stages=3), dict(stages=1, copy="sync"))


def torch_rows(problem, reps: int) -> list[dict]:
    """torch SDPA timings: fp32 math and efficient backends, fp16/bf16 flash."""
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return [{"what": "torch", "note": "torch not installed"}]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    b, h, sq, sk, d = (problem[n] for n in ("batch", "heads", "seq_q", "seq_k", "head_dim"))
    causal = bool(problem["causal"])
    rows = []
    for dtype, backend in ((torch.float32, SDPBackend.MATH), (torch.float32, SDPBackend.EFFICIENT_ATTENTION),
                           (torch.float16, SDPBackend.FLASH_ATTENTION), (torch.bfloat16, SDPBackend.FLASH_ATTENTION)):
        q = torch.randn(b, h, sq, d, device="cuda", dtype=dtype)
        k, v = torch.randn(b, h, sk, d, device="cuda", dtype=dtype), torch.randn(b, h, sk, d, device="cuda", dtype=dtype)

        def run():
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        label = f"torch SDPA {backend.name.lower()} {str(dtype).split('.')[-1]}"
        try:
            t = time_callable(run, reps=reps)
            rows.append({"what": label, "time_us": t.median_us})
        except Exception as e:  # a backend that does not take this shape or type
            rows.append({"what": label, "note": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"})
    return rows


def ours(op, problem, reps: int) -> list[dict]:
    pick = op.schedule_for(problem)
    dt = problem.dtype("Q").name
    scheds = [(f"step {i}: {s.title[:40]}", s.schedule) for i, s in enumerate(op.ladder()) if dt in s.dtypes]
    scheds.append(("schedule_for", pick))
    base = op.knobs_from_schedule(pick)
    for n in (NEIGHBOURS if dt == "float32" else MMA_NEIGHBOURS):
        scheds.append((f"pick + {n}", op.schedule_from_knobs(**dict(base, **n))))
    rows = []
    for what, sched in scheds:
        row = {"what": f"{what} ({problem.dtype('Q').short})", "dtype": dt, "schedule": sched.to_python()}
        try:
            v = validate(op, sched, problem, backend="gpu")
            m = measure(op, sched, problem, reps=reps, timing="auto")
            row.update(kernel=m.kernel, time_us=m.time_us, tflops=m.tflops,
                       valid=v.summary())
        except Exception as e:  # illegal neighbour (shared memory, DMAX), or a failure to report
            row["note"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", default="float32,float16,bfloat16", help="input types of our kernels to time")
    args = ap.parse_args()
    gpu.require()
    out = Path(os.environ.get("OUT", "bench_out"))
    out.mkdir(parents=True, exist_ok=True)
    op = get_op("attention")
    reps = int(os.environ.get("KG_REPS", "20"))
    from kernelgen.sizes import parse_size
    doc, md = {"device": gpu.device().gpu, "shapes": []}, [f"# attention probe on {gpu.device().gpu}", ""]
    for text in SHAPES:
        t0 = time.time()
        rows = []
        for dt in args.types.split(","):
            rows += ours(op, parse_size(op, text, False, dt), reps)
        problem = parse_size(op, text, False)
        rows += torch_rows(problem, reps)
        timed = {r["what"]: r["time_us"] for r in rows if "time_us" in r}
        for r in rows:
            if "time_us" not in r or "dtype" not in r:
                continue
            if r["dtype"] == "float32" and "torch SDPA math float32" in timed:
                r["vs_torch_math_fp32"] = timed["torch SDPA math float32"] / r["time_us"]
            flash = f"torch SDPA flash_attention {r['dtype']}"
            if r["dtype"] != "float32" and flash in timed:
                r["vs_sdpa_flash"] = timed[flash] / r["time_us"]
        doc["shapes"].append({"problem": str(problem), "rows": rows, "seconds": time.time() - t0})
        md += [f"## {problem}", "", "| what | time_us | TFLOP/s | vs torch math fp32 | vs SDPA flash | valid / note |",
               "|---|---|---|---|---|---|"]
        for r in rows:
            md.append(f"| {r['what']} | {r.get('time_us', float('nan')):.1f} | {r.get('tflops', float('nan')):.1f} | "
                      f"{r.get('vs_torch_math_fp32', float('nan')):.2f}x | {r.get('vs_sdpa_flash', float('nan')):.2f}x | "
                      f"{r.get('valid', r.get('note', ''))} |")
        md.append("")
        (out / "attention_probe.json").write_text(json.dumps(doc, indent=1))
        (out / "attention_probe.md").write_text("\n".join(md) + "\n")
        print("\n".join(md[-len(rows) - 4:]), flush=True)


if __name__ == "__main__":
    main()
