"""Results files (kernelgen-results/1), their charts and report page, without a GPU: drawn from the
H100 results recorded in bench_results/json/ (converted from bench_results/*.md)."""
import json
import shutil
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelgen import results
from kernelgen.cli import main
from kernelgen.ops import get_op
from kernelgen.schedule import Schedule
from kernelgen.target import target

ROOT = Path(__file__).resolve().parent.parent
JSON = ROOT / "bench_results" / "json"
GEMM = JSON / "gemm_ladders_h100_staged.json"
GEMM_RUN = "gemm M=4096,N=4096,K=4096:f16"
ALL = JSON / "all_h100_groundwork_run1.json"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def png_size(path) -> tuple[int, int]:
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


def one_line_error(r, *needles):
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    for n in needles:
        assert n in lines[0], r.output


# -- the document --------------------------------------------------------------------------------
def test_markdown_tables_convert_to_runs():
    doc = results.from_markdown((ROOT / "bench_results" / "gemm_ladders_h100_staged.md").read_text(), "staged.md")
    assert [len(r["rows"]) for r in doc["runs"]] == [12, 12, 12, 3]
    run = doc["runs"][0]
    assert (run["op"], run["problem"], run["math"], run["ladder"]) == ("gemm", "M=4096,N=4096,K=4096:f16", "fp16", True)
    assert run["flops"] == 2 * 4096 ** 3 and run["roofs"]["flops_per_s"] == 989.4e12
    vendor = [r for r in run["rows"] if r["vendor"]]
    assert len(vendor) == 1 and vendor[0]["time_us"] == 164.7 and vendor[0]["roofline"] == 0.84
    assert doc["device"]["gpu"] == "H100 80GB HBM3" and doc["date"] == "2026-11-23"


def test_recorded_json_files_load_and_match_their_markdown():
    files = sorted(JSON.glob("*.json"))
    assert len(files) >= 10
    for f in files:
        doc = results.load(f)
        md = (ROOT / "bench_results" / (f.stem + ".md")).read_text()
        assert sum(len(r["rows"]) for r in doc["runs"]) == sum(
            1 for line in md.splitlines() if line.startswith("| ") and not line.startswith("| step |")), f


def bench_like_rows():
    """What bench_rows returns, with the values the H100 measured (no GPU needed)."""
    op = get_op("sgemm")
    ladder = op.ladder()
    rows = [{"step": f"{i}. {s.title}", "time_us": t, "GB/s": 1.0, "TFLOP/s": 2.0, "roofline": 0.5, "valid": "ok",
             "kernel": f"k{i}", "timing": "events", "schedule": s.schedule.to_dict()}
            for i, (s, t) in enumerate(zip(ladder[:3], (300.0, 200.0, 100.0)), 1)]
    rows.append({"step": "vendor: cuBLAS", "time_us": 90.0, "GB/s": 1.0, "TFLOP/s": 2.0, "roofline": 0.6,
                 "valid": "-", "kernel": "cuBLAS", "timing": "events", "schedule": None})
    for r in rows:
        r["speedup"], r["vs_vendor"] = 300.0 / r["time_us"], float("nan")
    return op, rows


def test_bench_document_round_trips_with_schedules_and_roofs(tmp_path):
    op, rows = bench_like_rows()
    dev = target("sm_90a")
    problem = op.problem()
    run = results.run_dict(op, problem, dev, rows, ladder=True, timing="events, median of 30")
    path = results.write(results.document("bench", device=results.device_dict(dev), runs=[run],
                                          command="kernelgen bench sgemm --ladder --json x.json"), tmp_path / "x.json")
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]          # no temporary file left behind
    doc = results.load(path)
    got = doc["runs"][0]
    assert got["roofs"] == {"bytes_per_s": 3.35e12, "flops_per_s": 66.9e12}
    assert doc["device"]["peak_flops"]["fp16"] == 989.4e12
    assert got["rows"][0]["vs_vendor"] is None                         # NaN is not JSON: null
    assert [r["vendor"] for r in got["rows"]] == [False, False, False, True]
    assert Schedule.from_dict(got["rows"][1]["schedule"]) == op.ladder()[1].schedule


