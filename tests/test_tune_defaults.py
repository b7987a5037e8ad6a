"""Tuned defaults (tune/defaults.py): your tuning database, then the GPU's tuned table (the nearest problem of
the same kind, if legal), then the heuristic; the table builder and its atomic write; the CLI saying which."""
import dataclasses
import json
import os

import pytest
from click.testing import CliRunner

from kernelgen.cli import main
from kernelgen.errors import UsageError
from kernelgen.ops import get_op
from kernelgen.target import target
from kernelgen.tune import defaults
from kernelgen.tune.db import MemoryDB, Record, TuningDB
from kernelgen.tune.defaults import (MAX_DISTANCE, Entry, Table, build_table, choose_default, distance, gpu_key,
                                     nearest, read_table, shipped_table, write_table)

SM90 = target("sm_90")          # stands for the H100 without a GPU: table key h100
SOFTMAX = get_op("softmax")
REGISTERS = SOFTMAX.default_schedule()     # rows in registers: cols <= 4096
SPLIT = SOFTMAX.schedule(algo="online")    # any length


def entry(op, problem, sched, time_us=10.0, dtype="float32", arch="sm_90a"):
    return Entry(op, problem, dtype, arch, sched, time_us)


def table(*entries):
    return Table("h100", "H100 80GB HBM3", tuple(entries))


def softmax(rows, cols):
    return SOFTMAX.problem({"rows": rows, "cols": cols})


def record(op, problem, sched, time_us, arch="sm_90", gpu="H100 80GB HBM3", status="ok"):
    return Record.make(op, problem, arch, gpu, sched.to_dict(), {}, status, time_us if status == "ok" else None)


def test_gpu_keys_name_the_chip():
    assert [gpu_key(n) for n in ("H100 80GB HBM3", "H100 PCIe", "NVIDIA H100", "A100-SXM4-80GB", "L40S")] == \
        ["h100", "h100", "nvidia-h100", "a100", "l40s"]
    assert gpu_key(SM90.gpu) == "h100" and gpu_key(target("sm_80").gpu) == "a100"


def test_distance_is_euclidean_over_log2_of_one_plus_size():
    assert distance(softmax(1023, 4095), softmax(2047, 4095)) == pytest.approx(1.0)
    assert distance(softmax(1023, 4095), softmax(2047, 8191)) == pytest.approx(2 ** 0.5)
    assert distance(softmax(7, 100), softmax(7, 100)) == 0.0


def test_nearest_takes_the_closest_entry_of_the_same_op_types_and_layout():
    sg = get_op("sgemm")
    s = sg.default_schedule()
    t = table(entry("sgemm", "M=1024,N=1024,K=1024", s), entry("sgemm", "M=1200,N=1200,K=1200", s),
              entry("sgemm", "M=1100,N=1100,K=1100,layout=NT", s),      # nearer, but another layout
              entry("softmax", "rows=1100,cols=1100", REGISTERS))        # another op
    p = sg.problem({"M": 1100, "N": 1100, "K": 1100})
    assert nearest(sg, p, SM90, t).problem == "M=1024,N=1024,K=1024"    # 0.103 per dim beats 0.125 per dim
    nt = sg.problem({"M": 1100, "N": 1100, "K": 1100}, layout="NT")
    assert nearest(sg, nt, SM90, t).problem == "M=1100,N=1100,K=1100,layout=NT"
    assert nearest(sg, sg.problem({"M": 2048, "N": 2048, "K": 2048}), SM90, t) is None    # 0.77 per dim: too far
    assert nearest(sg, sg.problem({"M": 64, "N": 64, "K": 64}), SM90, t) is None          # beyond MAX_DISTANCE
    assert distance(sg.problem({"M": 64, "N": 64, "K": 64}), sg.problem({"M": 1024, "N": 1024, "K": 1024})) > MAX_DISTANCE
    assert nearest(sg, p, target("sm_80"), t) is None                    # measured on another compute capability


