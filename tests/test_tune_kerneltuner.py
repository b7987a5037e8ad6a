"""Kernel Tuner's cache format: export, import, round trip, caches Kernel Tuner itself wrote; no GPU."""
import json

import pytest
from click.testing import CliRunner

from kernelgen import get_op
from kernelgen.cli import main
from kernelgen.errors import UsageError
from kernelgen.tune.db import Record, TuningDB
from kernelgen.tune.kerneltuner import read_cache, write_cache
from kernelgen.tune.replay import load_sweep, read_records

REQUIRED = ["schema_version", "device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params",
            "objective", "cache"]                 # kernel_tuner/schema/cache/1.1.0/schema.json
ENTRY = ["time", "compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time",
         "timestamp"]


def records(op_name="reduce_sum", problem="n=4096", statuses=("ok", "compile_error", "launch_error",
                                                               "wrong_answer", "timeout", "ok")):
    op = get_op(op_name)
    out = []
    for i, (status, knobs) in enumerate(zip(statuses, op.space(op.problem(), __import__("kernelgen").target.target()))):
        s = op.schedule_from_knobs(**knobs)
        out.append(Record.make(op_name, problem, "sm_90", "H100 80GB HBM3", s.to_dict(), knobs, status,
                               10.0 + i if status == "ok" else None, f"detail {i}", f"k{i}"))
    return out


def test_an_export_has_kernel_tuners_fields_keys_units_and_failure_words(tmp_path):
    recs = records()
    path = tmp_path / "c.json"
    write_cache(recs, path)
    doc = json.loads(path.read_text())
    assert all(k in doc for k in REQUIRED) and doc["schema_version"] == "1.1.0" and doc["objective"] == "time"
    assert doc["kernel_name"] == "reduce_sum" and doc["problem_size"] == [4096]
    assert doc["tune_params_keys"] == list(recs[0].knobs)
    assert all(isinstance(v, list) for v in doc["tune_params"].values())
    entries = list(doc["cache"].items())
    assert len(entries) == 6 and all(all(k in e for k in ENTRY) for _, e in entries)
    for (key, entry), rec in zip(entries, recs):
        assert key == ",".join(str(v) for v in rec.knobs.values())
        assert all(entry[k] == v for k, v in rec.knobs.items())         # the parameters, as Kernel Tuner stores them
    assert [e["time"] for _, e in entries] == [0.01, "CompilationFailedConfig", "RuntimeFailedConfig",
                                               "RuntimeFailedConfig", "RuntimeFailedConfig", 0.015]
    assert entries[0][1]["times"] == [0.01] and entries[1][1]["times"] == []


def test_export_then_import_gives_the_records_back(tmp_path):
    recs = records()
    write_cache(recs, tmp_path / "c.json")
    back = read_cache(tmp_path / "c.json")
    fields = ("op", "problem", "dtype", "arch", "gpu", "version", "schedule", "knobs", "status", "time_us", "detail",
              "kernel", "timestamp")
    assert [[getattr(r, f) for f in fields] for r in back] == [[getattr(r, f) for f in fields] for r in recs]
    assert [r.key() for r in back] == [r.key() for r in recs]


def test_a_half_precision_sweep_round_trips_its_types(tmp_path):
    op = get_op("gemm")
    sched = op.default_schedule()
    rec = Record.make("gemm", "M=64,N=64,K=64:f16", "sm_90a", "H100", sched.to_dict(), op.knobs_from_schedule(sched),
                      "ok", 5.0, dtype="float16")
    write_cache([rec], tmp_path / "c.json")
    assert json.loads((tmp_path / "c.json").read_text())["problem_size"] == [64, 64, 64]
    (back,) = read_cache(tmp_path / "c.json")
    assert (back.problem, back.dtype, back.arch) == ("M=64,N=64,K=64:f16", "float16", "sm_90a")


def test_one_cache_holds_one_problem_and_device(tmp_path):
    mixed = records()[:2] + records(problem="n=8192")[:1]
    with pytest.raises(UsageError, match="one kernel on one problem and device; these records hold 2"):
        write_cache(mixed, tmp_path / "c.json")


def kernel_tuner_wrote(tmp_path, closed=True):
    """A cache as Kernel Tuner writes it for reduce_sum's knobs: no kernelgen fields, entries appended."""
    op = get_op("reduce_sum")
    keys = [k.name for k in op.knobs]
    head = {"device_name": "NVIDIA A100-SXM4-80GB", "kernel_name": "reduce_kernel", "problem_size": [1048576],
            "tune_params_keys": keys, "tune_params": {k.name: list(k.choices) for k in op.knobs},
            "objective": "time", "cache": {}}
    text = json.dumps(head, indent="")[:-3]
    entries = []
    for i, knobs in enumerate(list(op.space(op.problem(), __import__("kernelgen").target.target()))[:4]):
        time = [0.25, "CompilationFailedConfig", "InvalidConfig", 0.125][i]
        entry = {**knobs, "time": time, "times": [time] if isinstance(time, float) else [], "compile_time": 310.2,
                 "verification_time": 0, "benchmark_time": 12.5, "strategy_time": 0, "framework_time": 1.1,
                 "timestamp": "2026-11-23 10:00:0%d.000000+00:00" % i}
        entries.append(knobs)
        text += "\n" + json.dumps({",".join(str(knobs[k]) for k in keys): entry})[1:-1] + ","
    if closed:
        text = text[:-1] + "}\n}"
    path = tmp_path / "kt.json"
    path.write_text(text)
    return path, entries


