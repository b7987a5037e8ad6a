"""Shape suites (`kernelgen bench --suite`): every shipped line parses into a legal problem of its op, a
bad suite is refused before any GPU work with its line named, and on a GPU a small suite runs end to end."""
import json

import pytest
from click.testing import CliRunner

from kernelgen import suites
from kernelgen.bench import geomean, suite_summary
from kernelgen.cli import main, parse_size
from kernelgen.errors import UsageError
from kernelgen.ops import get_op


@pytest.mark.parametrize("name", suites.names())
def test_every_shipped_entry_is_a_legal_problem(name):
    suite = suites.load(name)
    problems = [parse_size(get_op(e.op), e.size, False, e.dtype, None) for e in suite.entries]
    assert len({(e.op, str(p)) for e, p in zip(suite.entries, problems)}) == len(problems), "a shape is listed twice"


def test_deepbench_gemm_is_read_row_major():
    """DeepBench's column-major (m, n, k, a_t, b_t) is the row-major product M=n, N=m with the operands swapped."""
    suite = suites.load("deepbench-gemm-train")
    assert len(suite.entries) == 160 and suite.ops() == ("sgemm",)
    by_comment = {e.line: e.size for e in suite.entries}
    text = suite.path.read_text().splitlines()
    row = next(i for i, t in enumerate(text, 1) if "(1760, 7133, 1760, N, T)" in t)   # b_t: row-major A is B^T
    assert by_comment[row] == "M=7133,N=1760,K=1760,layout=TN"
    row = next(i for i, t in enumerate(text, 1) if "(512, 8, 500000, T, N)" in t)      # a_t: row-major B is A^T
    assert by_comment[row] == "M=8,N=512,K=500000,layout=NT"


def test_the_fp16_deepbench_list_is_the_fp32_one_on_tensor_cores():
    fp32, fp16 = suites.load("deepbench-gemm-train"), suites.load("deepbench-gemm-train-fp16")
    assert fp16.ops() == ("gemm",) and {e.dtype for e in fp16.entries} == {"float16"}
    assert [e.size for e in fp16.entries] == [e.size for e in fp32.entries]


def test_llm_suite_covers_every_token_count_of_each_model():
    suite = suites.load("llm-layers")
    assert set(suite.ops()) == {"gemm", "layernorm", "softmax"}
    tokens = {int(e.size.split(",")[0].split("=")[1]) for e in suite.entries}
    assert tokens == {1, 128, 2048, 8192}
    assert all(e.dtype == "bfloat16" for e in suite.entries)


def test_shards_partition_the_suite():
    suite = suites.load("deepbench-conv-train")
    parts = [suite.shard(i, 3) for i in (1, 2, 3)]
    assert sorted(e.line for p in parts for e in p) == sorted(e.line for e in suite.entries)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


@pytest.mark.parametrize("text, needle", [
    ("sgemm\n", "line 1: 'sgemm' is not `OP SIZE [DTYPE]`"),
    ("# c\nsgemm M=1,N=2,K=3 float64\n", "line 2: type 'float64' is not one of float32, float16, bfloat16"),
    ("sgemm M=1, N=2\n", "is not `OP SIZE [DTYPE]`"),
    ("# only comments\n\n", "lists no problems"),
])
def test_malformed_suite_files_name_the_line(tmp_path, text, needle):
    f = tmp_path / "mine.txt"
    f.write_text(text)
    with pytest.raises(UsageError, match=None) as e:
        suites.load(str(f))
    assert needle in str(e.value)


@pytest.mark.parametrize("text, needle", [
    ("sgemm M=1,N=2,K=3\nnope M=1\n", "mine.txt line 2: unknown op 'nope'"),
    ("sgemm M=0,N=2,K=3\n", "mine.txt line 1: sgemm: size M=0 is illegal"),
])
def test_bad_entries_stop_the_run_before_the_gpu(tmp_path, text, needle):
    f = tmp_path / "mine.txt"
    f.write_text(text)
    r = CliRunner().invoke(main, ["bench", "--suite", str(f)])
    assert r.exit_code == 2 and needle in r.output, r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("args, needle", [
    (["sgemm", "--suite", "llm-layers"], "takes no OP"),
    (["--suite", "llm-layers", "--dtype", "float16"], "takes no --dtype"),
    (["--shard", "1/2"], "give --suite NAME too"),
    (["--suite", "llm-layers", "--shard", "0/2"], "--shard '0/2' must be I/N"),
    (["sgemm", "--ladder", "-k", "bm=64"], "takes no --knob or --schedule"),
    ([], "bench needs an OP"),
])
def test_suite_options_are_checked(args, needle):
    r = CliRunner().invoke(main, ["bench", *args])
    assert r.exit_code == 2 and needle in r.output, r.output


def test_summary_counts_slow_refused_and_wrong():
    rows = [{"op": "sgemm", "problem": f"M={i}", "vs_vendor": v, "valid": ok}
            for i, (v, ok) in enumerate([(2.0, "ok"), (0.5, "ok"), (None, "refused"), (1.0, "WRONG")])]
    (line,) = suite_summary(rows)
    assert "4 shapes, 2 timed" in line and f"geometric mean {geomean([2.0, 0.5]):.2f}x" in line
    assert "min 0.50x (M=1), 1 under 0.8x" in line and "1 refused, 1 wrong" in line


@pytest.mark.gpu
def test_a_small_suite_runs_on_the_gpu(tmp_path):
    f = tmp_path / "small.txt"
    f.write_text("sgemm M=127,N=33,K=1000\nsgemm M=1,N=64,K=7\nsoftmax rows=3,cols=50257\nlayernorm rows=5,cols=768 float16\n")
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["bench", "--suite", str(f), "--reps", "3", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "sgemm: 2 shapes, 2 timed against the vendor" in r.output
    doc = json.loads(out.read_text())
    assert len(doc["runs"]) == 4 and all(run["rows"][0]["valid"] == "ok" for run in doc["runs"])


def test_a_suite_reads_the_tuning_database_given_checked_before_the_gpu(tmp_path):
    f = tmp_path / "small.txt"
    f.write_text("softmax rows=3,cols=50257\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a record\n{}\n")     # (a torn last line alone would be skipped)
    r = CliRunner().invoke(main, ["bench", "--suite", str(f), "--db", str(bad)])
    assert r.exit_code == 2 and str(bad) in r.output and "takes no" not in r.output, r.output
    assert "Traceback" not in r.output


@pytest.mark.gpu
def test_a_suite_takes_its_defaults_from_the_database_given(tmp_path):
    from kernelgen import gpu
    from kernelgen.tune.db import Record, TuningDB
    op = get_op("softmax")
    sched = op.schedule(algo="online")
    db = TuningDB(tmp_path / "mine.jsonl")
    db.append(Record.make("softmax", "rows=3,cols=50257", gpu.device().arch, gpu.device().gpu, sched.to_dict(), {},
                          "ok", 1.0))
    f = tmp_path / "small.txt"
    f.write_text("softmax rows=3,cols=50257\nsoftmax rows=5,cols=1000\n")
    r = CliRunner().invoke(main, ["bench", "--suite", str(f), "--reps", "3", "--db", str(db.path)])
    assert r.exit_code == 0, r.output
    lines = [l for l in r.output.splitlines() if "rows=" in l]
    assert "your tuning database" in lines[0] and "your tuning database" not in lines[1], r.output
