"""Charts of a results document (kernelgen.results), drawn with matplotlib's Agg backend (no display,
no GPU): the roofline, a ladder's speed-ups, a shape suite's ratios to the vendor, a tune's best-so-far.

    kernelgen plot bench_results/json/gemm_ladders_h100_staged.json -o roofline.png
    kernelgen plot RESULTS.json --chart ladder --run "gemm M=4096,N=4096,K=4096:f16" -o ladder.svg
    kernelgen plot bench_results/json/sgemm_sizes_h100.json --chart shapes -o sizes.png

>>> import pytest; _ = pytest.importorskip("matplotlib")
>>> from kernelgen.plot import roofline
>>> run = {"op": "sgemm", "problem": "M=N=K", "math": "fp32", "flops": 2e9, "bytes": 1.2e7,
...        "roofs": {"bytes_per_s": 3.35e12, "flops_per_s": 66.9e12},
...        "rows": [{"step": "default schedule", "kernel": "k", "time_us": 100.0, "vendor": False},
...                 {"step": "vendor: cuBLAS", "kernel": "cuBLAS", "time_us": 80.0, "vendor": True}]}
>>> fig = roofline({"device": {"gpu": "H100"}, "runs": [run]})
>>> points(fig)
{'kernels': 1, 'vendor': 1}

matplotlib is an optional extra: `pip install 'kernelgen[plot]'`.
"""
from __future__ import annotations

import io

from .errors import UsageError
from .results import achieved_flops, intensity, is_ladder_step

SIZE_IN = (8.0, 5.0)   # inches; at DPI, the image is 800 x 500 pixels
DPI = 100
CHARTS = ("roofline", "ladder", "shapes", "tune")


def require():
    """matplotlib with the Agg backend, or a UsageError naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError("charts need matplotlib: pip install 'kernelgen[plot]'") from None
    matplotlib.use("Agg", force=True)


def _figure(title: str):
    require()
    from matplotlib.figure import Figure
    fig = Figure(figsize=SIZE_IN, dpi=DPI)   # no pyplot state: figures are not kept in a global list
    ax = fig.add_subplot()
    ax.set_title(title, fontsize=10)
    return fig, ax


def roofline(doc: dict, runs: list[dict] | None = None):
    """Each kernel at (flop per byte, flop/s achieved), under the memory roof (bytes/s x intensity) and
    the compute roof of each math path; the vendor's point beside ours (a star, nudged right).
    Runs without flops (a copy) have no place on a log-log roofline and are left out."""
    runs = [r for r in (runs if runs is not None else doc["runs"]) if r.get("flops") and r.get("bytes")]
    if not runs:
        raise UsageError("no run of the file does arithmetic (flops > 0): nothing to place on a roofline")
    dev = doc["device"]
    fig, ax = _figure(f"Roofline: {dev.get('gpu', '?')} ({dev.get('arch', '?')})")
    xs = [intensity(r) for r in runs]
    bw = max(r["roofs"]["bytes_per_s"] for r in runs)
    maths = sorted({r["math"] for r in runs})
    peaks = {m: max(r["roofs"]["flops_per_s"] for r in runs if r["math"] == m) for m in maths}
    top = max(peaks.values()) or bw * max(xs) * 8
    ridges = [p / bw for p in peaks.values() if p and bw]
    lo, hi = min(xs + ridges) / 4, max(xs + ridges) * 8
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    if bw:
        ax.plot(grid, [min(top, bw * x) / 1e12 for x in grid], color="0.4", lw=1, gid="roof-memory",
                label=f"memory roof {bw / 1e12:.2f} TB/s")
    for m, peak in peaks.items():
        if peak:
            ax.plot(grid, [min(peak, bw * x) / 1e12 if bw else peak / 1e12 for x in grid], lw=1.5, gid=f"roof-{m}",
                    label=f"{m} roof {peak / 1e12:.0f} TFLOP/s")
    ours = [(intensity(r), achieved_flops(r, row) / 1e12) for r in runs for row in r["rows"] if not row.get("vendor")]
    vendor = [(intensity(r) * 1.15, achieved_flops(r, row) / 1e12)      # nudged right: beside ours, not on them
              for r in runs for row in r["rows"] if row.get("vendor")]
    if ours:
        ax.scatter(*zip(*ours), s=18, color="tab:blue", zorder=3, gid="kernels", label="kernelgen kernels")
    if vendor:
        ax.scatter(*zip(*vendor), s=60, marker="*", color="tab:red", zorder=4, gid="vendor", label="vendor library")
    if len(runs) <= 8:
        for r, x in zip(runs, xs):
            if not r["rows"]:
                continue
            best = max(achieved_flops(r, row) for row in r["rows"]) / 1e12
            ax.annotate(f"{r['op']} {r['problem']}", (x, best), textcoords="offset points", xytext=(4, 6), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop / byte the op must move)")
    ax.set_ylabel("TFLOP/s achieved")
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def ladder(doc: dict, run: dict):
    """The ladder's steps as bars of speed-up over step 1, the vendor as a horizontal line."""
    steps = [r for r in run["rows"] if is_ladder_step(r)]
    if not steps:
        raise UsageError(f"{run['op']} {run['problem']} has no ladder steps to chart")
    fig, ax = _figure(f"{run['op']} {run['problem']} on {doc['device'].get('gpu', '?')}: speed-up over step 1")
    base = steps[0]["time_us"]
    ups = [base / r["time_us"] for r in steps]
    ax.bar([str(i) for i in range(1, len(steps) + 1)], ups, color="tab:blue", gid="steps")
    for i, u in enumerate(ups):
        ax.annotate(f"{u:.2f}x", (i, u), ha="center", va="bottom", fontsize=7)
    vendor = [r for r in run["rows"] if r.get("vendor")]
    if vendor:
        v = base / vendor[0]["time_us"]
        ax.axhline(v, color="tab:red", ls="--", lw=1.2, gid="vendor", label=f"{vendor[0]['kernel']}: {v:.2f}x")
        ax.legend(fontsize=7, loc="upper left")
    ax.set_ylim(0, max(ups + [base / vendor[0]["time_us"]] if vendor else ups) * 1.15)
    ax.set_xlabel("ladder step (see the table for what each adds)")
    ax.set_ylabel("speed-up over step 1")
    ax.grid(True, axis="y", lw=0.3)
    return fig