@pytest.mark.parametrize("closed", [True, False])
def test_a_cache_kernel_tuner_wrote_imports_with_the_op_named(tmp_path, closed):
    path, knobs = kernel_tuner_wrote(tmp_path, closed)
    with pytest.raises(UsageError, match="not written by kernelgen: name the op it tunes"):
        read_cache(path)
    op = get_op("reduce_sum")
    recs = read_cache(path, op)
    assert [r.status for r in recs] == ["ok", "compile_error", "ok"]           # InvalidConfig: pruned, not a record
    assert [r.time_us for r in recs] == [250.0, None, 125.0]                   # ms -> us
    assert recs[0].problem == "n=1048576" and recs[0].gpu == "NVIDIA A100-SXM4-80GB" and recs[0].arch == "sm_90"
    assert recs[0].schedule == op.schedule_from_knobs(**knobs[0]).to_dict()
    assert recs[2].knobs == knobs[3] and recs[0].timestamp > 1.7e9


def test_a_cache_of_other_parameters_or_sizes_says_what_is_wrong(tmp_path):
    path, _ = kernel_tuner_wrote(tmp_path)
    with pytest.raises(UsageError, match=r"parameter 'threads' is not a knob of transpose"):
        read_cache(path, get_op("transpose"))
    path.write_text(path.read_text().replace('"problem_size": [\n1048576\n]', '"problem_size": [1024, 1024]'))
    with pytest.raises(UsageError, match=r"problem_size \[1024, 1024\] does not give reduce_sum's sizes \(n\); "
                                         r"name the problem \(--size\)"):
        read_cache(path, get_op("reduce_sum"))
    assert read_cache(path, get_op("reduce_sum"), "n=99")[0].problem == "n=99"
    (tmp_path / "bad.json").write_text('{"device_name": "x"')
    with pytest.raises(UsageError, match="is not a Kernel Tuner cache"):
        read_cache(tmp_path / "bad.json", get_op("reduce_sum"))


def test_a_kernel_tuner_cache_replays(tmp_path):
    recs = records(statuses=("ok",) * 12)
    write_cache(recs, tmp_path / "c.json")
    sweep = load_sweep(get_op("reduce_sum"), read_records(tmp_path / "c.json"))
    assert len(sweep.space) == 12 and sweep.best_us == 10.0
    res = CliRunner().invoke(main, ["tune", "reduce_sum", "--replay", str(tmp_path / "c.json"), "--strategy", "random"])
    assert res.exit_code == 0 and "12 candidates on H100 80GB HBM3" in res.output, res.output


def test_cli_export_and_import(tmp_path):
    db = TuningDB(tmp_path / "t.jsonl")
    for r in records() + records(problem="n=8192")[:2]:
        db.append(r)
    out = tmp_path / "c.json"
    runner = CliRunner()
    res = runner.invoke(main, ["tune-db", "export", "reduce_sum", "--db", str(db.path), "-o", str(out)])
    assert res.exit_code == 2 and "these records hold 2" in res.output
    res = runner.invoke(main, ["tune-db", "export", "reduce_sum", "--db", str(db.path), "--size", "n=4096",
                               "--format", "kerneltuner", "-o", str(out)])
    assert res.exit_code == 0 and "wrote 6 records of reduce_sum n=4096" in res.output, res.output
    fresh = TuningDB(tmp_path / "fresh.jsonl")
    res = runner.invoke(main, ["tune-db", "import", str(out), "--db", str(fresh.path)])
    assert res.exit_code == 0 and "imported 6 records" in res.output, res.output
    res = runner.invoke(main, ["tune-db", "import", str(out), "--db", str(fresh.path)])
    assert "imported 0 records" in res.output and "(6 were there already)" in res.output
    assert [r.key() for r in fresh.records()] == [r.key() for r in db.records()[:6]]
    kt, _ = kernel_tuner_wrote(tmp_path)
    res = runner.invoke(main, ["tune-db", "import", str(kt), "--db", str(fresh.path)])
    assert res.exit_code == 2 and "name the op it tunes (--op)" in res.output
    res = runner.invoke(main, ["tune-db", "import", str(kt), "--op", "reduce_sum", "--arch", "sm_80",
                               "--db", str(fresh.path)])
    assert res.exit_code == 0 and "imported 3 records" in res.output, res.output
    assert {r.arch for r in fresh.records()[6:]} == {"sm_80"}
    res = runner.invoke(main, ["tune-db", "export", "sgemm", "--db", str(db.path), "-o", str(out)])
    assert res.exit_code == 2 and "no records of sgemm" in res.output