@pytest.mark.parametrize("text, needle", [
    ("{not json", "not JSON"),
    ("[1, 2]", "top level is not a JSON object"),
    ('{"runs": []}', "no \"schema\""),
    ('{"schema": "kernelgen-results/0", "kind": "bench", "device": {}, "runs": []}',
     "schema 'kernelgen-results/0' is not 'kernelgen-results/1'"),
    ('{"schema": "kernelgen-results/1", "kind": "bench", "device": {}, "runs": []}', "device.gpu is None"),
    ('{"schema": "kernelgen-results/1", "kind": "tune", "device": {"gpu": "H100", "arch": "sm_90a"}, "runs": '
     '[{"op": "gemm", "problem": "M=1", "math": "fp32", "flops": 1, "bytes": 1, "roofs": {"bytes_per_s": 1, '
     '"flops_per_s": 1}, "rows": [{"step": "a"}]}]}', "run 0 row 0 lacks kernel, time_us"),
])
@pytest.mark.parametrize("command", ["plot", "report"])
def test_malformed_or_older_file_is_one_line_and_exit_2(tmp_path, text, needle, command):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    one_line_error(invoke(command, bad, "-o", tmp_path / "out.png" if command == "plot" else tmp_path / "r.html"),
                   needle)


def _mutations(doc):
    """The document with one field at a time removed or replaced by a wrong type."""
    run = doc["runs"][0]
    for where in (doc, doc["device"], run, run["roofs"], run["rows"][0]):
        for key in list(where):
            for bad in (None, "x", -1, []):
                if key == "schema" or where.get(key) == bad:
                    continue
                old = where[key]
                where[key] = bad
                yield f"{key}={bad!r}", json.dumps(doc)
                where[key] = old
            old = where.pop(key)
            yield f"no {key}", json.dumps(doc)
            where[key] = old


@pytest.mark.parametrize("command", ["plot", "report"])
def test_any_field_wrong_or_missing_is_never_a_traceback(tmp_path, command, monkeypatch):
    pytest.importorskip("matplotlib")
    from kernelgen import plot
    monkeypatch.setattr(plot, "render", lambda fig, fmt="png": b"")   # drawing is what the tests above check
    doc = results.load(GEMM)
    doc["runs"] = doc["runs"][:1]
    out = tmp_path / ("c.png" if command == "plot" else "r.html")
    for what, text in _mutations(doc):
        (tmp_path / "m.json").write_text(text)
        r = invoke(command, tmp_path / "m.json", "-o", out)
        assert r.exit_code in (0, 2), (what, r.output)
        if r.exit_code == 2:
            one_line_error(r)


def test_missing_file_and_bad_output_are_one_line(tmp_path):
    one_line_error(invoke("plot", tmp_path / "nope.json", "-o", tmp_path / "a.png"), "does not exist")
    one_line_error(invoke("plot", GEMM, "-o", tmp_path / "a.jpg"), "write a .png or a .svg")
    one_line_error(invoke("report", GEMM, "-o", tmp_path / "no" / "r.html"), "does not exist")


def test_missing_matplotlib_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    one_line_error(invoke("plot", GEMM, "-o", tmp_path / "a.png"), "pip install 'kernelgen[plot]'")
    one_line_error(invoke("report", GEMM, "-o", tmp_path / "r.html"), "pip install 'kernelgen[plot]'")


def test_bench_and_tune_json_refuse_a_folder_before_any_work(tmp_path):
    one_line_error(invoke("bench", "sgemm", "--json", tmp_path), "is a folder")
    one_line_error(invoke("tune", "sgemm", "--json", tmp_path / "t.json", "--replay", tmp_path / "x.jsonl"),
                   "--json records a GPU tune")


# -- charts (matplotlib) ---------------------------------------------------------------------------
@pytest.fixture
def charts():
    pytest.importorskip("matplotlib")
    from kernelgen import plot
    return plot


