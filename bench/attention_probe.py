"""Time the attention kernels against torch's SDPA backends on the issue's shapes (issue 15).

    PYTHONPATH=. python3 bench/attention_probe.py            # GPU, ~3-5 minutes: every type; writes
                                                             # $OUT/attention_probe.json and .md
    PYTHONPATH=. python3 bench/attention_probe.py --types float16,bfloat16   # the tensor-core steps only
    PYTHONPATH=. python3 bench/attention_probe.py --mma      # the tensor-core kernel's variants, < 5 minutes
    PYTHONPATH=. python3 bench/attention_probe.py --tf32x3   # fp32 data in 3xTF32 against torch's fp32 SDPA
    PYTHONPATH=. python3 bench/attention_probe.py --types float32 --shapes "batch=1,heads=32,seq=2048,head_dim=128,causal=1"

Per shape (b8 h16 s2048 d64 non-causal and causal, d128 both; a d80 shape for the unaligned twins)
and input type: the ladder steps that run in it, schedule_for's pick and a few neighbouring tilings,
each validated against the float64 reference on the GPU and timed the same way (kernelgen.timing,
`auto`); then torch's SDPA in fp32 with the math backend (the unfused products: the issue's fp32
target is >= 2x it) and the memory-efficient backend, and in fp16 / bf16 with the flash backend
(FlashAttention-2: the half-precision target is >= 0.8x it, column `vs SDPA flash`). TF32 is off.

--mma: the tensor-core kernel only, on b8 h16 s2048 d64 (fp16 and bf16), d64 causal, d128 and d128
causal (fp16): the previous pick (2026-11-23: 656 us at d64, 0.70x SDPA flash), schedule_for's pick and
its one-knob neighbours (MMA_VARIANTS: K/V pipeline, stages, Q in shared memory, O's store, lazy
rescaling, key tile, 8 warps at 2 blocks an SM), against SDPA flash. Every kernel is compiled first in
parallel (the compile cache), and each is validated on the GPU at an awkward mid-size problem of its
causal setting (b2 h3 seq_q 777 seq_k 1000; the picks also at the timed shape) before it is timed.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen import gpu                                  # noqa: E402
from kernelgen.ops import get_op                           # noqa: E402
from kernelgen.ops.attention import widths_for             # noqa: E402
from kernelgen.timing import measure, time_callable        # noqa: E402
from kernelgen.validate import validate                    # noqa: E402

SHAPES = ("batch=8,heads=16,seq=2048,head_dim=64", "batch=8,heads=16,seq=2048,head_dim=64,causal=1",
          "batch=8,heads=16,seq=2048,head_dim=128", "batch=8,heads=16,seq=2048,head_dim=128,causal=1",
          "batch=4,heads=8,seq=1000,head_dim=80,causal=1")
NEIGHBOURS = (dict(bq=32, rq=4), dict(bq=64, rq=4), dict(bq=128, rq=8), dict(bk=32, rk=2), dict(stages=3),
              dict(bk=128, rk=8), dict(bk=32, rk=2, stages=3), dict(stages=1, copy="sync"),
              dict(bq=128, rq=8, stages=1, copy="sync"))
MMA_NEIGHBOURS = (dict(bq=64, wq=16), dict(bq=128, wq=16), dict(bq=128, wq=32), dict(bk=32), dict(bk=128),
                  dict(stages=3), dict(stages=1, copy="sync"))
# --mma: the shapes and the types each is timed in
MMA_SHAPES = (("batch=8,heads=16,seq=2048,head_dim=64", ("float16", "bfloat16")),
              ("batch=8,heads=16,seq=2048,head_dim=64,causal=1", ("float16",)),
              ("batch=8,heads=16,seq=2048,head_dim=128", ("float16",)),
              ("batch=8,heads=16,seq=2048,head_dim=128,causal=1", ("float16",)))
# the pick of 2026-11-23 (the one timed at 0.70x SDPA flash), by dmax; the old knobs' values are the defaults
PREVIOUS = {64: dict(algo="flash_mma", bq=128, wq=32, bk=64, dmax=64, stages=2, copy="cp_async"),
            128: dict(algo="flash_mma", bq=128, wq=16, bk=64, dmax=128, stages=2, copy="cp_async")}
# one-knob changes of schedule_for's pick (those illegal for a shape are reported, not timed)
MMA_VARIANTS = (dict(pipe="joint"), dict(stages=1), dict(stages=3), dict(qreg=False), dict(qreg=True),
                dict(epilogue="direct"), dict(rescale="lazy"), dict(bk=32), dict(bk=64), dict(bk=128),
                dict(wq=16, qreg=False, min_blocks=2), dict(wq=16, bk=64, qreg=True),
                dict(bq=64, wq=16, bk=64, qreg=False, min_blocks=4), dict(rescale="lazy", stages=1))
VALIDATE_AT = "batch=2,heads=3,seq_q=777,seq_k=1000,head_dim={d},causal={c}"
# --tf32x3: fp32 data on tensor cores (3xTF32) at the transformer blocks' attention (7B, GPT-2 small: q, k, v read from
# the packed projection) and b8 h16 s2048 d64, against torch's fp32 kernels and kernelgen's fp32 CUDA-core pick
X3_SHAPES = ("batch=1,heads=32,seq=2048,head_dim=128,causal=1,layout=packed",
             "batch=8,heads=12,seq=1024,head_dim=64,causal=1,layout=packed", "batch=8,heads=16,seq=2048,head_dim=64")
# the tiles whose registers fit (ops/attention_mma.py registers), each with 64 and 128 queries and min_blocks 0 and 1;
# one-knob changes of the pick
X3_TILES = {128: (dict(wq=16, bk=32, qreg=False),),
            64: (dict(wq=16, bk=32, qreg=False), dict(wq=16, bk=64, qreg=False), dict(wq=16, bk=32, qreg=True))}
X3_BLOCKS = (dict(bq=64), dict(bq=128), dict(bq=64, min_blocks=1), dict(bq=128, min_blocks=1))
X3_CHANGES = (dict(stages=3), dict(pipe="split", stages=2), dict(rescale="lazy"), dict(order="queries"),
              dict(split="fma"), dict(split="mixed"), dict(bq=64, stages=1, pipe="split", min_blocks=0),
              dict(bq=64, stages=1, pipe="split", min_blocks=0, split="mixed"))


def torch_rows(problem, reps: int, flash_only: tuple[str, ...] = ()) -> list[dict]:
    """torch SDPA timings: fp32 math and efficient backends, fp16/bf16 flash (flash_only: only flash, in
    those types)."""
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
    runs = ((torch.float32, SDPBackend.MATH), (torch.float32, SDPBackend.EFFICIENT_ATTENTION),
            (torch.float16, SDPBackend.FLASH_ATTENTION), (torch.bfloat16, SDPBackend.FLASH_ATTENTION))
    if flash_only:
        runs = tuple((d, b) for d, b in runs if b == SDPBackend.FLASH_ATTENTION and str(d).split(".")[-1] in flash_only)
    for dtype, backend in runs:
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


def mma_schedules(op, problem) -> list[tuple[str, dict]]:
    """--mma's rows for a problem: the previous pick, schedule_for's and its one-knob neighbours (deduplicated)."""
    pick = op.knobs_from_schedule(op.schedule_for(problem))
    rows = [("previous pick (2026-11-23)", dict(op.default_knobs(), **PREVIOUS[pick["dmax"]])), ("schedule_for", pick)]
    for change in MMA_VARIANTS:
        k = dict(pick, **change)
        if all(k != r for _, r in rows):
            rows.append((f"pick + {change}", k))
    return rows


def _compile_one(args) -> str:
    """Render and compile one kernel into the disk cache (a worker process of precompile)."""
    knobs, dt = args
    from kernelgen import render
    from kernelgen.compile import compile_cuda
    from kernelgen.target import default_target
    op = get_op("attention")
    try:
        k = op.kernel(op.schedule_from_knobs(**knobs), default_target(), op.types(dt))
        compile_cuda(render(k), default_target().arch, k.name)
        return ""
    except Exception as e:  # an illegal variant: reported when its row is timed
        return f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"


def precompile(jobs: list[tuple[dict, str]]) -> None:
    """Fill the compile cache with every kernel of the run, on all cores (NVRTC runs a kernel a core)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    t0 = time.time()
    unique = list({json.dumps(j, sort_keys=True): j for j in jobs}.values())
    # spawn: the parent holds a CUDA context, which forked children must not inherit
    with ProcessPoolExecutor(max_workers=min(16, os.cpu_count() or 1), mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile_one, unique))
    print(f"compiled {len(unique)} kernels in {time.time() - t0:.0f} s", flush=True)


