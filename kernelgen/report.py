"""One self-contained HTML page of a results document: device, date and command, a table per run
(kernel names, schedules, inspect facts, times, rates, roofline fractions, the vendor's row, Nsight Compute's
figures where `kernelgen profile --json` wrote the file), the roofline of every run, each ladder's
speed-ups and a tune's best-so-far, the charts inline as base64 PNG.

    kernelgen report bench_results/json/gemm_ladders_h100_staged.json -o report.html

>>> import pytest; _ = pytest.importorskip("matplotlib")
>>> from kernelgen.report import html_page
>>> doc = {"schema": "kernelgen-results/1", "kind": "bench", "date": "2026-11-23", "command": "kernelgen bench x",
...        "device": {"gpu": "H100", "arch": "sm_90a"}, "runs": []}
>>> page = html_page(doc)
>>> page.startswith("<!DOCTYPE html>"), "H100" in page
(True, True)
"""
from __future__ import annotations

import base64
import json
from html import escape

from . import plot
from .results import is_ladder_step

COLUMNS = ("step", "time_us", "GB/s", "TFLOP/s", "roofline", "speedup", "vs_vendor", "valid", "kernel", "schedule",
           "inspect")
STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;font-size:12px;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
th{background:#eee}tr.vendor{background:#fdecea}code{font-size:11px}img{display:block;margin:1em 0}"""


def _cell(col: str, v) -> str:
    if v is None:
        return "-"
    if col == "schedule":
        return f"<code>{escape(_schedule_text(v))}</code>"
    if col == "profile" and isinstance(v, list):   # `kernelgen profile --json`: Nsight Compute's figures per launch
        from .ncu import lines
        return "<br>".join(escape(line) for f in v if isinstance(f, dict) for line in lines(f))
    if col == "inspect" and isinstance(v, list):
        return "<br>".join(escape(f"{f.get('registers')} registers, {f.get('spill_bytes')} B spilled, "
                                  f"{f.get('shared_bytes')} B static shared, {f.get('ldg128')} 128-bit loads")
                           for f in v if isinstance(f, dict))
    if isinstance(v, float):
        return {"roofline": f"{v:.0%}", "speedup": f"{v:.2f}x", "vs_vendor": f"{v:.2f}x", "GB/s": f"{v:.0f}",
                "TFLOP/s": f"{v:.2f}", "time_us": f"{v:.1f}"}.get(col, f"{v:g}")
    return escape(str(v))


def _schedule_text(d) -> str:
    """A schedule as the Python that builds it; as its JSON where this kernelgen no longer reads it."""
    from .errors import KernelgenError
    from .schedule import Schedule
    try:
        return Schedule.from_dict(d).to_python()
    except (KernelgenError, TypeError, ValueError, KeyError, AttributeError):
        return json.dumps(d, sort_keys=True)


def _table(run: dict) -> str:
    cols = COLUMNS + (("profile",) if any(r.get("profile") for r in run["rows"]) else ())
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = "".join(f"<tr{' class=vendor' if r.get('vendor') else ''}>"
                   + "".join(f"<td>{_cell(c, r.get(c))}</td>" for c in cols) + "</tr>" for r in run["rows"])
    return f'<table class="results"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _img(fig, alt: str) -> str:
    data = base64.b64encode(plot.render(fig, "png")).decode()
    return f'<img class="chart" alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def html_page(doc: dict) -> str:
    dev = doc["device"]
    parts = [f"<h1>kernelgen {escape(doc.get('kind', 'bench'))} results</h1>",
             f"<p>Device <b>{escape(str(dev.get('gpu')))}</b> ({escape(str(dev.get('arch')))}), "
             f"{escape(str(doc.get('date')))}, kernelgen {escape(str(doc.get('kernelgen', '?')))}<br>"
             f"Command: <code>{escape(str(doc.get('command', '')))}</code></p>"]
    if any(r.get("flops") for r in doc["runs"]):
        parts += ["<h2>Roofline</h2>", _img(plot.roofline(doc), "roofline of every run")]
    for run in doc["runs"]:
        name = f"{run['op']} {run['problem']}"
        parts += [f"<h2>{escape(name)}</h2>", f"<p>Timing: {escape(str(run.get('timing', '')))}; "
                  f"{escape(str(run.get('math', '')))} roof {run['roofs']['flops_per_s'] / 1e12:.1f} TFLOP/s, "
                  f"memory {run['roofs']['bytes_per_s'] / 1e12:.2f} TB/s</p>", _table(run)]
        if any(is_ladder_step(r) for r in run["rows"]):
            parts.append(_img(plot.ladder(doc, run), f"ladder of {name}"))
        if (run.get("tune") or {}).get("measured") and any(m[2] is not None for m in run["tune"]["measured"]):
            parts.append(_img(plot.tune(doc, run), f"tune of {name}"))
    title = escape(f"kernelgen results: {dev.get('gpu')} {doc.get('date')}")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
