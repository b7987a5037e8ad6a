"""Time candidate conv2d schedules beside the cost model's estimates (kernelgen/ops/conv2d_model.py),
on shapes that are in no benchmark list, so the model's constants (`COST`) can be calibrated.

    PYTHONPATH=. python3 bench/conv2d_probe.py                   # GPU, one call, < 4 minutes: writes
                                                                 # $OUT/conv2d_probe.json and $OUT/conv2d_probe.md
    PYTHONPATH=. python3 bench/conv2d_probe.py --fit FILE.json   # no GPU: refit COST to a probe's timings

Per shape: cuDNN (TF32 off) and, each validated against the float64 reference on the GPU and timed
the same way (kernelgen.timing, `auto`), schedule_for's pick, the default schedule, the model's next
best tilings and each tile family's best. Kernels are compiled first in parallel (the disk cache
serves the timing loop); the loop stops starting shapes when --budget-s has passed.
"""
from __future__ import annotations

import argparse
import concurrent.futures as futures
import dataclasses
import json
import math
import multiprocessing
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen.ops import get_op                                         # noqa: E402
from kernelgen.ops import conv2d_model as model                          # noqa: E402
from kernelgen.target import target as target_of                         # noqa: E402

# Representative layers, none of them DeepBench's exact rows: a ResNet-ish 3x3 stage at 56..7 pixels
# (64..512 channels, batch 16, and batch 1 at 7x7), 1x1 layers, a strided 7x7 stem, wide-filter audio
# layers with strides and padding that differ between h and w, a dilated layer, and the benchmark shape.
SHAPES = (
    ("3x3 56^2 64", dict(N=16, C=64, H=56, W=56, K=64, pad=1)),
    ("3x3 28^2 128", dict(N=16, C=128, H=28, W=28, K=128, pad=1)),
    ("3x3 14^2 256", dict(N=16, C=256, H=14, W=14, K=256, pad=1)),
    ("3x3 7^2 512", dict(N=16, C=512, H=7, W=7, K=512, pad=1)),
    ("3x3 7^2 512 N1", dict(N=1, C=512, H=7, W=7, K=384, pad=1)),
    ("1x1 28^2 256->512", dict(N=16, C=256, H=28, W=28, K=512, R=1, S=1, pad=0)),
    ("1x1 14^2 1024->256 N4", dict(N=4, C=1024, H=14, W=14, K=256, R=1, S=1, pad=0)),
    ("7x7/2 stem", dict(N=16, C=3, H=224, W=224, K=64, R=7, S=7, stride=2, pad=3)),
    ("audio 16x7 /4x2", dict(N=8, C=1, H=128, W=600, K=32, R=16, S=7, stride_h=4, stride_w=2, pad_h=0, pad_w=3)),
    ("audio 9x5 /2x1", dict(N=8, C=32, H=57, W=297, K=64, R=9, S=5, stride_h=2, stride_w=1, pad_h=4, pad_w=2)),
    ("3x3 dil2 28^2", dict(N=8, C=128, H=28, W=28, K=128, pad=2, dil=2)),
    ("3x3 128^2 (bench)", dict(N=32, C=64, H=128, W=128, K=128, pad=1)),
)
TOP = 5          # the model's best tilings timed per shape (besides the pick, the default and each family's best)
KEYS = ("bm", "bn", "bk", "tm", "tn", "min_blocks", "split_k")


def tiling(k: dict) -> str:
    return f"{k['bm']}x{k['bn']}x{k['bk']} {k['tm']}x{k['tn']} mb{k['min_blocks']} sk{k['split_k']}"


def candidates(op, problem, tgt) -> list[tuple[str, dict]]:
    """(role, knobs) per tiling to time: the pick, the default, the model's next best, each family's best."""
    d = problem.as_dict()
    timed = [(model.estimate(op, k, d, tgt), k) for k in model.candidates(op, d, tgt)]
    ranked = [k for t, k in sorted(timed, key=lambda tk: tk[0]) if t < math.inf]      # legal tilings, best first
    out: dict[tuple, tuple[str, dict]] = {}

    def add(role, k):
        key = tuple(k[x] for x in KEYS)
        out[key] = (out[key][0] + "+" + role, k) if key in out else (role, k)

    for role, k in [("pick", model.pick(op, d, tgt)), ("default", op.default_knobs())] + \
            [(f"top{i + 2}", k) for i, k in enumerate(ranked[1:TOP + 1])]:
        add(role, k)
    for fam in model.FAMILIES:
        best = next((k for k in ranked if (k["bm"], k["bn"], k["tm"], k["tn"], k["min_blocks"]) == fam[:5]), None)
        if best and tuple(best[x] for x in KEYS) not in out:
            add("family", best)
    return list(out.values())


def has(c: dict, role: str) -> bool:
    return role in c["role"].split("+")


def _compile(args) -> str:
    knobs, tgt = args
    from kernelgen.compile import compile_cuda
    from kernelgen.render import render
    op = get_op("conv2d")
    kern = op.kernel(op.schedule_from_knobs(**knobs), tgt)
    compile_cuda(render(kern), kern.arch, kern.name)
    return kern.name