def write_shape(out: Path, stem: str, doc: dict, md: list, title: str, rows: list, key: str, label: str,
                seconds: float) -> None:
    """One shape's rows appended to `doc` and `md` (a table: time, TFLOP/s, the ratio r[key] headed `label`, kernel,
    validation or note), both written to out/stem.json and .md, the table printed."""
    doc["shapes"].append({"problem": title, "rows": rows, "seconds": seconds})
    md += [f"## {title}", "", f"| what | time_us | TFLOP/s | {label} | kernel | valid / note |", "|---|---|---|---|---|---|"]
    md += [f"| {r['what']} | {r.get('time_us', float('nan')):.1f} | {r.get('tflops', float('nan')):.1f} | "
           f"{r.get(key, float('nan')):.2f}x | {r.get('kernel', '')} | {r.get('valid', r.get('note', ''))} |" for r in rows]
    md.append("")
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1))
    (out / f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md[-len(rows) - 4:]), flush=True)


def timed_row(op, sched, problem, reps: int, full: bool) -> dict:
    """A kernel validated at an awkward mid-size problem of its causal setting (and at `problem` too where `full`),
    then timed at `problem`: kernel, time_us, tflops and the validation, or a note (an illegal variant, a failure)."""
    from kernelgen.sizes import parse_size
    try:
        dt = problem.dtype("Q").name
        v = validate(op, sched, parse_size(op, VALIDATE_AT.format(d=problem["head_dim"], c=problem["causal"]), False,
                                           dt), backend="gpu")
        if v.ok and full:
            v = validate(op, sched, problem, backend="gpu")
        m = measure(op, sched, problem, reps=reps, timing="auto")
        return dict(kernel=m.kernel, time_us=m.time_us, tflops=m.tflops, valid=v.summary())
    except Exception as e:  # an illegal variant, or a failure to report
        return dict(note=f"{type(e).__name__}: {str(e).splitlines()[0][:160]}")