def expected(run):
    return (sum(not r["vendor"] for r in run["rows"]), sum(r["vendor"] for r in run["rows"]),
            sum(results.is_ladder_step(r) for r in run["rows"]))


def test_roofline_of_one_run_places_every_kernel_and_the_vendor(charts, tmp_path):
    doc = results.load(GEMM)
    run = results.select_run(doc, GEMM_RUN)
    ours, vendor, _ = expected(run)
    assert (ours, vendor) == (11, 1)
    fig = charts.roofline(doc, [run])
    assert charts.points(fig) == {"kernels": ours, "vendor": vendor}
    gids = {line.get_gid() for line in fig.axes[0].lines}
    assert {"roof-memory", "roof-fp16"} <= gids
    r = invoke("plot", GEMM, "--run", GEMM_RUN, "-o", tmp_path / "roof.png")
    assert r.exit_code == 0, r.output
    assert png_size(tmp_path / "roof.png") == (800, 500)
    assert f"{ours} kernels, {vendor} vendor" in r.output


def test_roofline_of_a_whole_file_leaves_out_runs_without_flops(charts):
    doc = results.load(ALL)
    runs = [r for r in doc["runs"] if r["flops"]]
    assert len(runs) < len(doc["runs"])                                 # transpose, staged_load: copies
    fig = charts.roofline(doc)
    assert charts.points(fig) == {"kernels": sum(expected(r)[0] for r in runs),
                                  "vendor": sum(expected(r)[1] for r in runs)}
    assert {"roof-fp32"} <= {line.get_gid() for line in fig.axes[0].lines}


def test_ladder_chart_has_a_bar_per_step_and_the_vendor_line(charts, tmp_path):
    doc = results.load(GEMM)
    run = results.select_run(doc, GEMM_RUN)
    fig = charts.ladder(doc, run)
    assert charts.points(fig) == {"steps": expected(run)[2]} == {"steps": 9}
    vline = [line for line in fig.axes[0].lines if line.get_gid() == "vendor"]
    assert len(vline) == 1 and abs(vline[0].get_ydata()[0] - 843.0 / 164.7) < 1e-9
    r = invoke("plot", ALL, "--chart", "ladder", "--run", "sgemm M=4096,N=4096,K=4096", "-o", tmp_path / "l.svg")
    assert r.exit_code == 0, r.output
    assert "<svg" in (tmp_path / "l.svg").read_text()[:2000]


def test_ladder_needs_a_run_where_there_are_several(charts, tmp_path):
    one_line_error(invoke("plot", GEMM, "--chart", "ladder", "-o", tmp_path / "l.png"), "choose one with --run")
    one_line_error(invoke("plot", GEMM, "--chart", "ladder", "--run", "gemm nope", "-o", tmp_path / "l.png"),
                   "names no run")


def test_shape_suite_has_a_bar_per_problem(charts, tmp_path):
    doc = results.load(JSON / "sgemm_sizes_h100.json")
    fig = charts.shapes(doc)
    assert charts.points(fig) == {"problems": len(doc["runs"])} == {"problems": 7}
    heights = [p.get_height() for p in fig.axes[0].patches if p.get_gid() == "problems"]
    run = doc["runs"][0]
    best = min(r["time_us"] for r in run["rows"] if not r["vendor"])
    assert heights[0] == pytest.approx(min(r["time_us"] for r in run["rows"] if r["vendor"]) / best)
    r = invoke("plot", ALL, "--chart", "shapes", "--run", "softmax", "-o", tmp_path / "s.png")
    assert r.exit_code == 0 and "4 problems" in r.output, r.output
    one_line_error(invoke("plot", ALL, "--chart", "shapes", "-o", tmp_path / "s.png"), "choose one with --run OP")


def test_bench_plot_is_checked_before_the_gpu(tmp_path, monkeypatch):
    one_line_error(invoke("bench", "sgemm", "--plot", tmp_path / "a.jpg"), "write a .png or a .svg")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    one_line_error(invoke("bench", "sgemm", "--plot", tmp_path / "a.png"), "pip install 'kernelgen[plot]'")