def test_nearest_keeps_element_types_apart():
    g = get_op("gemm")
    s = g.default_schedule()
    t = table(entry("gemm", "M=1024,N=1024,K=1024:f16", s, dtype="float16"),
              entry("gemm", "M=1024,N=1024,K=1024:bf16", s, dtype="bfloat16"))
    p = g.problem({"M": 1000, "N": 1000, "K": 1000}, dtype="bfloat16")
    assert nearest(g, p, SM90, t).problem == "M=1024,N=1024,K=1024:bf16"


def test_the_table_entry_is_taken_where_legal_and_its_source_says_so():
    t = table(entry("softmax", "rows=4096,cols=4096", REGISTERS), entry("softmax", "rows=64,cols=64", SPLIT))
    sched, source = choose_default(SOFTMAX, softmax(4096, 3600), SM90, MemoryDB(), t)
    assert sched == REGISTERS and source == "tuned table h100 (nearest: rows=4096,cols=4096)"


def test_an_entry_the_heuristic_matched_on_its_own_problem_is_passed_over():
    """A short tune can end slower than schedule_for; an entry that records so teaches nothing."""
    p = softmax(4096, 3600)
    for heuristic_us, source in ((12.0, "tuned table h100 (nearest: rows=4096,cols=4096)"), (10.0, "heuristic"),
                                 (8.0, "heuristic"), (None, "tuned table h100 (nearest: rows=4096,cols=4096)")):
        e = dataclasses.replace(entry("softmax", "rows=4096,cols=4096", REGISTERS, time_us=10.0), heuristic_us=heuristic_us)
        assert choose_default(SOFTMAX, p, SM90, MemoryDB(), table(e))[1] == source


def test_an_illegal_nearest_schedule_falls_back_to_the_heuristic():
    """The nearest entry keeps rows of 4096 in registers; rows of 4500 do not fit, so it is skipped."""
    t = table(entry("softmax", "rows=4096,cols=4096", REGISTERS))
    p = softmax(4096, 4500)
    assert nearest(SOFTMAX, p, SM90, t).problem == "rows=4096,cols=4096"
    sched, source = choose_default(SOFTMAX, p, SM90, MemoryDB(), t)
    assert source == "heuristic" and sched == SOFTMAX.schedule_for(p, SM90) and sched != REGISTERS


def test_your_database_beats_the_table_which_beats_the_heuristic():
    p = softmax(4096, 3600)
    t = table(entry("softmax", "rows=4096,cols=4096", REGISTERS))
    mine = SOFTMAX.schedule(algo="online", threads=128)
    db = MemoryDB([record("softmax", str(p), mine, 5.0), record("softmax", str(p), SPLIT, 9.0)])
    assert choose_default(SOFTMAX, p, SM90, db, t) == (mine, "your tuning database (<memory>)")
    other_arch = MemoryDB([record("softmax", str(p), mine, 5.0, arch="sm_80")])
    other_size = MemoryDB([record("softmax", "rows=4096,cols=3601", mine, 5.0)])
    for db in (other_arch, other_size, MemoryDB()):
        assert choose_default(SOFTMAX, p, SM90, db, t) == (REGISTERS, "tuned table h100 (nearest: rows=4096,cols=4096)")
    assert choose_default(SOFTMAX, p, SM90, MemoryDB(), table())[1] == "heuristic"


def test_an_illegal_record_in_your_database_is_passed_over():
    p = softmax(4096, 6000)                  # the registers schedule cannot take it
    t = table(entry("softmax", "rows=4096,cols=5500", SPLIT))
    db = MemoryDB([record("softmax", str(p), REGISTERS, 1.0)])
    assert choose_default(SOFTMAX, p, SM90, db, t) == (SPLIT, "tuned table h100 (nearest: rows=4096,cols=5500)")


def test_the_default_database_is_read_from_its_path(tmp_path, monkeypatch):
    path = tmp_path / "mine.jsonl"
    monkeypatch.setenv("KERNELGEN_TUNING_DB", str(path))
    p = softmax(100, 100)
    TuningDB(path).append(record("softmax", str(p), SPLIT, 3.0))
    assert choose_default(SOFTMAX, p, SM90, table=table()) == (SPLIT, f"your tuning database ({path})")