def mma_main(op, out: Path, reps: int) -> None:
    from kernelgen.sizes import parse_size
    plan = [(text, dt, parse_size(op, text, False, dt)) for text, dts in MMA_SHAPES for dt in dts]
    rows_of = {(text, dt): mma_schedules(op, p) for text, dt, p in plan}
    precompile([(k, dt) for (text, dt), rows in rows_of.items() for _, k in rows])
    doc, md = {"device": gpu.device().gpu, "shapes": []}, [f"# attention probe (--mma) on {gpu.device().gpu}", ""]
    for text, dts in MMA_SHAPES:
        t0, rows = time.time(), []
        for dt in dts:
            problem = parse_size(op, text, False, dt)
            for what, knobs in rows_of[(text, dt)]:
                sched = op.schedule_from_knobs(**knobs)
                rows.append({"what": f"{what} ({problem.dtype('Q').short})", "dtype": dt, "schedule": sched.to_python(),
                             **timed_row(op, sched, problem, reps, what in ("schedule_for", "previous pick (2026-11-23)"))})
        rows += [r for r in torch_rows(parse_size(op, text, False), reps, flash_only=dts)]
        timed = {r["what"]: r["time_us"] for r in rows if "time_us" in r}
        for r in rows:
            flash = f"torch SDPA flash_attention {r.get('dtype')}"
            if "dtype" in r and "time_us" in r and flash in timed:
                r["vs_sdpa_flash"] = timed[flash] / r["time_us"]
        write_shape(out, "attention_probe", doc, md, str(parse_size(op, text, False)), rows, "vs_sdpa_flash",
                    "vs SDPA flash", time.time() - t0)


