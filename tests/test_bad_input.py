"""Bad and odd inputs, as a new user types them: every one is refused with one line naming the value,
the limit and what is allowed; exit 2 from the CLI, a KernelgenError from Python; never a traceback,
never a silent change of meaning, and nothing written by a command that fails.

Each case is (id, what, exit code, key words): `what` is the CLI's arguments (files from the `files`
fixture are `{name}` placeholders) or a Python callable taking the files dict.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelgen.cli import main
from kernelgen.errors import KernelgenError
from kernelgen.ops import get_op
from kernelgen.schedule import Schedule, schedule

ROOT = Path(__file__).resolve().parent.parent


def _step(**step):
    return json.dumps({"op": "sgemm", "steps": [step]})


SPLIT_I = {"prim": "split", "loop": "i", "factors": [128, 8]}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    f = {"dir": str(d), "a_file": str(d / "a_file.txt")}
    Path(f["a_file"]).write_text("not a folder\n")
    schedules = {
        "factor_str": _step(prim="split", loop="i", factors=["256"]),
        "factor_null": _step(prim="split", loop="i", factors=[None]),
        "factor_float": _step(prim="split", loop="i", factors=[256.0]),
        "factor_bool": _step(prim="split", loop="i", factors=[True]),
        "factors_not_list": _step(prim="split", loop="i", factors=256),
        "steps_not_list": json.dumps({"op": "sgemm", "steps": {"prim": "split"}}),
        "not_json": "{op: sgemm",
        "json_array": "[1, 2]",
        "unknown_prim": _step(prim="tile_it", loop="i"),
        "missing_prim": _step(loop="i", factors=[8]),
        "unknown_key": _step(prim="bind", loop="i.0", axis="blockIdx.y", colour="red"),
        "missing_loop": _step(prim="bind", axis="blockIdx.y"),
        "unknown_loop": json.dumps({"op": "sgemm", "steps": [SPLIT_I, {"prim": "bind", "loop": "q.1",
                                                                        "axis": "threadIdx.x"}]}),
        "bind_before_split": json.dumps({"op": "sgemm", "steps": [{"prim": "bind", "loop": "i.0", "axis": "blockIdx.y"},
                                                                   SPLIT_I]}),
        "loop_past_split": json.dumps({"op": "sgemm", "steps": [SPLIT_I, {"prim": "unroll", "loop": "i.5",
                                                                           "factor": 0}]}),
        "unknown_buffer": json.dumps({"op": "sgemm", "steps": [{"prim": "cache_read", "buffer": "Z", "scope": "shared"}]}),
        "other_op": json.dumps({"op": "softmax", "steps": []}),
        "op_not_str": json.dumps({"op": 5, "steps": []}),
        "top_key": json.dumps({"op": "sgemm", "steps": [], "extra": 1}),
        "nan": '{"op": "sgemm", "steps": [{"prim": "annotate", "key": "x", "value": NaN}]}',
        "axis_int": _step(prim="bind", loop="i.0", axis=5),
        "step_not_object": json.dumps({"op": "sgemm", "steps": [5]}),
        "split_dotted": _step(prim="split", loop="i.0", factors=[8]),
        "split_no_factors": _step(prim="split", loop="i", factors=[]),
        "reduce_threads_96": json.dumps({"op": "reduce_sum", "steps": [
            {"prim": "split", "loop": "i", "factors": [1536, 384, 4]}, {"prim": "vectorize", "target_name": "i.3",
                                                                         "width": 4}]}),
        "reduce_grid_stride_3": json.dumps({"op": "reduce_sum", "steps": [
            {"prim": "annotate", "key": "grid_stride", "value": 3}]}),
        "sgemm_copy_naive": json.dumps({"op": "sgemm", "steps": [
            {"prim": "split", "loop": "i", "factors": [16]}, {"prim": "split", "loop": "j", "factors": [16]},
            {"prim": "annotate", "key": "copy", "value": "cp_async"}]}),
    }
    for name, text in schedules.items():
        p = d / f"{name}.json"
        p.write_text(text)
        f[name] = str(p)
    (d / "bad_utf8.json").write_bytes(b'{"op": "sgemm\xff\xfe", "steps": []}')
    f["bad_utf8"] = str(d / "bad_utf8.json")
    for name, code in {"raises": "x = 1 / 0\n", "no_var": "y = 1\n", "exits": "import sys\nsys.exit(3)\n",
                       "syntax": "def (:\n"}.items():
        (d / f"{name}.py").write_text(code)
        f[f"py_{name}"] = str(d / f"{name}.py")
    record = {"op": "reduce_sum", "problem": "n=8", "dtype": "float32", "arch": "sm_90", "gpu": "H100", "version": "0.1.0",
              "schedule": {"op": "reduce_sum", "steps": []}, "knobs": {}, "status": "ok", "time_us": 1.5, "detail": "",
              "kernel": "", "timestamp": 0.0}
    dbs = {"db_time_str": json.dumps(dict(record, time_us="fast")) + "\n",
           "db_status": json.dumps(dict(record, status="great")) + "\n",
           "db_missing": json.dumps({k: v for k, v in record.items() if k != "op"}) + "\n",
           "db_garbage": "hello\n" + json.dumps(record) + "\n",
           "db_array": "[1, 2]\n",
           "db_empty": ""}
    for name, text in dbs.items():
        (d / f"{name}.jsonl").write_text(text)
        f[name] = str(d / f"{name}.jsonl")
    (d / "db_utf8.jsonl").write_bytes(b"\xff\xfe\x00junk\n" + json.dumps(record).encode() + b"\n")
    f["db_utf8"] = str(d / "db_utf8.jsonl")
    (d / "db_dir").mkdir()
    f["db_dir"] = str(d / "db_dir")
    return f


def _sgemm():
    return get_op("sgemm")


def _validate(**kw):
    from kernelgen.validate import validate
    op = get_op("reduce_sum")
    args = dict(backend="emulate")
    args.update(kw)
    problem = args.pop("problem", op.problem({"n": 100}))
    return validate(op, op.default_schedule(), problem, **args)


def _plan(name, knobs, sizes):
    op = get_op(name)
    return op.plan(op.kernel(op.schedule(**knobs)), op.problem(sizes))


def _batched_gemm():
    op = get_op("gemm")
    return op.for_problem(op.problem({"M": 8, "N": 8, "K": 64}, batch=2))


def _kernel(sched):
    return lambda f: _sgemm().kernel(sched)


def _memory(f):
    os.environ["KERNELGEN_MAX_HOST_BYTES"] = "1000000"
    try:
        return _validate(problem=get_op("reduce_sum").problem({"n": 10 ** 9}))
    finally:
        del os.environ["KERNELGEN_MAX_HOST_BYTES"]


def _db(name):
    def read(f):
        from kernelgen.tune.db import TuningDB
        return TuningDB(f[name]).records()
    return read


E = "emulate"
CASES = [
    # -- ops, knobs --------------------------------------------------------------------------------
    ("unknown op", ["list", "nope"], 2, ["unknown op 'nope'", "sgemm"]),
    ("knob not a choice (layout)", ["emit", "sgemm", "-k", "layout=banana"], 2,
     ["layout='banana'", "contiguous, strided, warp"]),
    ("knob not a choice (bm)", ["emit", "sgemm", "-k", "bm=1000000"], 2, ["bm=1000000", "16, 24, 32, 40, 48, 56, 64, 128, 256"]),
    ("gemv threads=2048", ["emit", "gemv", "-k", "threads=2048"], 2, ["threads=2048", "64, 128, 256, 512, 1024"]),
    ("softmax algo", ["emit", "softmax", "-k", "algo=banana"], 2, ["algo='banana'", "three_pass, online, registers, split"]),
    ("layernorm algo", ["emit", "layernorm", "-k", "algo=banana"], 2, ["algo='banana'", "two_pass, welford, registers"]),
    ("knob not an int", ["emit", "reduce_sum", "-k", "threads=abc"], 2, ["threads='abc'", "not an integer", "128"]),
    ("knob float for int", ["emit", "reduce_sum", "-k", "threads=256.0"], 2, ["threads='256.0'", "not an integer"]),
    ("knob without value", ["emit", "reduce_sum", "-k", "threads"], 2, ["'threads'", "NAME=VALUE"]),
    ("knob without name", ["emit", "reduce_sum", "-k", "=5"], 2, ["NAME=VALUE", "threads"]),
    ("unknown knob", ["emit", "reduce_sum", "-k", "bogus=1"], 2, ["unknown knob 'bogus'", "threads"]),
    ("knob twice", ["emit", "reduce_sum", "-k", "threads=256", "-k", "threads=512"], 2, ["threads", "twice"]),
    ("bool knob", ["emit", "transpose", "-k", "staged=maybe"], 2, ["staged='maybe'", "true or false"]),
    ("knob and step", ["emit", "reduce_sum", "-k", "threads=256", "--step", "1"], 2, ["choose one of"]),
    # off-choice numbers: a closed list names its values, a range its rule; the same from a schedule file
    ("gemv threads=96", ["emit", "gemv", "-k", "threads=96"], 2,
     ["threads=96", "not one of its choices", "32, 64, 128, 256, 512, 1024"]),
    ("elementwise threads=96", ["emit", "elementwise", "-k", "threads=96"], 2, ["threads=96", "32, 64, 128"]),
    ("conv2d threads=96", ["emit", "conv2d", "-k", "algo=direct", "-k", "threads=96"], 2, ["threads=96", "32, 64"]),
    ("sgemm bm=96", ["emit", "sgemm", "-k", "bm=96"], 2, ["bm=96", "16, 24, 32, 40, 48, 56, 64, 128, 256"]),
    ("transpose rows=3", ["emit", "transpose", "-k", "rows=3"], 2, ["rows=3", "1, 2, 4, 8, 16, 32, 64"]),
    ("staged_load rows=1000", ["emit", "staged_load", "-k", "rows=1000"], 2, ["rows=1000", "32, 64, 128"]),
    ("reduce grid_stride=3", ["emit", "reduce_sum", "-k", "grid_stride=3"], 2, ["grid_stride=3", "0, 1, 2, 4, 8, 16, 32"]),
    ("softmax l2_batch_mb=12", ["emit", "softmax", "-k", "algo=split", "-k", "l2_batch_mb=12"], 2,
     ["l2_batch_mb=12", "0, 8, 16, 32"]),
    ("range knob above", ["emit", "softmax", "-k", "items=33"], 2, ["items=33", "outside its range", "an integer in 1..32"]),
    ("range knob below", ["emit", "reduce_sum", "-k", "items=0"], 2, ["items=0", "outside its range", "1..16"]),
    ("range knob off step", ["emit", "gemm", "-k", "wn=12"], 2, ["wn=12", "a multiple of 8 in 8..256"]),
    ("knob that does not apply", ["emit", "sgemm", "-k", "shared=false", "-k", "stages=3"], 2,
     ["stages=3", "no effect with shared=False", "applies with shared True"]),
    ("schedule off-choice split", ["emit", "reduce_sum", "--schedule", "{reduce_threads_96}"], 2,
     ["split(i)", "96", "knob threads of reduce_sum", "allowed: 32, 64, 128"]),
    ("schedule off-choice annotate", ["emit", "reduce_sum", "--schedule", "{reduce_grid_stride_3}"], 2,
     ["annotate(grid_stride)", "3", "allowed: 0, 1, 2, 4, 8, 16, 32"]),
    ("schedule step that does not apply", ["emit", "sgemm", "--schedule", "{sgemm_copy_naive}"], 2,
     ["annotate(copy)", "'cp_async'", "applies only with shared True"]),
    # -- steps, archs, options ---------------------------------------------------------------------
    ("step 0", ["emit", "reduce_sum", "--step", "0"], 2, ["--step", "0", "x>=1"]),
    ("step -1", ["emit", "reduce_sum", "--step", "-1"], 2, ["--step", "-1", "x>=1"]),
    ("step too big", ["emit", "reduce_sum", "--step", "99"], 2, ["--step 99 is out of range", "1.."]),
    ("step not a number", ["emit", "reduce_sum", "--step", "abc"], 2, ["--step", "'abc'", "not a valid integer"]),
    ("arch sm_12", ["emit", "reduce_sum", "--arch", "sm_12"], 2, ["'sm_12' is not a target", "sm_70", "sm_120"]),
    ("arch sm_999", ["emit", "reduce_sum", "--arch", "sm_999"], 2, ["'sm_999' is not a target"]),
    ("arch banana", ["emit", "reduce_sum", "--arch", "banana"], 2, ["'banana' is not a target"]),
    ("arch empty", ["emit", "reduce_sum", "--arch", ""], 2, ["'' is not a target"]),
    ("inspect arch", ["inspect", "reduce_sum", "--arch", "sm_11"], 2, ["'sm_11' is not a target"]),
    ("run arch", ["run", "reduce_sum", "--backend", E, "--arch", "banana"], 2, ["'banana' is not a target"]),
    ("run backend", ["run", "reduce_sum", "--backend", "cuda"], 2, ["--backend", "'cuda'", "auto", "gpu", "emulate"]),
    ("run order", ["run", "reduce_sum", "--backend", E, "--order", "sideways"], 2, ["--order", "'sideways'", "forward"]),
    ("run reps 0", ["run", "reduce_sum", "--backend", E, "--reps", "0"], 2, ["--reps", "0", "1<=x"]),
    ("seed -1", ["run", "reduce_sum", "--backend", E, "--seed", "-1"], 2, ["--seed", "-1", "0<=x<=2147483647"]),
    ("seed 2^31", ["run", "reduce_sum", "--backend", E, "--seed", str(2 ** 31)], 2, ["--seed", "2147483648"]),
    ("seed text", ["run", "reduce_sum", "--backend", E, "--seed", "abc"], 2, ["--seed", "'abc'"]),
    ("tune seed", ["tune", "reduce_sum", "--seed", "-1"], 2, ["--seed", "-1", "0<=x"]),
    ("tune budget 0", ["tune", "reduce_sum", "--budget", "0"], 2, ["--budget", "0", "x>=1"]),
    ("tune max-ms", ["tune", "reduce_sum", "--max-ms", "-5"], 2, ["--max-ms", "-5"]),
    ("timing", ["bench", "softmax", "--timing", "fast"], 2, ["--timing 'fast'", "events, graph, auto"]),
    ("dtype", ["run", "reduce_sum", "--backend", E, "--dtype", "float64"], 2, ["dtype 'float64' is unknown", "float32"]),
    ("unknown command", ["frobnicate"], 2, ["No such command", "frobnicate"]),
    ("unknown option", ["emit", "reduce_sum", "--frob"], 2, ["No such option", "--frob"]),
    ("no op", ["emit"], 2, ["name an op", "--all"]),
    ("all with an op", ["emit", "--all", "reduce_sum", "-o", "{dir}/all1"], 2, ["--all", "takes no op"]),
    ("db without best", ["emit", "reduce_sum", "--db", "x.jsonl"], 2, ["--db", "--best"]),
    ("size with a knob", ["emit", "reduce_sum", "--size", "n=5", "-k", "threads=256"], 2, ["--size", "--knob"]),
    # -- sizes -------------------------------------------------------------------------------------
    ("size 4x4 for sgemm", ["run", "sgemm", "--backend", E, "--size", "4x4"], 2, ["leaves out K", "M, N, K"]),
    ("size repeated", ["run", "reduce_sum", "--backend", E, "--size", "n=5,n=6"], 2, ["gives n twice"]),
    ("size repeated positional", ["run", "sgemm", "--backend", E, "--size", "4,M=5,6,7"], 2, ["M twice"]),
    ("size text", ["run", "reduce_sum", "--backend", E, "--size", "n=abc"], 2, ["n='abc'", "not a whole number"]),
    ("size float", ["run", "reduce_sum", "--backend", E, "--size", "n=1.5"], 2, ["n='1.5'", "not a whole number"]),
    ("size exponent", ["run", "reduce_sum", "--backend", E, "--size", "1e6"], 2, ["'1e6'", "not a whole number"]),
    ("size empty", ["run", "reduce_sum", "--backend", E, "--size", ""], 2, ["empty part", "n="]),
    ("size trailing comma", ["run", "sgemm", "--backend", E, "--size", "4,4,4,"], 2, ["empty part"]),
    ("size 0", ["run", "reduce_sum", "--backend", E, "--size", "n=0"], 2, ["n=0 is illegal", ">= 1"]),
    ("size negative", ["run", "reduce_sum", "--backend", E, "--size", "n=-3"], 2, ["n=-3 is illegal"]),
    ("size unknown dim", ["run", "reduce_sum", "--backend", E, "--size", "q=5"], 2, ["unknown size 'q'", "n"]),
    ("size too many", ["run", "sgemm", "--backend", E, "--size", "1x2x3x4"], 2, ["takes 3 sizes", "M, N, K"]),
    ("size beyond int", ["run", "sgemm", "--backend", E, "--size", "M=3000000000"], 2, ["M=3000000000", "1..16776960"]),
    # each op's own size limits, below 2^31-1 where its grid or its int indexes need it
    ("sgemm M past the grid", ["run", "sgemm", "--backend", E, "--size", "M=20000000"], 2,
     ["M=20000000", "1..16776960", "gridDim.y holds 65535 block rows"]),
    ("gemm M past the grid", ["run", "gemm", "--backend", E, "--size", "M=16776961"], 2, ["M=16776961", "16776960"]),
    ("sgemm K near 2^31", ["run", "sgemm", "--backend", E, "--size", "M=1,N=1,K=2147483600"], 2,
     ["K=2147483600", "1..2147483391", "whole K tiles"]),
    ("gemv N near 2^31", ["run", "gemv", "--backend", E, "--size", "M=1,N=2147483000"], 2,
     ["N=2147483000", "1..2147418111", "unroll*lanes*vec"]),
    ("gemv M near 2^31", ["run", "gemv", "--backend", E, "--size", "M=2147483000,N=1"], 2, ["M=2147483000", "2147482623"]),
    ("softmax cols near 2^31", ["run", "softmax", "--backend", E, "--size", "rows=1,cols=2147483000"], 2,
     ["cols=2147483000", "1..2147221503", "chunk of a row"]),
    ("layernorm cols near 2^31", ["run", "layernorm", "--backend", E, "--size", "rows=1,cols=2147400000"], 2,
     ["cols=2147400000", "2147221503"]),
    ("transpose M near 2^31", ["run", "transpose", "--backend", E, "--size", "M=2147483600,N=1"], 2,
     ["M=2147483600", "1..2147483583", "a tile (64)"]),
    ("elementwise N near 2^31", ["run", "elementwise", "--backend", E, "--size", "M=1,N=2147483645"], 2,
     ["N=2147483645", "1..2147483639"]),
    ("size 10^12", ["run", "reduce_sum", "--backend", E, "--size", "n=1000000000000"], 2, ["n=1000000000000", "2147483647"]),
    ("size types", ["run", "reduce_sum", "--backend", E, "--size", "n=5:f16"], 2, ["'f16'", "'f32'"]),
    ("size no name", ["run", "reduce_sum", "--backend", E, "--size", "=5"], 2, ["has no name"]),
    # -- operand layouts (GEMM-like ops) -----------------------------------------------------------
    ("layout not one of four", ["run", "sgemm", "--backend", E, "--layout", "NX"], 2,
     ["layout 'NX' is not one of NN, NT, TN, TT"]),
    ("layout lower-case unknown", ["emit", "gemm", "--layout", "tx"], 2, ["layout 'tx'", "NN, NT, TN, TT"]),
    ("layout empty", ["emit", "sgemm", "--layout", ""], 2, ["layout ''", "NN, NT, TN, TT"]),
    ("layout for an op without layouts", ["emit", "softmax", "--layout", "NT"], 2,
     ["softmax has no operand layouts", "'NT'", "NN, NT, TN, TT", "sgemm, gemm"]),
    ("layout NN for an op without layouts", ["run", "reduce_sum", "--backend", E, "--layout", "NN"], 2,
     ["reduce_sum has no operand layouts", "'NN'"]),
    ("layout in --size for an op without layouts", ["run", "softmax", "--backend", E, "--size", "rows=4,layout=NT"], 2,
     ["softmax has no operand layouts", "'NT'"]),
    ("layout in --size not one of four", ["run", "sgemm", "--backend", E, "--size", "M=4,N=4,K=4,layout=XY"], 2,
     ["layout 'XY'", "NN, NT, TN, TT"]),
    ("layout in --size disagrees", ["run", "sgemm", "--backend", E, "--size", "M=4,N=4,K=4,layout=TN", "--layout", "nt"],
     2, ["names layout TN but --layout gives 'nt'", "NN, NT, TN or TT"]),
    ("layout in --size twice", ["run", "sgemm", "--backend", E, "--size", "M=4,layout=NT,layout=NT"], 2,
     ["gives the layout twice", "NN, NT, TN, TT"]),
    ("inspect layout", ["inspect", "sgemm", "--layout", "TX"], 2, ["layout 'TX'", "NN, NT, TN, TT"]),
    ("bench layout", ["bench", "gemm", "--layout", "N"], 2, ["layout 'N'", "NN, NT, TN, TT"]),
    ("tune layout", ["tune", "sgemm", "--layout", "NNN"], 2, ["layout 'NNN'", "NN, NT, TN, TT"]),
    ("emit all with a layout", ["emit", "--all", "--layout", "NT", "-o", "{dir}/all2"], 2, ["--all", "--layout"]),
    ("cp.async of B stored transposed", ["emit", "sgemm", "--layout", "NT", "-k", "copy=cp_async", "-k", "stages=3",
                                         "-k", "vec_a=1"], 2,
     ["vectorize(B)", "4", "cp.async cannot transpose: B stored transposed (layout NT)", "allowed: 1"]),
    # conv2d's per-direction stride, padding and dilation, and their shorthands
    ("conv2d shorthand disagrees", ["run", "conv2d", "--backend", E, "--size", "stride=2,stride_w=1"], 2,
     ["stride=2 sets stride_h and stride_w", "stride_w=1 disagrees"]),
    ("conv2d shorthand twice", ["run", "conv2d", "--backend", E, "--size", "pad=1,pad=1"], 2, ["gives pad twice"]),
    ("conv2d stride_h 0", ["run", "conv2d", "--backend", E, "--size", "stride_h=0"], 2, ["stride_h=0 is illegal", ">= 1"]),
    ("conv2d dil 0", ["run", "conv2d", "--backend", E, "--size", "dil=0"], 2, ["dil=0 is illegal", ">= 1"]),
    ("conv2d pad_w negative", ["run", "conv2d", "--backend", E, "--size", "pad_w=-2"], 2, ["pad_w=-2 is illegal", ">= 0"]),
    ("conv2d empty height", ["run", "conv2d", "--backend", E, "--size", "H=5,R=3,dil_h=3,pad=0,stride=1"], 2,
     ["output height P", "= -1 for H=5, pad_h=0, dil_h=3, R=3, stride_h=1", "spans 7 rows"]),
    ("conv2d empty width", ["run", "conv2d", "--backend", E, "--size", "W=4,S=5,stride_w=2,pad_w=0"], 2,
     ["output width Q", "= 0 for W=4, pad_w=0, dil_w=1, S=5, stride_w=2"]),
    ("conv2d unknown size", ["run", "conv2d", "--backend", E, "--size", "dilation=2"], 2,
     ["unknown size 'dilation'", "dil_h, dil_w (shorthands: stride, pad, dil)"]),
    # -- paths -------------------------------------------------------------------------------------
    ("emit onto a file", ["emit", "reduce_sum", "-o", "{a_file}"], 2, ["is a file, not a folder"]),
    ("emit under a file", ["emit", "reduce_sum", "-o", "{a_file}/sub"], 2, ["is a file, not a folder"]),
    ("emit unwritable", ["emit", "reduce_sum", "-o", "/proc/kernelgen-out"], 2, ["not writable", "/proc"]),
    ("emit all onto a file", ["emit", "--all", "-o", "{a_file}"], 2, ["is a file, not a folder"]),
    ("emit all unwritable", ["emit", "--all", "-o", "/proc/kernelgen-out"], 2, ["not writable"]),
    ("run --emit onto a file", ["run", "reduce_sum", "--backend", E, "--emit", "{a_file}"], 2, ["--emit", "is a file"]),
    ("db directory", ["emit", "reduce_sum", "--best", "--db", "{db_dir}"], 2, ["is a directory"]),
    ("db invalid utf-8", ["emit", "reduce_sum", "--best", "--db", "{db_utf8}"], 2, ["line 1", "not UTF-8"]),
    ("db time_us a string", ["emit", "reduce_sum", "--best", "--db", "{db_time_str}"], 2, ["line 1", "time_us is str"]),
    ("db bad status", ["emit", "reduce_sum", "--best", "--db", "{db_status}"], 2, ["status 'great'", "ok"]),
    ("db missing field", ["emit", "reduce_sum", "--best", "--db", "{db_missing}"], 2, ["field 'op' is missing"]),
    ("db garbage line", ["emit", "reduce_sum", "--best", "--db", "{db_garbage}"], 2, ["line 1", "not a JSON record"]),
    ("db array line", ["emit", "reduce_sum", "--best", "--db", "{db_array}"], 2, ["line 1", "not a record"]),
    ("db empty", ["emit", "reduce_sum", "--best", "--db", "{db_empty}"], 2, ["no successful tuning record"]),
    ("tune db directory", ["tune", "reduce_sum", "--db", "{db_dir}"], 2, ["is a directory"]),
    ("bench db directory", ["bench", "reduce_sum", "--best", "--db", "{db_dir}"], 2, ["is a directory"]),
    # -- schedule files ----------------------------------------------------------------------------
    ("schedule missing", ["emit", "sgemm", "--schedule", "missing.json"], 2, ["does not exist"]),
    ("schedule a folder", ["emit", "sgemm", "--schedule", "{dir}"], 2, ["is a directory"]),
    ("factor a string", ["emit", "sgemm", "--schedule", "{factor_str}"], 2, ["split(factors)", "'256'", "not a str"]),
    ("factor null", ["emit", "sgemm", "--schedule", "{factor_null}"], 2, ["split(factors)", "not null"]),
    ("factor 256.0", ["emit", "sgemm", "--schedule", "{factor_float}"], 2, ["split(factors)", "256.0", "not a float"]),
    ("factor true", ["emit", "sgemm", "--schedule", "{factor_bool}"], 2, ["split(factors)", "not a bool"]),
    ("factors not a list", ["emit", "sgemm", "--schedule", "{factors_not_list}"], 2, ["factors must be a list"]),
    ("steps not a list", ["emit", "sgemm", "--schedule", "{steps_not_list}"], 2, ["steps must be a list", "object"]),
    ("step not an object", ["emit", "sgemm", "--schedule", "{step_not_object}"], 2, ["step 1", "a step is an object"]),
    ("not JSON", ["emit", "sgemm", "--schedule", "{not_json}"], 2, ["not JSON", "line 1"]),
    ("JSON array", ["emit", "sgemm", "--schedule", "{json_array}"], 2, ["a schedule is an object", "list"]),
    ("unknown primitive", ["emit", "sgemm", "--schedule", "{unknown_prim}"], 2, ["'tile_it'", "unknown primitive", "split"]),
    ("missing prim", ["emit", "sgemm", "--schedule", "{missing_prim}"], 2, ["prim", "missing"]),
    ("unknown key", ["emit", "sgemm", "--schedule", "{unknown_key}"], 2, ["bind has no field 'colour'", "loop, axis"]),
    ("step without loop", ["emit", "sgemm", "--schedule", "{missing_loop}"], 2, ["bind needs field 'loop'"]),
    ("unknown loop", ["emit", "sgemm", "--schedule", "{unknown_loop}"], 2, ["loop 'q.1' does not exist", "loops i, j, k"]),
    ("bind before split", ["emit", "sgemm", "--schedule", "{bind_before_split}"], 2,
     ["loop 'i.0' before step 2", 'split("i", 128, 8)']),
    ("loop past split", ["emit", "sgemm", "--schedule", "{loop_past_split}"], 2,
     ["loop 'i.5' does not exist", "i.0, i.1, i.2"]),
    ("unknown buffer", ["emit", "sgemm", "--schedule", "{unknown_buffer}"], 2, ["buffer 'Z' does not exist", "A, B, C"]),
    ("split a split loop", ["emit", "sgemm", "--schedule", "{split_dotted}"], 2, ["split(i.0)", "does not exist"]),
    ("split with no factors", ["emit", "sgemm", "--schedule", "{split_no_factors}"], 2, ["at least one factor"]),
    ("schedule of another op", ["emit", "sgemm", "--schedule", "{other_op}"], 2, ["'softmax'", "not of 'sgemm'"]),
    ("op not a string", ["emit", "sgemm", "--schedule", "{op_not_str}"], 2, ["op must be", "not an int"]),
    ("unknown top-level key", ["emit", "sgemm", "--schedule", "{top_key}"], 2, ["unknown field 'extra'"]),
    ("NaN", ["emit", "sgemm", "--schedule", "{nan}"], 2, ["NaN is not JSON"]),
    ("axis an int", ["emit", "sgemm", "--schedule", "{axis_int}"], 2, ["bind(axis)", "must be a str"]),
    ("schedule not UTF-8", ["emit", "sgemm", "--schedule", "{bad_utf8}"], 2, ["not UTF-8"]),
    (".py that raises", ["emit", "sgemm", "--schedule", "{py_raises}"], 2, ["raised ZeroDivisionError", "line 1"]),
    (".py that exits", ["emit", "sgemm", "--schedule", "{py_exits}"], 2, ["raised SystemExit"]),
    (".py with a syntax error", ["emit", "sgemm", "--schedule", "{py_syntax}"], 2, ["raised SyntaxError"]),
    (".py without the variable", ["emit", "sgemm", "--schedule", "{py_no_var}:mine"], 2, ["no Schedule named 'mine'"]),
    # -- the Python API ----------------------------------------------------------------------------
    ("problem str", lambda f: _sgemm().problem({"M": "5"}), 2, ["M='5' is a str", "sizes are integers"]),
    ("problem bool", lambda f: _sgemm().problem({"M": True}), 2, ["M=True is a bool", "sizes are integers"]),
    ("problem float", lambda f: _sgemm().problem({"M": 5.0}), 2, ["M=5.0 is a float"]),
    ("problem huge", lambda f: _sgemm().problem({"M": 2 ** 31}), 2, ["M=2147483648", "1..16776960"]),
    ("conv2d x past int", lambda f: get_op("conv2d").problem(dict(N=1, C=1, H=65536, W=32768, K=1, R=1, S=1, stride=1,
                                                                  pad=0)), 2,
     ["x has 2147483648 elements", "at most 2147482623"]),
    ("sgemm M past this bm's grid", lambda f: _plan("sgemm", dict(bm=128, bn=128, tm=8, tn=8, wm=64, wn=32),
                                                    {"M": 10 ** 7}), 2,
     ["M=10000000", "78125 block rows of 128", "65535", "M <= 8388480 with bm=128"]),
    ("sgemm swizzled blocks past int", lambda f: _plan("sgemm", dict(layout="contiguous", wm=0, wn=0, bm=16, bn=16, tm=1,
                                                                     tn=1, vec_a=1, vec_b=1, vec_c=1),
                                                       {"M": 10 ** 6, "N": 2 ** 31 - 300}), 2,
     ["8388606875000 blocks", "at most 2147483647", "swizzle 1"]),
    ("transpose tiles past int", lambda f: _plan("transpose", dict(tile=16, rows=4, vec=1), {"M": 2 ** 31 - 100, "N": 2 ** 20}),
     2, ["tiles of 16x16", "at most 2147483647"]),
    ("gemv grid stride past int", lambda f: _plan("gemv", dict(grid_stride=16), {"M": 2 ** 31 - 1100, "N": 4}), 2,
     ["annotate(grid_stride)", "M=2147482548", "M <= 2147481536"]),
    ("problem unknown dim", lambda f: _sgemm().problem({"Q": 1}), 2, ["unknown size 'Q'", "M, N, K"]),
    ("problem dtype", lambda f: _sgemm().problem(dtype="float64"), 2, ["dtype 'float64' is unknown"]),
    ("problem layout", lambda f: _sgemm().problem(layout="NQ"), 2, ["layout 'NQ' is not one of NN, NT, TN, TT"]),
    ("problem layout not a str", lambda f: get_op("gemm").problem(layout=5), 2, ["layout 5", "NN, NT, TN, TT"]),
    ("kernel layout for softmax", lambda f: get_op("softmax").kernel(get_op("softmax").default_schedule(), layout="TT"),
     2, ["softmax has no operand layouts", "'TT'", "NN, NT, TN, TT"]),
    ("plan of another layout", lambda f: _sgemm().plan(_sgemm().kernel(_sgemm().default_schedule(), layout="TN"),
                                                       _sgemm().problem({"M": 8, "N": 8, "K": 8})), 2,
     ["built for layout TN", "M=8,N=8,K=8 is NN"]),
    ("gemm K in slices of a batched product", lambda f: _batched_gemm().kernel(_batched_gemm().schedule(split_k=2)), 2,
     ["annotate(split_k): 2 is illegal", "batched product runs its products on blockIdx.z", "allowed: 1"]),
    ("schedule knob value", lambda f: _sgemm().schedule(bm=1000000), 2, ["bm=1000000", "choices"]),
    ("schedule knob choice", lambda f: _sgemm().schedule(layout="banana"), 2, ["layout='banana'", "warp"]),
    ("schedule knob str for int", lambda f: _sgemm().schedule(bm="64"), 2, ["bm='64' is a str", "an integer"]),
    ("schedule knob int for bool", lambda f: _sgemm().schedule(shared=1), 2, ["shared=1 is a int", "true or false"]),
    ("schedule knob float", lambda f: _sgemm().schedule(bm=64.0), 2, ["bm=64.0 is a float"]),
    ("schedule unknown knob", lambda f: _sgemm().schedule(nope=1), 2, ["unknown knob 'nope'"]),
    ("schedule off-choice number", lambda f: get_op("gemv").schedule(threads=96), 2,
     ["gemv: knob threads=96", "not one of its choices", "32, 64"]),
    ("schedule numpy off-choice", lambda f: get_op("elementwise").schedule(threads=__import__("numpy").int64(96)), 2,
     ["threads=", "96", "not one of its choices"]),
    ("schedule range", lambda f: get_op("gemv").schedule(unroll=17), 2, ["unroll=17", "an integer in 1..16"]),
    ("schedule_from_knobs unknown", lambda f: _sgemm().schedule_from_knobs(nope=1), 2, ["unknown knob 'nope'"]),
    ("kernel off-choice read back", _kernel(_sgemm().schedule_from_knobs(bm=96, layout="contiguous", tm=8, tn=8, wm=0, wn=0)), 2,
     ["split(i)", "96", "knob bm of sgemm", "16, 24, 32, 40, 48, 56, 64, 128, 256"]),
    ("builder float factor", lambda f: schedule("sgemm").split("i", 256.0), 2, ["split(factors)", "not a float"]),
    ("builder bool factor", lambda f: schedule("sgemm").split("i", True), 2, ["split(factors)", "not a bool"]),
    ("builder axis int", lambda f: schedule("sgemm").bind("i.0", 5), 2, ["bind(axis)", "not an int"]),
    ("builder width str", lambda f: schedule("sgemm").vectorize("A", "4"), 2, ["vectorize(width)", "not a str"]),
    ("schedule op int", lambda f: schedule(5), 2, ["op must be"]),
    ("from_dict list", lambda f: Schedule.from_dict([]), 2, ["a schedule is an object"]),
    ("from_json float", lambda f: Schedule.from_json(_step(prim="split", loop="i", factors=[256.0])), 2, ["not a float"]),
    ("kernel unknown loop", _kernel(schedule("sgemm").split("i", 128, 8).bind("q.1", "threadIdx.x")), 2,
     ["loop 'q.1' does not exist"]),
    ("kernel vectorize before split", _kernel(schedule("sgemm").vectorize("i.3", 4).split("i", 128, 64, 4)), 2,
     ["loop 'i.3' before step 2"]),
    ("get_op", lambda f: get_op("nope"), 2, ["unknown op 'nope'"]),
    ("target", lambda f: __import__("kernelgen.target").target.target("sm_12"), 2, ["'sm_12' is not a target"]),
    ("dtype API", lambda f: __import__("kernelgen.dtypes").dtypes.dtype("float64"), 2, ["'float64' is unknown"]),
    ("validate arch", lambda f: _validate(arch="banana"), 2, ["'banana' is not a target"]),
    ("validate backend", lambda f: _validate(backend="cuda"), 2, ["backend 'cuda' is unknown", "gpu, emulate"]),
    ("validate seed", lambda f: _validate(seed=-1), 2, ["seed=-1", "0..2^63-1"]),
    ("validate option", lambda f: _validate(chek=True), 2, ["option 'chek'", "check, order, seed"]),
    ("validate order", lambda f: _validate(order="sideways"), 2, ["order 'sideways'", "forward"]),
    ("validate memory", _memory, 2, ["needs about", "host memory", "limit", "KERNELGEN_MAX_HOST_BYTES"]),
    ("db records directory", _db("db_dir"), 2, ["is a directory"]),
    ("db records utf-8", _db("db_utf8"), 2, ["not UTF-8"]),
    ("db records time_us", _db("db_time_str"), 2, ["time_us is str"]),
]


def _args(what, files):
    return [a.format(**files) for a in what]


def _one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{text}"
    return lines[0]


def test_there_are_enough_cases():
    assert len(CASES) >= 80
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("name, what, code, words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line(name, what, code, words, files, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KERNELGEN_NO_GPU", "1")
    monkeypatch.setenv("KERNELGEN_TUNING_DB", str(tmp_path / "default_db.jsonl"))
    if callable(what):
        with pytest.raises(KernelgenError) as info:
            what(files)
        assert info.value.exit_code == code
        line = _one_line(str(info.value))
    else:
        r = CliRunner().invoke(main, _args(what, files))
        assert "Traceback" not in r.output, r.output
        assert r.exit_code == code, r.output
        line = _one_line(r.output)
        assert line.startswith("error: ")
    for w in words:
        assert w in line, f"{w!r} not in {line!r}"
    assert not list(tmp_path.glob("**/*.cu")), "a failing command wrote files"


def test_gpu_only_commands_do_not_suggest_an_option_they_lack(monkeypatch):
    monkeypatch.setenv("KERNELGEN_NO_GPU", "1")
    for args in (["tune", "reduce_sum"], ["bench", "reduce_sum"]):
        r = CliRunner().invoke(main, args)
        line = _one_line(r.output)
        assert r.exit_code == 2 and "no CUDA GPU" in line and "`kernelgen tune` and `bench` need one" in line


def test_an_internal_bug_keeps_its_traceback_and_says_so(monkeypatch):
    import kernelgen.ops.base as base
    monkeypatch.setattr(base.Op, "default_knobs", lambda self: 1 / 0)
    r = CliRunner().invoke(main, ["emit", "reduce_sum", "-o", "unused"])
    assert r.exit_code == 3
    assert "Traceback" in r.output and "ZeroDivisionError" in r.output
    assert "this is a bug" in r.output.splitlines()[-1] and "report it" in r.output.splitlines()[-1]


def test_emit_all_writes_everything_or_nothing(tmp_path, monkeypatch):
    import kernelgen.emit as emit
    real, calls = emit.tempfile.mkstemp, []

    def failing(*a, **k):
        calls.append(1)
        if len(calls) == 38:      # the disk fills up part-way
            raise OSError(28, "No space left on device", k.get("dir"))
        return real(*a, **k)

    monkeypatch.setattr(emit.tempfile, "mkstemp", failing)
    r = CliRunner().invoke(main, ["emit", "--all", "-o", str(tmp_path / "gen")])
    assert r.exit_code == 2 and "No space left on device" in _one_line(r.output)
    assert not (tmp_path / "gen").exists(), "a failed emit --all left files or folders behind"


def test_emit_all_fails_before_writing_when_a_file_is_in_the_way(tmp_path):
    gen = tmp_path / "gen"
    blocker = gen / "sgemm" / "sm_90"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where a folder must go")
    r = CliRunner().invoke(main, ["emit", "--all", "-o", str(gen)])
    assert r.exit_code == 2, r.output
    _one_line(r.output)
    assert [p for p in gen.rglob("*") if p.is_file()] == [blocker]


def test_a_torn_line_stays_torn_and_later_records_are_read(tmp_path):
    from kernelgen.tune.db import Record, TuningDB
    db = TuningDB(tmp_path / "t.jsonl")
    db.append(Record.make("reduce_sum", "n=1", "sm_90", "g", {"op": "reduce_sum"}, {}, "ok", 2.0))
    with open(db.path, "a") as f:
        f.write('{"op": "reduce_sum", "probl')    # a crash mid-write
    db.append(Record.make("reduce_sum", "n=1", "sm_90", "g", {"op": "reduce_sum"}, {}, "ok", 1.0))
    assert [r.time_us for r in db.records()] == [2.0, 1.0]


@pytest.mark.emulate
def test_ctrl_c_stops_an_emulator_run_within_a_second_and_cleans_up(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(ROOT), KERNELGEN_NO_GPU="1")
    # SIGINT as an interactive shell leaves it: a background job of a non-interactive shell (a CI script
    # run with `&`) inherits it ignored, and Python then keeps ignoring it.
    p = subprocess.Popen([sys.executable, "-m", "kernelgen.cli", "run", "sgemm", "--backend", "emulate",
                          "--size", "1536x1536x1536"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for line in p.stdout:               # wait until the work has started
            if line.startswith("problem"):
                break
        time.sleep(1.5)                     # inside NVRTC, g++ or the emulator by now
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, (p.returncode, err)
    assert took < 1.5, f"took {took:.2f} s to stop"
    assert "Traceback" not in err and "interrupted" in err
    assert not list(tmp_path.glob("kg-emulate-*"))


# Ctrl-C while the command loads: a real SIGINT, sent while `import click` (the first thing kernelgen/cli.py
# imports) is held for 30 s by an import hook, so the signal surely lands inside the command's imports.
_SLOW_IMPORTS = """
import builtins, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)     # as Python sets it, even under a shell that ignores it
real = builtins.__import__
def slow(name, *args, **kwargs):
    if name == "click":
        sys.stderr.write("loading\\n"); sys.stderr.flush(); time.sleep(30)
    return real(name, *args, **kwargs)