def tune_doc():
    from kernelgen.tune.db import Record
    op, rows = bench_like_rows()
    problem = op.problem()
    recs = [Record.make(op.name, str(problem), "sm_90a", "H100", r["schedule"], {}, "ok", t, kernel=r["kernel"])
            for r, t in zip(rows[:3], (300.0, 100.0, 200.0))]
    recs.insert(1, Record.make(op.name, str(problem), "sm_90a", "H100", rows[0]["schedule"], {}, "compile_error",
                               None))
    dev = target("sm_90a")
    return results.document("tune", device=results.device_dict(dev), command="kernelgen tune sgemm --json t.json",
                            runs=[results.tune_run(op, problem, dev, recs, "random")])


def test_tune_json_has_best_so_far_and_charts(charts, tmp_path):
    doc = results.check(json.loads(json.dumps(tune_doc())), "t.json")
    run = doc["runs"][0]
    assert [m[2] for m in run["tune"]["measured"]] == [300.0, 300.0, 100.0, 100.0]
    assert run["rows"][0]["step"].startswith("best") and run["rows"][0]["time_us"] == 100.0
    results.write(doc, tmp_path / "t.json")
    r = invoke("plot", tmp_path / "t.json", "-o", tmp_path / "t.png")
    assert r.exit_code == 0, r.output
    assert png_size(tmp_path / "t.png") == (800, 500)
    assert charts.points(charts.tune(doc, run)) == {"kernels": 3}


