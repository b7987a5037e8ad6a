"""Time mma.sync variants of the tensor-core gemm against cuBLAS at fp16 and bf16 4096^3, and the best
few at 8192^3, in one GPU call (under 4 minutes): which tile, pipeline depth, fragment buffering
(frag_buffers), register budget (min_blocks) and epilogue (direct or staged through shared memory) the mma.sync ladder step and
schedule_for should take where wgmma is not legal (issue 12).

    PYTHONPATH=. python3 bench/mma_sync_probe.py                  # writes $OUT/mma_sync_probe.{json,md}
    PYTHONPATH=. python3 bench/mma_sync_probe.py --list           # no GPU: variants, registers, spills, blocks/SM
    PYTHONPATH=. python3 bench/mma_sync_probe.py --dtypes float16 --best 2 --reps 10

Every variant is compiled first (NVRTC, in parallel), then per dtype at 4096^3: cuBLAS is timed once,
and each variant is checked once on the GPU against a float64 product (inputs are small integers, so
the check is exact: error in units of half an ulp of the output, <= 1 passes) and timed with
kernelgen.timing (events, L2 flushed, median of --reps). The `--best` fastest valid variants per
dtype are then checked and timed at 8192^3. Results are written after every size, so a run stopped by
the deadline keeps what it measured. Columns: registers and spills (ptxas, the aligned kernel), blocks
per SM (from shared memory, threads and registers), time_us, TFLOP/s, ratio = cuBLAS / kernelgen.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen.ops import get_op                            # noqa: E402

# (label, knobs over the default schedule: 128x128 blocks of four 64x64 warps, bk 32, 4 cp.async stages,
# XOR-swizzled shared tiles, ldmatrix). fb2 = frag_buffers=2, "staged C" = epilogue=smem, "2 blocks/SM" =
# min_blocks=2.
VARIANTS = (
    ("ladder step 4: 128x128x32, 3 stages", dict(stages=3)),
    ("default: 128x128x32, 4 stages", {}),
    ("4 stages, fb2", dict(frag_buffers=2)),
    ("4 stages, staged C", dict(epilogue="smem")),
    ("4 stages, fb2, staged C", dict(frag_buffers=2, epilogue="smem")),
    ("3 stages, fb2", dict(stages=3, frag_buffers=2)),
    ("3 stages, fb2, staged C", dict(stages=3, frag_buffers=2, epilogue="smem")),
    ("4 stages, fb2, staged C, sw8", dict(frag_buffers=2, epilogue="smem", swizzle=8)),
    ("bk64, 3 stages", dict(bk=64, stages=3)),
    ("bk64, 3 stages, fb2, staged C", dict(bk=64, stages=3, frag_buffers=2, epilogue="smem")),
    ("bk64, 3 stages, fb2, staged C, sw8", dict(bk=64, stages=3, frag_buffers=2, epilogue="smem", swizzle=8)),
    ("8 warps 64x32: 128x128x32, 4 stages, fb2, staged C", dict(wn=32, frag_buffers=2, epilogue="smem")),
    ("8 warps 64x32, 2 blocks/SM (128 regs), 4 stages, staged C", dict(wn=32, min_blocks=2, epilogue="smem")),
    ("8 warps 32x64, 2 blocks/SM (128 regs), 4 stages, staged C", dict(wm=32, min_blocks=2, epilogue="smem")),
    ("8 warps 64x32, 2 blocks/SM, bk64, 3 stages, staged C", dict(wn=32, min_blocks=2, bk=64, stages=3,
                                                                   epilogue="smem")),
    ("128x256 (8 warps), 4 stages, sw8 (the earlier default)", dict(bn=256, swizzle=8)),
    ("128x256, 4 stages, fb2, staged C, sw8", dict(bn=256, swizzle=8, frag_buffers=2, epilogue="smem")),
    ("128x256 bk64, 3 stages, fb2, staged C, sw8", dict(bn=256, bk=64, stages=3, swizzle=8, frag_buffers=2,
                                                         epilogue="smem")),
    ("256x128 bk64, 3 stages, sw8 (best 8-warp tile of the search)", dict(bm=256, bk=64, stages=3, swizzle=8)),
    ("256x128 bk64, 3 stages, fb2, staged C, sw8", dict(bm=256, bk=64, stages=3, swizzle=8, frag_buffers=2,
                                                         epilogue="smem")),
    ("256x128 bk64, 4 stages, fb2, staged C, sw8", dict(bm=256, bk=64, stages=4, swizzle=8, frag_buffers=2,
                                                         epilogue="smem")),
    ("256x128 bk32, 4 stages, fb2, staged C, sw8", dict(bm=256, swizzle=8, frag_buffers=2, epilogue="smem")),
    ("bk64, 3 stages, staged C", dict(bk=64, stages=3, epilogue="smem")),
    ("bk64, 4 stages, staged C", dict(bk=64, stages=4, epilogue="smem")),
    ("128x256, 4 stages, staged C, sw8", dict(bn=256, swizzle=8, epilogue="smem")),
    ("128x256 bk64, 3 stages, staged C, sw8", dict(bn=256, bk=64, stages=3, swizzle=8, epilogue="smem")),
    ("256x128 bk64, 3 stages, staged C, sw8", dict(bm=256, bk=64, stages=3, swizzle=8, epilogue="smem")),
    ("4 stages, staged C, sw8", dict(swizzle=8, epilogue="smem")),
    ("3 stages, staged C", dict(stages=3, epilogue="smem")),
    ("persistent, 2 blocks/SM: 4 stages, staged C", dict(epilogue="smem", persistent="coop", min_blocks=2)),
    ("persistent, 2 blocks/SM: 4 stages, direct C", dict(persistent="coop", min_blocks=2)),
    ("persistent, 2 blocks/SM: 4 stages, staged C, sw8", dict(epilogue="smem", persistent="coop", min_blocks=2,
                                                               swizzle=8)),
    ("persistent, 2 blocks/SM: 4 stages, staged C, sw4", dict(epilogue="smem", persistent="coop", min_blocks=2,
                                                               swizzle=4)),
    ("persistent, 2 blocks/SM: 2 stages, staged C", dict(stages=2, epilogue="smem", persistent="coop", min_blocks=2)),
    ("4 stages, staged C, min_blocks 2 (per-tile launches)", dict(epilogue="smem", min_blocks=2)),
    ("256x128 (8 warps), 4 stages, staged C", dict(bm=256, epilogue="smem")),
    ("persistent 256x128 (8 warps, 1 block/SM), 4 stages, staged C", dict(bm=256, epilogue="smem", persistent="coop")),
    ("128x256 (8 warps), 4 stages, staged C", dict(bn=256, epilogue="smem")),
    ("persistent 128x256 (8 warps, 1 block/SM), 4 stages, staged C", dict(bn=256, epilogue="smem", persistent="coop")),
    ("persistent 256x128, 3 stages, staged C", dict(bm=256, stages=3, epilogue="smem", persistent="coop")),
    ("persistent 256x128, 4 stages, staged C, sw8", dict(bm=256, epilogue="smem", persistent="coop", swizzle=8)),
    ("persistent 256x128 bk64, 4 stages, staged C", dict(bm=256, bk=64, epilogue="smem", persistent="coop")),
    ("persistent 256x128 bk64, 2 stages, staged C", dict(bm=256, bk=64, stages=2, epilogue="smem", persistent="coop")),
    ("persistent 128x256 bk64, 4 stages, staged C", dict(bn=256, bk=64, epilogue="smem", persistent="coop")),
    ("persistent 256x128, 4 stages, direct C", dict(bm=256, persistent="coop")),
    ("persistent 256x128 warps 128x32, 4 stages, staged C", dict(bm=256, wm=128, wn=32, epilogue="smem", persistent="coop")),
    ("5 stages, staged C", dict(stages=5, epilogue="smem")),
    ("6 stages, staged C", dict(stages=6, epilogue="smem")),
    ("5 stages, staged C, sw4", dict(stages=5, epilogue="smem", swizzle=4)),
    ("6 stages, staged C, sw4", dict(stages=6, epilogue="smem", swizzle=4)),
    ("4 stages, staged C, sw2", dict(epilogue="smem", swizzle=2)),
    ("4 stages, staged C, sw4", dict(epilogue="smem", swizzle=4)),
    ("4 stages, staged C, sw16", dict(epilogue="smem", swizzle=16)),
    ("persistent, 2 blocks/SM: 5 stages, staged C", dict(stages=5, epilogue="smem", persistent="coop", min_blocks=2)),
    # mma.sync fed by TMA (annotate(copy, tma), bk 64): mbarriers instead of the block barrier, no copy arithmetic
    ("TMA: 128x128x64, 3 stages, staged C", dict(copy="tma", bk=64, stages=3, epilogue="smem")),
    ("TMA: 128x128x64, 2 stages, staged C", dict(copy="tma", bk=64, stages=2, epilogue="smem")),
    ("TMA: 128x128x64, 3 stages, staged C, sw8", dict(copy="tma", bk=64, stages=3, epilogue="smem", swizzle=8)),
    ("TMA: 128x128x64, 3 stages, direct C", dict(copy="tma", bk=64, stages=3)),
    ("TMA: 128x128x64, 4 stages (1 block/SM), staged C", dict(copy="tma", bk=64, stages=4, epilogue="smem")),
    ("TMA: 256x128x64 (8 warps), 4 stages, staged C", dict(copy="tma", bk=64, bm=256, stages=4, epilogue="smem")),
    ("TMA: 256x128x64 (8 warps), 4 stages, staged C, sw8", dict(copy="tma", bk=64, bm=256, stages=4, epilogue="smem",
                                                                 swizzle=8)),
    ("TMA: 128x256x64 (8 warps), 4 stages, staged C, sw8", dict(copy="tma", bk=64, bn=256, stages=4, epilogue="smem",
                                                                 swizzle=8)),
    ("TMA: 256x128x64 (8 warps), 3 stages, staged C", dict(copy="tma", bk=64, bm=256, stages=3, epilogue="smem")),
    ("TMA: 128x128x64 warps 64x32 (8 warps), 3 stages, staged C", dict(copy="tma", bk=64, wn=32, stages=3,
                                                                        epilogue="smem")),
)


def knobs_of(op, over: dict) -> dict:
    return dict(op.default_knobs(), **over)


def blocks_per_sm(op, kernel, regs: int | None, target) -> int:
    """Blocks an SM holds: shared memory (the kernel's own, its types' tiles; 1 KB reserved a block), threads,
    registers (by the warp's 256)."""
    knobs = dict(kernel.knobs)
    nt, smem = op.threads(knobs), kernel.static_smem
    by_regs = target.regs_per_sm // (nt * -(-(regs or kernel.registers_estimate) // 8) * 8)
    return min(target.smem_per_sm // (smem + 1024), target.max_threads_per_sm // nt, by_regs)


def _compile(job):
    from kernelgen.compile import compile_cuda
    from kernelgen.inspect import facts_of
    source, arch, name = job
    try:
        facts = {f.symbol: f for f in facts_of(compile_cuda(source, arch, name))}
        main = facts[name]
        return name, ("", main.registers, main.spill_bytes)
    except Exception as e:                       # recorded per variant, the rest go on
        return name, (f"{type(e).__name__}: {str(e).splitlines()[0][:200]}", None, None)


def compile_all(op, target, dtypes, jobs: int) -> dict[str, tuple]:
    """{kernel name: (error or '', registers, spilled bytes of the aligned kernel)}, each compiled once
    (the disk cache keeps them for the timing)."""
    from kernelgen.render import render
    work = {}
    for dt in dtypes:
        for _, over in VARIANTS:
            k = op.kernel(op.schedule_from_knobs(**knobs_of(op, over)), target, op.types(dt))
            work.setdefault(k.name, (render(k), k.arch, k.name))
    import multiprocessing                       # spawn: the parent may hold a CUDA context
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return dict(pool.map(_compile, work.values()))


def check_output(op, sched, problem, ref) -> tuple[bool, float]:
    """One launch, C poisoned with NaN first; (ok, the worst error in halves of an ulp of C)."""
    import cupy
    from kernelgen import gpu
    from kernelgen.timing import device_sets, launchers
    _, (launch,) = launchers(op, sched, problem, 1)
    c = device_sets(op, problem, 1)[0]["C"]
    c.fill(0xFFFF if c.dtype == cupy.uint16 else math.nan)     # a NaN in fp16, bf16 and fp32
    launch()
    gpu.synchronize_checked("gemm")
    out = problem.dtype("C").decode(c, cupy).astype(cupy.float64)
    diff = cupy.abs(out - ref)
    scale = problem.dtype("C").unit_roundoff * cupy.abs(ref)
    ratio = cupy.where(diff == 0, 0.0, diff / scale)
    err = float(cupy.nan_to_num(ratio, nan=math.inf, posinf=math.inf).max())
    return err <= op.tolerance(problem), err


def time_size(op, target, dtype, n, variants, errors, args, rows, k=None) -> None:
    """Check and time `variants` (label, knobs) at n^3 (n x n x k with `k`) in `dtype`, appending a row each."""
    import cupy
    from kernelgen.timing import device_sets, measure, measure_vendor
    problem = op.problem({"M": n, "N": n, "K": k or n}, dtype=dtype)
    ref = op.reference(device_sets(op, problem, 1)[0], problem, xp=cupy)["C"]
    vendor = measure_vendor(op, problem, reps=args.reps)
    vendor_us = vendor[1].time_us if vendor else None
    for label, knobs in variants:
        sched = op.schedule_from_knobs(**knobs)
        kernel = op.kernel(sched, target, op.types(dtype))
        name = kernel.name
        error, regs, spills = errors.get(name, ("", None, None))
        row = dict(size=f"{n}x{n}x{k}" if k else f"{n}^3", dtype=dtype, label=label, kernel=name, registers=regs, spill_bytes=spills,
                   blocks_per_sm=blocks_per_sm(op, kernel, regs, target), cublas_us=vendor_us,
                   vendor=vendor[0] if vendor else None, knobs=knobs)
        try:
            if error:
                raise RuntimeError(error)
            row["valid"], row["max_error"] = check_output(op, sched, problem, ref)
            m = measure(op, sched, problem, reps=args.reps)
            row.update(time_us=round(m.time_us, 2), tflops=round(m.tflops, 1),
                       ratio=round(vendor_us / m.time_us, 3) if vendor_us else None)
        except Exception as e:   # a failure is a row, the probe goes on
            row.update(valid=False, time_us=None, ratio=None, failure=f"{type(e).__name__}: {str(e)[:200]}")
        rows.append(row)
        print(f"{row['size']:>7} {dtype:<9} {label:<58} regs {regs} spill {spills} blocks/SM {row['blocks_per_sm']}  "
              f"time {row.get('time_us')} us  cuBLAS {vendor_us and round(vendor_us, 1)} us  ratio {row.get('ratio')}  "
              f"valid {row['valid']}", flush=True)
    del ref
    cupy.get_default_memory_pool().free_all_blocks()


def run(args) -> int:
    from kernelgen import gpu
    op = get_op("gemm")
    target = gpu.device()
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    errors = compile_all(op, target, args.dtypes, args.jobs)
    print(f"compiled {len(errors)} kernels in {time.time() - start:.0f} s "
          f"({sum(bool(e[0]) for e in errors.values())} failed)", flush=True)
    rows, skipped = [], []
    variants = [(label, knobs_of(op, over)) for label, over in VARIANTS]
    for dtype in args.dtypes:
        if time.time() - start > args.deadline:
            skipped.append(f"{dtype} 4096^3")
            continue
        time_size(op, target, dtype, 4096, variants, errors, args, rows)
        write(out, rows, skipped, target, args)
    for dtype in args.dtypes:
        ok = sorted((r for r in rows if r["dtype"] == dtype and r["valid"] and r["size"] == "4096^3"),
                    key=lambda r: r["time_us"])
        best = [(r["label"], r["knobs"]) for r in ok[:args.best]]
        if not best or time.time() - start > args.deadline:
            skipped.append(f"{dtype} 8192^3")
            continue
        time_size(op, target, dtype, 8192, best, errors, args, rows)
        write(out, rows, skipped, target, args)
    for dtype in args.dtypes:
        for k in args.k:   # the fixed cost a launch: every variant at 4096 x 4096 x k
            if time.time() - start > args.deadline:
                skipped.append(f"{dtype} 4096x4096x{k}")
                continue
            time_size(op, target, dtype, 4096, variants, errors, args, rows, k=k)
            write(out, rows, skipped, target, args)
    write(out, rows, skipped, target, args)
    print(f"done in {time.time() - start:.0f} s; {out}/mma_sync_probe.md", flush=True)
    return 0 if all(r["valid"] for r in rows) else 1


def write(out: Path, rows, skipped, target, args) -> None:
    meta = dict(gpu=target.gpu, arch=target.arch, sms=target.sms, timing="events", reps=args.reps,
                date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), skipped=skipped)
    (out / "mma_sync_probe.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    lines = [f"# mma.sync gemm variants: {target.gpu} ({target.arch}, {target.sms} SMs), {meta['date']}", "",
             f"timing: events, L2 flushed, median of {args.reps}; ratio = cuBLAS / kernelgen; fb2 = frag_buffers=2, "
             "staged C = epilogue=smem", ""]
    cols = ["size", "dtype", "label", "registers", "spill_bytes", "blocks_per_sm", "time_us", "tflops", "cublas_us",
            "ratio", "valid", "kernel"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r.get(c) for c in cols]
        cells = [f"{v:.1f}" if isinstance(v, float) and c.endswith("_us") else v for c, v in zip(cols, cells)]
        lines.append("| " + " | ".join("" if v is None else str(v) for v in cells) + " |"
                     + (f" {r['failure']}" if r.get("failure") else ""))
    if skipped:
        lines += ["", f"skipped (deadline): {', '.join(skipped)}"]
    (out / "mma_sync_probe.md").write_text("\n".join(lines) + "\n")


def listing(args) -> int:
    """The variants as compiled for sm_90a (no GPU): name, registers, spills, shared bytes, blocks/SM."""
    from kernelgen.target import target
    op = get_op("gemm")
    tgt = target("sm_90a")
    errors = compile_all(op, tgt, args.dtypes[:1], args.jobs)
    for label, over in VARIANTS:
        knobs = knobs_of(op, over)
        kernel = op.kernel(op.schedule_from_knobs(**knobs), tgt, op.types(args.dtypes[0]))
        error, regs, spills = errors[kernel.name]
        print(f"{label:<58} regs {regs} spill {spills} smem {kernel.static_smem} "
              f"blocks/SM {blocks_per_sm(op, kernel, regs, tgt)} {error or kernel.name}")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", type=lambda s: s.split(","), default=["float16", "bfloat16"])
    ap.add_argument("--best", type=int, default=3, help="variants per dtype timed again at 8192^3")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--k", type=lambda s: [int(i) for i in s.split(",")], default=[],
                    help="K values timed at M = N = 4096 after the cubes, every variant (e.g. 1024,2048)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel NVRTC compiles")
    ap.add_argument("--deadline", type=float, default=200.0, help="seconds after which no new size starts")
    ap.add_argument("--list", action="store_true", help="print the variants as compiled, no GPU")
    ap.add_argument("--only", type=lambda s: [int(i) for i in s.split(",")],
                    help="the variants to run, by their 0-based index in VARIANTS (e.g. 3,4,16)")
    a = ap.parse_args()
    if a.only:
        VARIANTS = tuple(VARIANTS[i] for i in a.only)
    sys.exit(listing(a) if a.list else run(a))