def precompile(jobs: list[dict], tgt) -> None:
    with futures.ProcessPoolExecutor(max_workers=os.cpu_count(), mp_context=multiprocessing.get_context("spawn")) as ex:
        list(ex.map(_compile, [(k, tgt) for k in jobs]))


def probe(out_dir: Path, budget_s: float, reps: int) -> dict:
    import numpy as np
    from kernelgen import gpu
    from kernelgen.prepared import prepare
    from kernelgen.timing import measure, measure_vendor
    from kernelgen.validate import execute
    op, tgt, t0 = get_op("conv2d"), gpu.device(), time.time()
    plans = [(label, op.problem(sizes)) for label, sizes in SHAPES]
    cands = {label: candidates(op, p, tgt) for label, p in plans}
    precompile([k for c in cands.values() for _, k in c], tgt)
    print(f"compiled {sum(map(len, cands.values()))} kernels in {time.time() - t0:.0f} s", flush=True)
    rows = []
    for label, p in plans:
        if time.time() - t0 > budget_s:
            print(f"budget of {budget_s:.0f} s spent: {label} and later shapes left out", flush=True)
            break
        inputs = op.make_inputs(p, np.random.default_rng(0))
        ref = op.reference(inputs, p)["y"]
        vendor = measure_vendor(op, p, reps=reps, timing="auto")
        row = dict(label=label, problem=str(p), sizes=p.as_dict(), flops=op.flops(p),
                   vendor=vendor[0] if vendor else None, vendor_us=vendor[1].time_us if vendor else None, candidates=[])
        for role, k in cands[label]:
            sched = op.schedule_from_knobs(**k)
            c = dict(role=role, knobs={x: k[x] for x in KEYS}, tiling=tiling(k),
                     predicted_us=model.estimate(op, k, p.as_dict(), tgt) * 1e6)
            try:
                out = execute(prepare(op, sched, p, tgt), inputs, "gpu")["y"]
                c["error"] = op.error("y", out, ref, inputs, p)
                c["ok"] = c["error"] <= op.tolerance(p)
                m = measure(op, sched, p, reps=reps, timing="auto")
                c.update(kernel=m.kernel, measured_us=m.time_us, spread=m.spread, method=m.method)
            except Exception as e:          # a candidate that fails is data, not the end of the probe
                c.update(ok=False, detail=f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            row["candidates"].append(c)
        rows.append(row)
        best = min((c for c in row["candidates"] if c.get("ok")), key=lambda c: c["measured_us"], default=None)
        print(f"{label:24s} cuDNN {row['vendor_us'] or 0:9.1f} us   best {best['measured_us'] if best else 0:9.1f} us "
              f"({best['tiling'] if best else '-'})   [{time.time() - t0:.0f} s]", flush=True)
    doc = dict(gpu=tgt.gpu, arch=tgt.arch, sms=tgt.sms, date=time.strftime("%Y-%m-%d %H:%M"), cost=model.COST,
               families=model.FAMILIES, rows=rows, seconds=round(time.time() - t0, 1))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "conv2d_probe.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out_dir / "conv2d_probe.md").write_text(markdown(doc))
    return doc


# -- reading a probe ---------------------------------------------------------------------------------
def geomean(xs) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def points(doc: dict) -> list[tuple[dict, dict, float]]:
    """(knobs, sizes, measured seconds) of every validated candidate."""
    return [(dict(get_op("conv2d").default_knobs(), **c["knobs"]), r["sizes"], c["measured_us"] * 1e-6)
            for r in doc["rows"] for c in r["candidates"] if c.get("ok") and c.get("measured_us")]


def log_rms(op, pts, tgt) -> float:
    errs = [math.log(model.estimate(op, k, d, tgt) / t) for k, d, t in pts]
    mean = sum(errs) / len(errs)
    return math.sqrt(sum((e - mean) ** 2 for e in errs) / len(errs))


def markdown(doc: dict) -> str:
    op = get_op("conv2d")
    tgt = dataclasses.replace(target_of(doc["arch"]), sms=doc["sms"])
    out = [f"# conv2d probe: candidate schedules vs the cost model, {doc['gpu']} ({doc['arch']}, {doc['sms']} SMs), "
           f"{doc['date']}", "", "x = cuDNN's time / ours (above 1: faster than cuDNN). pick = schedule_for's choice.", "",
           "| shape | problem | cuDNN us | pick us | pick x | best us | best x | best tiling | default x | pick's rank |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    ratios = {"pick": [], "best": [], "default": []}
    for r in doc["rows"]:
        ok = sorted((c for c in r["candidates"] if c.get("ok")), key=lambda c: c["measured_us"])
        pick = next((c for c in r["candidates"] if has(c, "pick")), None)
        default = next((c for c in r["candidates"] if has(c, "default")), None)
        v = r["vendor_us"]
        x = lambda c: v / c["measured_us"] if v and c and c.get("measured_us") else None   # noqa: E731
        for name, c in (("pick", pick), ("best", ok[0] if ok else None), ("default", default)):
            ratios[name].append(x(c))
        rank = next((i + 1 for i, c in enumerate(ok) if has(c, "pick")), "-")
        fmt = lambda val, f: f"{val:{f}}" if val is not None else "-"   # noqa: E731
        out.append(f"| {r['label']} | {r['problem']} | {fmt(v, '.1f')} | {fmt(pick and pick.get('measured_us'), '.1f')} "
                   f"| {fmt(x(pick), '.2f')} | {fmt(ok[0]['measured_us'] if ok else None, '.1f')} | "
                   f"{fmt(x(ok[0]) if ok else None, '.2f')} | {ok[0]['tiling'] if ok else '-'} | {fmt(x(default), '.2f')} "
                   f"| {rank} of {len(ok)} |")
    out += ["", "Geometric means over the shapes: " + ", ".join(f"{k} {geomean(v):.2f}x" for k, v in ratios.items()),
            f"Model: log-rms error {log_rms(op, points(doc), tgt):.2f} over {len(points(doc))} timings "
            f"(the spread of measured/estimated around its mean).", ""]
    for r in doc["rows"]:
        out += [f"## {r['label']}: {r['problem']}", "", f"cuDNN ({r['vendor']}): {r['vendor_us'] or 0:.1f} us", "",
                "| role | tiling | estimated us | measured us | x cuDNN | measured / estimated | kernel or failure |",
                "|---|---|---|---|---|---|---|"]
        for c in sorted(r["candidates"], key=lambda c: c.get("measured_us") or math.inf):
            m = c.get("measured_us")
            out.append(f"| {c['role']} | {c['tiling']} | {c['predicted_us']:.1f} | {m if m is None else f'{m:.1f}'} | "
                       f"{(r['vendor_us'] / m) if m and r['vendor_us'] else 0:.2f} | {(m / c['predicted_us']) if m else 0:.2f} "
                       f"| {c.get('kernel') if c.get('ok') else c.get('detail') or 'wrong result: %.2g' % c.get('error', 0)} |")
        out.append("")
    return "\n".join(out)


def fit(path: str) -> None:
    """Coordinate descent on COST (log error of measured vs estimated, a free overall scale), then the
    constants to paste, the error before and after, and the picks the refitted model would change."""
    doc = json.loads(Path(path).read_text())
    op = get_op("conv2d")
    tgt = dataclasses.replace(target_of(doc["arch"]), sms=doc["sms"])
    model.COST.update({k: v for k, v in doc["cost"].items() if k in model.COST})
    pts = points(doc)
    before = log_rms(op, pts, tgt)
    keys = ("issue", "row", "pixel", "a_load", "step", "l2_bytes", "l1_reuse", "latency", "fill", "atomic")
    for _ in range(4):
        for key in keys:
            best = (log_rms(op, pts, tgt), model.COST[key])
            for f in (0.5, 0.7, 0.85, 1.2, 1.4, 2.0):
                model.COST[key] = best[1] * f if key != "l1_reuse" else min(0.95, best[1] * f)
                err = log_rms(op, pts, tgt)
                if err < best[0] - 1e-4:
                    best = (err, model.COST[key])
            model.COST[key] = best[1]
    scale = geomean([t / model.estimate(op, k, d, tgt) for k, d, t in pts])
    model.COST["issue"] /= scale          # the overall level: estimates equal the timings' geometric mean
    print(f"log-rms error {before:.3f} -> {log_rms(op, pts, tgt):.3f} over {len(pts)} timings")
    print("COST = " + json.dumps({k: float(f"{v:.3g}") if isinstance(v, float) else v for k, v in model.COST.items()},
                                 indent=1))
    for r in doc["rows"]:
        ok = [c for c in r["candidates"] if c.get("ok")]
        if not ok:
            continue
        d = r["sizes"]
        chosen = min(ok, key=lambda c: model.estimate(op, dict(op.default_knobs(), **c["knobs"]), d, tgt))
        best = min(ok, key=lambda c: c["measured_us"])
        print(f"{r['label']:24s} refitted model picks {chosen['tiling']:28s} {chosen['measured_us']:9.1f} us; "
              f"best measured {best['tiling']:28s} {best['measured_us']:9.1f} us")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "out"), help="folder for the JSON and Markdown ($OUT)")
    ap.add_argument("--budget-s", type=float, default=200.0, help="start no shape after this many seconds")
    ap.add_argument("--reps", type=int, default=15, help="timing repetitions per candidate")
    ap.add_argument("--fit", metavar="JSON", help="refit the cost model to a probe's results (no GPU)")
    ap.add_argument("--markdown", metavar="JSON", help="rewrite the Markdown of a probe's results (no GPU)")
    a = ap.parse_args()
    if a.fit:
        fit(a.fit)
    elif a.markdown:
        print(markdown(json.loads(Path(a.markdown).read_text())))
    else:
        probe(Path(a.out), a.budget_s, a.reps)