# -- the report page -------------------------------------------------------------------------------
class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.images, self.text, self.external = 0, [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tables += tag == "table"
        if tag in ("script", "link", "iframe") or any(k in ("src", "href") and not str(v).startswith("data:")
                                                      for k, v in attrs):
            self.external.append((tag, attrs))
        if tag == "img":
            self.images.append(a)

    def handle_data(self, data):
        self.text.append(data)


def test_report_holds_every_table_and_chart(charts, tmp_path):
    import base64
    r = invoke("report", GEMM, "-o", tmp_path / "r.html")
    assert r.exit_code == 0, r.output
    html = (tmp_path / "r.html").read_text()
    page = Page()
    page.feed(html)
    doc = results.load(GEMM)
    ladders = sum(any(results.is_ladder_step(x) for x in run["rows"]) for run in doc["runs"])
    assert page.tables == len(doc["runs"]) == 4
    assert len(page.images) == 1 + ladders == 4                        # the roofline and each ladder
    for img in page.images:
        data = base64.b64decode(img["src"].removeprefix("data:image/png;base64,"))
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (800, 500)
    text = " ".join(page.text)
    for run in doc["runs"]:
        assert f"{run['op']} {run['problem']}" in text
        assert all(row["kernel"] in text for row in run["rows"])
    assert "H100 80GB HBM3" in text and "2026-11-23" in text
    assert page.external == []                                         # self-contained: nothing fetched


def test_report_shows_schedules_as_python(charts, tmp_path):
    results.write(tune_doc(), tmp_path / "t.json")
    assert invoke("report", tmp_path / "t.json", "-o", tmp_path / "r.html").exit_code == 0
    assert "schedule(&quot;sgemm&quot;)" in (tmp_path / "r.html").read_text()


@pytest.mark.nvrtc
def test_bench_rows_get_inspect_facts_and_the_report_shows_them(charts, tmp_path):
    op, rows = bench_like_rows()
    dev = target("sm_90a")
    results.add_inspect(op, op.problem(), rows[:2] + rows[3:], dev)
    assert rows[0]["inspect"][0]["symbol"].startswith("sgemm_") and rows[0]["inspect"][0]["spill_bytes"] == 0
    assert "inspect" not in rows[2] and "inspect" not in rows[3]      # not asked; the vendor has no schedule
    doc = results.document("bench", device=results.device_dict(dev), command="x",
                           runs=[results.run_dict(op, op.problem(), dev, rows, ladder=True, timing="events")])
    results.write(doc, tmp_path / "b.json")
    assert invoke("report", tmp_path / "b.json", "-o", tmp_path / "r.html").exit_code == 0
    regs = rows[0]["inspect"][0]["registers"]
    assert f"{regs} registers, 0 B spilled" in (tmp_path / "r.html").read_text()


def _browser():
    return next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


@pytest.mark.skipif(_browser() is None, reason="no headless Chromium on this machine")
def test_report_in_a_headless_browser(charts, tmp_path):
    assert invoke("report", GEMM, "-o", tmp_path / "r.html").exit_code == 0
    try:
        out = subprocess.run([_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                              (tmp_path / "r.html").as_uri()], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"{_browser()} did not run headless: {e}")
    if out.returncode != 0 or "<html" not in out.stdout:     # e.g. a snap stub standing in for the browser
        pytest.skip(f"{_browser()} did not render headless: {out.stderr.strip()[-200:]}")
    page = Page()
    page.feed(out.stdout)
    assert page.tables == 4 and len(page.images) == 4, out.stderr[-2000:]


# -- the GPU commands' JSON, their GPU work replaced by recorded values ---------------------------
@pytest.fixture
def fake_h100(monkeypatch):
    from kernelgen import gpu
    monkeypatch.setattr(gpu, "require", lambda: None)
    monkeypatch.setattr(gpu, "device", lambda: target("sm_90a"))


@pytest.mark.nvrtc
def test_bench_json_and_plot_from_the_command(fake_h100, monkeypatch, tmp_path, charts):
    import kernelgen.bench as bench
    op, rows = bench_like_rows()
    monkeypatch.setattr(bench, "bench_rows", lambda *a, **k: [dict(r) for r in rows])
    monkeypatch.setattr(bench, "format_rows", lambda *a, **k: "the table")
    r = invoke("bench", "sgemm", "--ladder", "--json", tmp_path / "b.json", "--plot", tmp_path / "b.png")
    assert r.exit_code == 0, r.output
    doc = results.load(tmp_path / "b.json")
    assert doc["command"].startswith("kernelgen") and doc["device"]["arch"] == "sm_90a" and doc["kind"] == "bench"
    run = doc["runs"][0]
    assert run["timing"].endswith("median of 30 replays") and run["ladder"] is True     # graph: below 64 MB
    assert [row["step"] for row in run["rows"]] == [row["step"] for row in rows]
    assert run["rows"][0]["inspect"][0]["registers"] > 0
    assert png_size(tmp_path / "b.png") == (800, 500)


def test_tune_json_from_the_command(fake_h100, monkeypatch, tmp_path):
    import contextlib

    import kernelgen.tune as tune_pkg
    import kernelgen.tune.builder as builder
    import kernelgen.tune.worker as worker
    from kernelgen.tune import TuneResult
    from kernelgen.tune.db import Record
    op, rows = bench_like_rows()
    recs = [Record.make("sgemm", str(op.problem()), "sm_90a", "H100", r["schedule"], {}, "ok", t, kernel=r["kernel"])
            for r, t in zip(rows[:3], (5.0, 3.0, 4.0))]
    monkeypatch.setattr(worker, "ProcessRunner", lambda *a, **k: contextlib.nullcontext())
    monkeypatch.setattr(builder, "Builders", lambda *a, **k: contextlib.nullcontext())
    monkeypatch.setattr(tune_pkg, "tune", lambda *a, **k: TuneResult(best=recs[1], measured=3, records=recs))
    r = invoke("tune", "sgemm", "--db", tmp_path / "db.jsonl", "--json", tmp_path / "t.json", "--jobs", "0")
    assert r.exit_code == 0, r.output
    run = results.load(tmp_path / "t.json")["runs"][0]
    assert [m[2] for m in run["tune"]["measured"]] == [5.0, 3.0, 3.0] and run["rows"][0]["time_us"] == 3.0