def shapes(doc: dict, op: str | None = None):
    """A shape suite: per problem of one op, the best kernel's speed against the vendor's (vendor time /
    ours), 1.0 drawn as the vendor line."""
    ops = sorted({r["op"] for r in doc["runs"]})
    if op is None and len(ops) > 1:
        raise UsageError(f"the file holds runs of {', '.join(ops)}; choose one with --run OP")
    op = op or (ops[0] if ops else None)
    runs = [r for r in doc["runs"] if r["op"] == op and any(x.get("vendor") for x in r["rows"])
            and any(not x.get("vendor") for x in r["rows"])]
    if not runs:
        raise UsageError(f"no run of {op!r} with a vendor row to compare with" if op in ops else
                         f"--run {op!r}: the file's ops are {', '.join(ops)}")
    fig, ax = _figure(f"{op}: best kernelgen kernel against the vendor, per problem ({doc['device'].get('gpu', '?')})")
    ratios = [min(x["time_us"] for x in r["rows"] if x.get("vendor"))
              / min(x["time_us"] for x in r["rows"] if not x.get("vendor")) for r in runs]
    ax.bar([r["problem"] for r in runs], ratios, color="tab:blue", gid="problems")
    for i, v in enumerate(ratios):
        ax.annotate(f"{v:.2f}x", (i, v), ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="tab:red", ls="--", lw=1.2, gid="vendor", label="vendor")
    ax.set_ylim(0, max(ratios + [1.0]) * 1.15)
    ax.tick_params(axis="x", labelrotation=20, labelsize=7)
    ax.set_ylabel("vendor time / best kernelgen time")
    ax.legend(fontsize=7, loc="upper left")
    fig.subplots_adjust(bottom=0.22)
    return fig


def tune(doc: dict, run: dict):
    """Best time so far against candidates measured."""
    measured = (run.get("tune") or {}).get("measured") or []
    pts = [(n, best) for n, _t, best, *_ in measured if best is not None]
    if not pts:
        raise UsageError(f"{run['op']} {run['problem']}: no tune with a schedule that ran correctly to chart")
    fig, ax = _figure(f"tune {run['op']} {run['problem']} ({run['tune'].get('strategy', '?')})")
    ax.step(*zip(*pts), where="post", color="tab:blue", gid="best-so-far", label="best so far")
    each = [(n, t) for n, t, *_ in measured if t is not None]
    ax.scatter(*zip(*each), s=8, color="0.6", gid="kernels", label="each candidate")
    ax.set_xlabel("candidates measured")
    ax.set_ylabel("time (us)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    return fig


def points(fig) -> dict[str, int]:
    """How many points each marked series of a chart holds (scatter points; bars: ladder steps or
    problems), read from the figure."""
    out: dict[str, int] = {}
    for ax in fig.axes:
        for c in ax.collections:
            if c.get_gid():
                out[c.get_gid()] = out.get(c.get_gid(), 0) + len(c.get_offsets())
        for p in ax.patches:                  # bars
            if p.get_gid():
                out[p.get_gid()] = out.get(p.get_gid(), 0) + 1
    return out


def render(fig, fmt: str = "png") -> bytes:
    """The chart as PNG or SVG bytes, at SIZE_IN x DPI (no tight bounding box: the size is fixed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=DPI)
    return buf.getvalue()


def chart(doc: dict, kind: str, run):
    """`kind` of CHARTS; `run` is a run (an op's name for shapes, None for every run or the only one)."""
    if kind == "roofline":
        return roofline(doc, [run] if run else None)
    if kind == "ladder":
        return ladder(doc, run)
    if kind == "shapes":
        return shapes(doc, run)
    return tune(doc, run)