def x3_main(op, out: Path, reps: int, shapes: tuple[str, ...] = X3_SHAPES) -> None:
    """--tf32x3: schedule_for's pick and the fitting tiles' one-knob neighbours, validated at an awkward size (the
    picks also at the timed shape), against torch SDPA's fp32 efficient (3xTF32) and math kernels."""
    from kernelgen.sizes import parse_size
    base = dict(algo="flash_mma", stages=2, copy="cp_async", epilogue="direct")
    rows_of = {}
    for text in shapes:
        p = parse_size(op, text, False, "tf32x3")
        pick = op.knobs_from_schedule(op.schedule_for(p))
        rows = [("schedule_for", pick)]
        tiles = X3_TILES[widths_for(p["head_dim"])[0]]
        for tile, change in [*itertools.product(tiles, X3_BLOCKS), *((pick, c) for c in X3_CHANGES)]:
            k = {**op.default_knobs(), **base, "dmax": pick["dmax"], **tile, **change}
            if all(k != r for _, r in rows):
                rows.append((f"{'pick' if tile is pick else tile} + {change}", k))
        rows_of[text] = rows
    precompile([(k, "tf32x3") for rows in rows_of.values() for _, k in rows])
    doc, md = {"device": gpu.device().gpu, "shapes": []}, [f"# attention probe (--tf32x3) on {gpu.device().gpu}", ""]
    for text in shapes:
        t0, rows = time.time(), []
        p32 = parse_size(op, text, False, "float32")
        m = measure(op, op.schedule_for(p32), p32, reps=reps, timing="auto")
        rows.append({"what": "float32 schedule_for (CUDA cores)", "time_us": m.time_us, "kernel": m.kernel})
        for what, knobs in rows_of[text]:
            problem = parse_size(op, text, False, "tf32x3")
            sched = op.schedule_from_knobs(**knobs)
            rows.append({"what": f"{what} (tf32x3)", "schedule": sched.to_python(),
                         **timed_row(op, sched, problem, reps, what == "schedule_for")})
        rows += [r for r in torch_rows(p32, reps) if "float32" in r["what"]]
        timed = {r["what"]: r["time_us"] for r in rows if "time_us" in r}
        eff = timed.get("torch SDPA efficient_attention float32")
        for r in rows:
            if eff and "time_us" in r:
                r["vs_sdpa_efficient"] = eff / r["time_us"]
        write_shape(out, "attention_probe_x3", doc, md, text, rows, "vs_sdpa_efficient", "vs SDPA efficient fp32",
                    time.time() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", default="float32,float16,bfloat16", help="input types of our kernels to time")
    ap.add_argument("--mma", action="store_true", help="the tensor-core kernel's variants against SDPA flash")
    ap.add_argument("--shapes", help="SIZE;SIZE;... (as --size takes them) in place of the issue's shapes")
    ap.add_argument("--tf32x3", action="store_true", help="fp32 data on tensor cores (3xTF32) against torch's fp32 SDPA")
    args = ap.parse_args()
    gpu.require()
    out = Path(os.environ.get("OUT", "bench_out"))
    out.mkdir(parents=True, exist_ok=True)
    op = get_op("attention")
    reps = int(os.environ.get("KG_REPS", "20"))
    if args.mma:
        return mma_main(op, out, reps)
    if args.tf32x3:
        return x3_main(op, out, reps, tuple(args.shapes.split(";")) if args.shapes else X3_SHAPES)
    from kernelgen.sizes import parse_size
    doc, md = {"device": gpu.device().gpu, "shapes": []}, [f"# attention probe on {gpu.device().gpu}", ""]
    for text in (args.shapes.split(";") if args.shapes else SHAPES):
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