builtins.__import__ = slow
sys.argv = ["kernelgen", "list"]
from kernelgen.__main__ import main
main()
"""


def test_ctrl_c_while_the_command_loads_exits_130_with_one_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), KERNELGEN_NO_GPU="1")
    p = subprocess.Popen([sys.executable, "-c", _SLOW_IMPORTS], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stderr.readline() == "loading\n"
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, (p.returncode, err)
    assert took < 1.5 and out == ""
    assert _one_line(err) == "error: interrupted (Ctrl-C)"


def test_ctrl_c_while_arguments_are_parsed_exits_130_not_aborted(monkeypatch):
    import click

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(click.Group, "parse_args", interrupted)
    r = CliRunner().invoke(main, ["list"])
    assert r.exit_code == 130 and "Traceback" not in r.output and "Aborted" not in r.output
    assert _one_line(r.output) == "error: interrupted (Ctrl-C)"


def test_the_console_entry_point_is_the_interrupt_safe_one():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'kernelgen = "kernelgen.__main__:main"' in text


@pytest.mark.emulate
def test_readme_states_what_run_prints_without_a_gpu(monkeypatch):
    """The sizes the README names for `kernelgen run sgemm` are what the command runs."""
    readme = (ROOT / "README.md").read_text()
    op = get_op("sgemm")
    gpu_size = "×".join(str(d.default) for d in op.dims)
    small = "×".join(str(d.small) for d in op.dims)
    assert f"benchmark size ({gpu_size})" in readme and f"size ({small})" in readme
    assert "g++" in readme and "sm_70" in readme and "n/a" in readme
    monkeypatch.setenv("KERNELGEN_NO_GPU", "1")
    r = CliRunner().invoke(main, ["run", "sgemm", "--backend", "emulate", "--seed", "1"])
    assert r.exit_code == 0, r.output
    assert f"problem  {','.join(f'{d.name}={d.small}' for d in op.dims)}" in r.output
    assert "validate ok" in r.output and "max absolute error" in r.output    # the tolerance says what it bounds


def test_readme_no_gpu_commands_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KERNELGEN_NO_GPU", "1")
    for args in (["list"], ["list", "sgemm"], ["emit", "sgemm", "-k", "bm=64", "-k", "bn=128", "-o", "out/"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, (args, r.output)