def test_a_gpu_without_a_table_has_none_and_the_shipped_h100_table_is_legal():
    assert shipped_table("no-such-gpu") is None
    h100 = shipped_table("h100")
    assert h100 is not None and h100.entries and shipped_table("h100") is h100      # read once
    sm90a = target("sm_90a")
    for e in h100.entries:                   # each entry is its own problem's choice on the H100
        op = get_op(e.op)
        inp, _, out = e.dtype.partition("->")
        from kernelgen.sizes import parse_size
        p = parse_size(op, e.problem, False, inp, out or None)
        want = (e.schedule, f"tuned table h100 (nearest: {e.problem})") if e.beats_heuristic else \
            (op.schedule_for(p, sm90a), "heuristic")
        assert choose_default(op, p, sm90a, MemoryDB()) == want
    assert sum(e.beats_heuristic for e in h100.entries) >= len(h100.entries) // 2


# -- building tables -------------------------------------------------------------------------------------
def test_build_table_keeps_the_fastest_accepted_record_per_problem_of_one_gpu():
    big = SOFTMAX.schedule(algo="online", threads=128)   # the fastest, but its latest record failed
    recs = [record("softmax", "rows=4096,cols=4096", SPLIT, 9.0, arch="sm_90a"),
            record("softmax", "rows=4096,cols=4096", REGISTERS, 7.0, arch="sm_90a"),
            record("softmax", "rows=4096,cols=4096", big, 6.0, arch="sm_90a"),
            record("softmax", "rows=4096,cols=4096", big, None, arch="sm_90a", status="wrong_answer"),  # latest: failed
            record("softmax", "rows=4096,cols=4096", SPLIT, 1.0, arch="sm_90a", gpu="A100-SXM4-80GB"),  # another GPU
            record("softmax", "rows=4096,cols=8192", REGISTERS, 2.0, arch="sm_90a"),   # no longer fits: refused
            record("softmax", "rows=4096,cols=8192", SPLIT, 4.0, arch="sm_90a")]
    doc = build_table(recs, "H100", "kernelgen tune-db table ...")
    assert doc["format"] == "kernelgen-tuned/1" and doc["key"] == "h100" and doc["gpu"] == "H100 80GB HBM3"
    got = {e["problem"]: (e["schedule"], e["time_us"]) for e in doc["entries"]}
    assert got == {"rows=4096,cols=4096": (REGISTERS.to_dict(), 7.0), "rows=4096,cols=8192": (SPLIT.to_dict(), 4.0)}
    e = doc["entries"][0]
    assert e["vendor_us"] is None and e["command"] == "kernelgen tune softmax --size rows=4096,cols=4096"
    assert build_table(recs, "L40S")["entries"] == []


def test_write_table_is_atomic_and_reads_back(tmp_path, monkeypatch):
    doc = build_table([record("softmax", "rows=64,cols=64", SPLIT, 3.0, arch="sm_90a")], "H100")
    path = tmp_path / "h100.json"
    write_table(doc, path)
    t = read_table(path)
    assert t.key == "h100" and t.entries == (Entry("softmax", "rows=64,cols=64", "float32", "sm_90a", SPLIT, 3.0,
                                                   date=doc["entries"][0]["date"], command=doc["entries"][0]["command"]),)
    (line,) = [ln for ln in path.read_text().splitlines() if '"problem"' in ln]     # one entry a line
    assert json.loads(line.strip().rstrip(",")) == doc["entries"][0]
    before = path.read_bytes()

    def fail(src, dst):
        assert os.path.exists(src) and os.path.dirname(src) == str(tmp_path)    # written beside, then renamed
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", fail)
    doc["entries"] = []
    with pytest.raises(OSError):
        write_table(doc, path)
    assert path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["h100.json"]


def test_a_bad_table_is_a_usage_error(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text("{}")
    with pytest.raises(UsageError, match="is not a kernelgen-tuned/1 file"):
        read_table(bad)
    bad.write_text(json.dumps({"format": "kernelgen-tuned/1", "entries": [{"op": "softmax"}]}))
    with pytest.raises(UsageError, match="entry 1"):
        read_table(bad)


# -- the CLI ---------------------------------------------------------------------------------------------
@pytest.fixture
def h100_table(tmp_path, monkeypatch):
    """A shipped-table folder holding one h100 table: softmax rows=4096,cols=4096 kept in registers."""
    folder = tmp_path / "tuned"
    folder.mkdir()
    write_table(build_table([record("softmax", "rows=4096,cols=4096", REGISTERS, 7.0, arch="sm_90a")], "H100"),
                folder / "h100.json")
    monkeypatch.setattr(defaults, "TABLES", folder)
    shipped_table.cache_clear()
    yield folder
    shipped_table.cache_clear()


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_emit_for_a_size_says_where_its_schedule_came_from(tmp_path, monkeypatch, h100_table):
    monkeypatch.chdir(tmp_path)
    r = invoke("emit", "softmax", "--size", "rows=4096,cols=3600", "-o", "out")
    assert r.exit_code == 0, r.output
    assert "schedule for rows=4096,cols=3600 from tuned table h100 (nearest: rows=4096,cols=4096)" in r.output
    r = invoke("emit", "softmax", "--size", "rows=4096,cols=3600", "--arch", "sm_80", "-o", "out")   # no A100 table
    assert r.exit_code == 0 and "from heuristic" in r.output, r.output
    db = tmp_path / "mine.jsonl"
    TuningDB(db).append(record("softmax", "rows=4096,cols=3600", SPLIT, 3.0))
    r = invoke("emit", "softmax", "--size", "rows=4096,cols=3600", "--db", str(db), "-o", "out")
    assert r.exit_code == 0 and f"from your tuning database ({db})" in r.output, r.output
    r = CliRunner().invoke(main, ["emit", "softmax", "--db", str(db), "-o", "out"])     # no size: nothing to choose
    assert r.exit_code == 2 and "--db is read with --best" in r.output


@pytest.mark.emulate
def test_run_prints_its_source(tmp_path, monkeypatch, h100_table):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "mine.jsonl"
    TuningDB(db).append(record("softmax", "rows=5,cols=300", SPLIT, 3.0))
    r = invoke("run", "softmax", "--backend", "emulate", "--size", "rows=5,cols=300", "--db", str(db))
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert f"source   your tuning database ({db})" in lines and f"schedule {SPLIT}" in lines
    r = invoke("run", "softmax", "--backend", "emulate", "--size", "rows=5,cols=300", "-k", "threads=128")
    assert r.exit_code == 0 and "source   --knob threads=128" in r.output.splitlines(), r.output


def test_tune_db_table_writes_a_table_from_several_databases(tmp_path):
    a, b, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "t.json"
    TuningDB(a).append(record("softmax", "rows=64,cols=64", SPLIT, 3.0, arch="sm_90a"))
    TuningDB(b).append(record("softmax", "rows=64,cols=64", REGISTERS, 2.0, arch="sm_90a"))
    TuningDB(b).append(record("softmax", "rows=128,cols=64", SPLIT, 2.0, arch="sm_90a", gpu="A100-SXM4-80GB"))
    r = invoke("tune-db", "table", "--db", str(a), "--db", str(b), "--gpu", "H100", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert f"wrote {out}: 1 entries for h100 (H100 80GB HBM3): softmax 1" in r.output
    (e,) = read_table(out).entries
    assert (e.problem, e.schedule, e.time_us) == ("rows=64,cols=64", REGISTERS, 2.0)
    r = CliRunner().invoke(main, ["tune-db", "table", "--db", str(a), "--gpu", "L40S", "-o", str(tmp_path / "l.json")])
    assert r.exit_code == 2 and "no successful record of any op on a GPU named 'L40S' (key l40s)" in r.output
    assert not (tmp_path / "l.json").exists()
